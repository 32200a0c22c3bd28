import { readFile, writeFile } from 'node:fs/promises';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { isRawEventRecord } from '#shared/db/stream.ts';
import { workers } from '#functions/routes.ts';
import { invokeWithTimeout } from './lambda-context.ts';

const INGEST_TIMEOUT_MS = workers.find((w) => w.name === 'ingest_events')!.timeoutSeconds * 1000;

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamPollerOptions {
  tableName: string;
  endpoint: string;
  loadHandler: () => Promise<StreamHandler>;
  /** Where to keep each shard's last processed sequence number across restarts (npm start). */
  checkpointFile?: string;
  batchSize?: number;
  idleMs?: number;
  /** Attempts at one record before it is given up on (Lambda: maximumRetryAttempts, then the DLQ). */
  maxAttempts?: number;
  onGiveUp?: (records: DynamoDBRecord[], error: string) => void;
}

export interface StreamPoller {
  stop(): Promise<void>;
  /** Resolves once every record written so far has been handed to the handler successfully. */
  drained(): Promise<void>;
}

/** SDK stream records -> the JSON Lambda delivers (dates as epoch seconds, binaries base64). */
function toLambdaRecord(record: StreamRecord, streamArn: string): DynamoDBRecord {
  const json = JSON.parse(
    JSON.stringify(record, (_key, value: unknown) =>
      value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
    ),
    (key, value: unknown) =>
      key === 'ApproximateCreationDateTime' && typeof value === 'string' ? Math.floor(Date.parse(value) / 1000) : value,
  ) as DynamoDBRecord;
  return { ...json, eventSourceARN: streamArn };
}

/** What Lambda's event source mapping does for the ingest worker, against DynamoDB Local's stream. */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const config = {
    endpoint: options.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  const table = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const describe = await table.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = describe.Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${options.tableName} has no stream`);
  const handler = await options.loadHandler();
  const batchSize = options.batchSize ?? 500;
  const idleMs = options.idleMs ?? 25;
  const maxAttempts = options.maxAttempts ?? 10;

  const checkpoints: Record<string, string> = options.checkpointFile
    ? await readFile(options.checkpointFile, 'utf8').then(
        (t) => JSON.parse(t) as Record<string, string>,
        () => ({}),
      )
    : {};
  const iterators = new Map<string, string>();
  const closed = new Set<string>();
  let stopped = false;
  let busy = false;
  let caughtUpAt = 0;

  const iteratorFor = async (shardId: string, after?: string, at?: string) => {
    const out = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ...(at
          ? { ShardIteratorType: 'AT_SEQUENCE_NUMBER', SequenceNumber: at }
          : after
            ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
            : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return out.ShardIterator!;
  };

  const discoverShards = async () => {
    let ExclusiveStartShardId: string | undefined;
    do {
      const out = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId }));
      for (const shard of out.StreamDescription?.Shards ?? []) {
        const id = shard.ShardId!;
        if (!iterators.has(id) && !closed.has(id)) iterators.set(id, await iteratorFor(id, checkpoints[id]));
      }
      ExclusiveStartShardId = out.StreamDescription?.LastEvaluatedShardId;
    } while (ExclusiveStartShardId);
  };

  const attempts = new Map<string, number>();

  /** Hands records to the handler as Lambda would; returns the sequence to resume at, if any failed. */
  const deliver = async (records: DynamoDBRecord[]): Promise<string | undefined> => {
    let error = '';
    let failedAt: string | undefined;
    try {
      const response = await invokeWithTimeout('ingest_events', INGEST_TIMEOUT_MS, (context) =>
        handler({ Records: records }, context),
      );
      const failures = response?.batchItemFailures || [];
      if (failures.length) {
        const seqs = failures.map((f) => f.itemIdentifier);
        failedAt =
          records.map((r) => r.dynamodb!.SequenceNumber!).find((s) => seqs.includes(s)) ??
          records[0]!.dynamodb!.SequenceNumber!;
        error = 'reported batch item failures';
      }
    } catch (e) {
      failedAt = records[0]!.dynamodb!.SequenceNumber!;
      error = (e as Error).message;
    }
    if (!failedAt) return undefined;
    const n = (attempts.get(failedAt) ?? 0) + 1;
    attempts.set(failedAt, n);
    if (n < maxAttempts) {
      await new Promise((r) => setTimeout(r, Math.min(2_000, 50 * 2 ** n)));
      return failedAt;
    }
    const from = records.findIndex((r) => r.dynamodb!.SequenceNumber === failedAt);
    options.onGiveUp?.(records.slice(from, from + 1), error);
    console.error(`stream poller: giving up on record ${failedAt} after ${n} attempts: ${error}`);
    return undefined;
  };

  const pollShard = async (shardId: string, iterator: string): Promise<boolean> => {
    const out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: batchSize }));
    const all = (out.Records ?? []).map((r) => toLambdaRecord(r, streamArn));
    if (!out.NextShardIterator) {
      iterators.delete(shardId);
      closed.add(shardId);
    } else {
      iterators.set(shardId, out.NextShardIterator);
    }
    if (!all.length) return false;
    const wanted = all.filter(isRawEventRecord);
    if (wanted.length) {
      const resumeAt = await deliver(wanted);
      if (resumeAt) {
        iterators.set(shardId, await iteratorFor(shardId, undefined, resumeAt));
        closed.delete(shardId);
        return true;
      }
    }
    checkpoints[shardId] = all.at(-1)!.dynamodb!.SequenceNumber!;
    if (options.checkpointFile) await writeFile(options.checkpointFile, JSON.stringify(checkpoints));
    return true;
  };

  const loop = (async () => {
    let sinceDiscovery = Infinity;
    while (!stopped) {
      busy = true;
      const passStartedAt = Date.now();
      let progressed = false;
      try {
        if (sinceDiscovery > 1_000 || iterators.size === 0) {
          await discoverShards();
          sinceDiscovery = 0;
        }
        for (const [shardId, iterator] of [...iterators])
          progressed = (await pollShard(shardId, iterator)) || progressed;
      } catch (error) {
        if (!stopped) console.error('stream poller:', (error as Error).message);
      }
      busy = false;
      if (!progressed) {
        caughtUpAt = passStartedAt;
        await new Promise((r) => setTimeout(r, idleMs));
        sinceDiscovery += idleMs;
      }
    }
  })();

  return {
    stop: async () => {
      stopped = true;
      await loop;
      table.destroy();
      streams.destroy();
    },
    drained: async () => {
      // A pass that found nothing and began after this call (plus the stream's few ms of visibility lag).
      const requested = Date.now() + 5;
      while (!(caughtUpAt > requested && !busy)) await new Promise((r) => setTimeout(r, 10));
    },
  };
}
