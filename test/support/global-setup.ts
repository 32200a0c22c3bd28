import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.ts';
import { configureLocalEnv } from '../../infra/local/env.ts';
import { startStreamPoller } from '../../infra/local/stream-poller.ts';
import { ensureQueues } from '../../infra/local/queues.ts';
import { startS3, startSqs } from '../../infra/local/stand-ins.ts';
import { startQueuePollers } from '../../infra/local/workers.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTable } from '../../infra/local/table.ts';
import { buildConsole } from '../../infra/console-build.ts';

export const TEST_TABLE = 'analytics-test';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    tableName: string;
    sqsEndpoint: string;
    queues: Record<string, string>;
    s3Endpoint: string;
    dataDir: string;
  }
}

/**
 * One in-memory DynamoDB Local for the whole run (one stream-enabled table per process: see
 * toolchain notes). Test files isolate themselves by creating their own organizations and keys.
 */
export default async function setup(project: TestProject) {
  // The console's files (dist/console) for the local server's `/` routes.
  await buildConsole();
  const dynamodb = await startDynamoDbLocal();
  const client = new DynamoDBClient({
    endpoint: dynamodb.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await ensureTable(client, TEST_TABLE);
  client.destroy();
  const sqs = await startSqs();
  const queues = await ensureQueues(sqs.endpoint, 'analytics-test');
  const s3 = await startS3(await mkdtemp(join(tmpdir(), 'analytics-test-s3-')));
  project.provide('s3Endpoint', s3.endpoint);
  // One DATA_DIR for every test process: the local key that seals export secrets is made there once.
  const dataDir = await mkdtemp(join(tmpdir(), 'analytics-test-data-'));
  project.provide('dataDir', dataDir);
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('tableName', TEST_TABLE);
  project.provide('sqsEndpoint', sqs.endpoint);
  project.provide('queues', queues);
  // One stream poller for the run, as Lambda's event source mapping is one per table: it runs the
  // ingest worker here, in this process; tests observe its effects by reading the table.
  configureLocalEnv({ tableName: TEST_TABLE, dynamodb: dynamodb.endpoint, sqs: sqs.endpoint, queues, dataDir });
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  const poller = await startStreamPoller({
    tableName: TEST_TABLE,
    endpoint: dynamodb.endpoint,
    loadHandler: async () => (await import('../../functions/workers/ingest-events.ts')).handler,
  });
  // Likewise Lambda's SQS event sources: queued bulk deletes (and drain continuations) run their workers here.
  const queuePollers = startQueuePollers(sqs.endpoint, queues);
  return async () => {
    await queuePollers.stop();
    await poller.stop();
    await sqs.stop();
    await s3.stop();
    await dynamodb.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
