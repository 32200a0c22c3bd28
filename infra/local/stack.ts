import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { configureLocalEnv } from './env.ts';
import { startApiServer, type ApiServer } from './http-server.ts';
import { startS3, startSqs, type StandIn } from './stand-ins.ts';
import { startStreamPoller, type StreamPoller } from './stream-poller.ts';
import { ensureQueues } from './queues.ts';
import { startQueuePollers, startScheduler } from './workers.ts';
import type { QueueName } from '#shared/queue-settings.ts';
import { ensureTable } from './table.ts';

export const LOCAL_TABLE_NAME = 'analytics-local';

export interface LocalStack {
  api: ApiServer;
  dynamodb: DynamoDbLocal;
  sqs: StandIn;
  s3: StandIn;
  streamPoller: StreamPoller;
  queues: Record<QueueName, string>;
  tableName: string;
  stop(): Promise<void>;
}

/**
 * The whole service on embedded stand-ins: DynamoDB Local (persisted under dataDir, or in memory),
 * local SQS and S3, and the HTTP server that runs the route table's handlers.
 */
export async function startLocalStack(options: {
  dataDir?: string;
  port?: number;
  tableName?: string;
  /** Fire the scheduled workers (compaction, export runs, ...) on their schedules; off for benchmarks that run them by hand. */
  scheduler?: boolean;
  /**
   * Something between the handlers and a stand-in (the capture benchmark's request meter): given the
   * stand-in's endpoint, the one handlers call instead. The stream and queue pollers (Lambda's side)
   * keep the stand-in's own.
   */
  front?: (standIn: 'dynamodb' | 'sqs' | 's3', endpoint: string) => string;
}): Promise<LocalStack> {
  const tableName = options.tableName ?? LOCAL_TABLE_NAME;
  const dynamodb = await startDynamoDbLocal({ dataDir: options.dataDir && join(options.dataDir, 'dynamodb') });
  const started: { stop(): Promise<void> }[] = [dynamodb];
  try {
    const sqs = await startSqs();
    started.push(sqs);
    const s3 = await startS3(join(options.dataDir ?? join(process.cwd(), '.data', 'tmp'), 's3'));
    started.push(s3);
    const queues = await ensureQueues(sqs.endpoint);
    const front = options.front ?? ((_: string, endpoint: string) => endpoint);
    // A queue URL names its host: senders whose SDK sends to the URL reach the front too.
    const frontQueues = Object.fromEntries(
      Object.entries(queues).map(([name, url]) => [name, url.replace(sqs.endpoint, front('sqs', sqs.endpoint))]),
    );
    configureLocalEnv({
      tableName,
      dynamodb: front('dynamodb', dynamodb.endpoint),
      sqs: front('sqs', sqs.endpoint),
      s3: front('s3', s3.endpoint),
      exportLoopbackOrigins: [s3.endpoint],
      queues: frontQueues,
      dataDir: options.dataDir,
    });
    const client = new DynamoDBClient({});
    await ensureTable(client, tableName);
    client.destroy();
    const streamPoller = await startStreamPoller({
      tableName,
      endpoint: dynamodb.endpoint,
      loadHandler: async () => (await import('../../functions/workers/ingest-events.ts')).handler,
      checkpointFile: options.dataDir && join(options.dataDir, 'stream-checkpoints.json'),
    });
    started.push(streamPoller);
    if (options.scheduler !== false) started.push(startScheduler());
    started.push(startQueuePollers(sqs.endpoint, queues));
    const api = await startApiServer({ port: options.port });
    started.push({ stop: api.close });
    return {
      api,
      dynamodb,
      sqs,
      s3,
      streamPoller,
      queues,
      tableName,
      stop: async () => {
        for (const part of started.reverse()) await part.stop();
      },
    };
  } catch (error) {
    for (const part of started.reverse()) await part.stop().catch(() => undefined);
    throw error;
  }
}
