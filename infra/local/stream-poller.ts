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

/** Everything one running poller knows: its clients, the stream, and where each shard is. */
interface Poller {
  options: StreamPollerOptions;
  streams: DynamoDBStreamsClient;
  streamArn: string;
  handler: StreamHandler;
  checkpoints: Record<string, string>;
  iterators: Map<string, string>;
  closed: Set<string>;
  attempts: Map<string, number>;
  msSinceDiscovery: number;
  stopped: boolean;
  busy: boolean;
  caughtUpAt: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readCheckpoints(file: string | undefined): Promise<Record<string, string>> {
  if (!file) return {};
  return readFile(file, 'utf8').then(
    (t) => JSON.parse(t) as Record<string, string>,
    () => ({}),
  );
}

async function streamArnOf(table: DynamoDBClient, tableName: string): Promise<string> {
  const describe = await table.send(new DescribeTableCommand({ TableName: tableName }));
  const streamArn = describe.Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${tableName} has no stream`);
  return streamArn;
}

/** An iterator at `at`, else just after `after`, else at the shard's oldest record. */
async function iteratorFor(poller: Poller, shardId: string, after?: string, at?: string): Promise<string> {
  const out = await poller.streams.send(
    new GetShardIteratorCommand({
      StreamArn: poller.streamArn,
      ShardId: shardId,
      ...(at
        ? { ShardIteratorType: 'AT_SEQUENCE_NUMBER', SequenceNumber: at }
        : after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
    }),
  );
  return out.ShardIterator!;
}

async function discoverShards(poller: Poller): Promise<void> {
  let ExclusiveStartShardId: string | undefined;
  do {
    const out = await poller.streams.send(
      new DescribeStreamCommand({ StreamArn: poller.streamArn, ExclusiveStartShardId }),
    );
    for (const shard of out.StreamDescription?.Shards ?? []) {
      const id = shard.ShardId!;
      if (!poller.iterators.has(id) && !poller.closed.has(id))
        poller.iterators.set(id, await iteratorFor(poller, id, poller.checkpoints[id]));
    }
    ExclusiveStartShardId = out.StreamDescription?.LastEvaluatedShardId;
  } while (ExclusiveStartShardId);
}

const sequenceOf = (record: DynamoDBRecord) => record.dynamodb!.SequenceNumber!;

/** Runs the handler once; names the first record that failed (and why), if any did. */
async function invokeHandler(poller: Poller, records: DynamoDBRecord[]): Promise<{ failedAt?: string; error: string }> {
  try {
    const response = await invokeWithTimeout('ingest_events', INGEST_TIMEOUT_MS, (context) =>
      poller.handler({ Records: records }, context),
    );
    const failures = response?.batchItemFailures || [];
    if (!failures.length) return { error: '' };
    const seqs = failures.map((f) => f.itemIdentifier);
    const failedAt = records.map(sequenceOf).find((s) => seqs.includes(s)) ?? sequenceOf(records[0]!);
    return { failedAt, error: 'reported batch item failures' };
  } catch (e) {
    return { failedAt: sequenceOf(records[0]!), error: (e as Error).message };
  }
}

/** Hands records to the handler as Lambda would; returns the sequence to resume at, if any failed. */
async function deliver(poller: Poller, records: DynamoDBRecord[]): Promise<string | undefined> {
  const { failedAt, error } = await invokeHandler(poller, records);
  if (!failedAt) return undefined;
  const n = (poller.attempts.get(failedAt) ?? 0) + 1;
  poller.attempts.set(failedAt, n);
  if (n < (poller.options.maxAttempts ?? 10)) {
    await sleep(Math.min(2_000, 50 * 2 ** n));
    return failedAt;
  }
  const from = records.findIndex((r) => sequenceOf(r) === failedAt);
  poller.options.onGiveUp?.(records.slice(from, from + 1), error);
  console.error(`stream poller: giving up on record ${failedAt} after ${n} attempts: ${error}`);
  return undefined;
}

async function saveCheckpoint(poller: Poller, shardId: string, sequence: string): Promise<void> {
  poller.checkpoints[shardId] = sequence;
  const file = poller.options.checkpointFile;
  if (file) await writeFile(file, JSON.stringify(poller.checkpoints));
}

/** Reads and delivers one batch from a shard; false when the shard had nothing new. */
async function pollShard(poller: Poller, shardId: string, iterator: string): Promise<boolean> {
  const out = await poller.streams.send(
    new GetRecordsCommand({ ShardIterator: iterator, Limit: poller.options.batchSize ?? 500 }),
  );
  const all = (out.Records ?? []).map((r) => toLambdaRecord(r, poller.streamArn));
  if (!out.NextShardIterator) {
    poller.iterators.delete(shardId);
    poller.closed.add(shardId);
  } else {
    poller.iterators.set(shardId, out.NextShardIterator);
  }
  if (!all.length) return false;
  const wanted = all.filter(isRawEventRecord);
  const resumeAt = wanted.length ? await deliver(poller, wanted) : undefined;
  if (resumeAt) {
    poller.iterators.set(shardId, await iteratorFor(poller, shardId, undefined, resumeAt));
    poller.closed.delete(shardId);
    return true;
  }
  await saveCheckpoint(poller, shardId, sequenceOf(all.at(-1)!));
  return true;
}

/** One pass over every shard (rediscovering shards once a second); true when any had records. */
async function pollOnce(poller: Poller): Promise<boolean> {
  let progressed = false;
  try {
    if (poller.msSinceDiscovery > 1_000 || poller.iterators.size === 0) {
      await discoverShards(poller);
      poller.msSinceDiscovery = 0;
    }
    for (const [shardId, iterator] of [...poller.iterators])
      progressed = (await pollShard(poller, shardId, iterator)) || progressed;
  } catch (error) {
    if (!poller.stopped) console.error('stream poller:', (error as Error).message);
  }
  return progressed;
}

async function runUntilStopped(poller: Poller): Promise<void> {
  const idleMs = poller.options.idleMs ?? 25;
  while (!poller.stopped) {
    poller.busy = true;
    const passStartedAt = Date.now();
    const progressed = await pollOnce(poller);
    poller.busy = false;
    if (!progressed) {
      poller.caughtUpAt = passStartedAt;
      await sleep(idleMs);
      poller.msSinceDiscovery += idleMs;
    }
  }
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
  const poller: Poller = {
    options,
    streams,
    streamArn: await streamArnOf(table, options.tableName),
    handler: await options.loadHandler(),
    checkpoints: await readCheckpoints(options.checkpointFile),
    iterators: new Map(),
    closed: new Set(),
    attempts: new Map(),
    msSinceDiscovery: Infinity,
    stopped: false,
    busy: false,
    caughtUpAt: 0,
  };
  const loop = runUntilStopped(poller);
  return {
    stop: async () => {
      poller.stopped = true;
      await loop;
      table.destroy();
      streams.destroy();
    },
    drained: async () => {
      // A pass that found nothing and began after this call (plus the stream's few ms of visibility lag).
      const requested = Date.now() + 5;
      while (!(poller.caughtUpAt > requested && !poller.busy)) await sleep(10);
    },
  };
}
