import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createSqsServer } from 'local-aws-sqs';
import S3rver from 's3rver';
import { freePort } from './ports.ts';

export interface StandIn {
  endpoint: string;
  stop(): Promise<void>;
}

/** In-process SQS (local-aws-sqs). */
export async function startSqs(): Promise<StandIn> {
  const port = await freePort();
  const server: Server = await createSqsServer({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** In-process S3 (s3rver); clients need path-style addressing and WHEN_REQUIRED checksums. */
export async function startS3(directory: string): Promise<StandIn> {
  await mkdir(directory, { recursive: true });
  const port = await freePort();
  const server = new S3rver({ port, address: '127.0.0.1', directory, silent: true });
  await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () => server.close(),
  };
}
