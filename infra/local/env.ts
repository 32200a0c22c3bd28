import { ENV } from '#shared/config.ts';
import type { QueueName } from '#shared/queue-settings.ts';
import { queueUrlEnv } from './queues.ts';

export interface LocalEndpoints {
  tableName: string;
  dynamodb: string;
  sqs?: string;
  s3?: string;
  /** Loopback origins export destinations may be (the local S3 stand-in, test servers): exactly these, no other loopback. */
  exportLoopbackOrigins?: string[];
  queues?: Partial<Record<QueueName, string>>;
  /** DATA_DIR for this process (the local key of export secrets lives there); default: as set, else .data. */
  dataDir?: string;
}

/**
 * The environment the local runtime gives handlers: the same variables a Lambda gets, plus the
 * stand-ins' endpoints (the SDK reads AWS_ENDPOINT_URL_<SERVICE> itself) and dummy credentials.
 * Must run before the first table call in the process (config and clients are built once).
 */
export function configureLocalEnv(endpoints: LocalEndpoints): void {
  Object.assign(process.env, {
    [ENV.tableName]: endpoints.tableName,
    [ENV.runtime]: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
    // Export destinations on this machine (s3rver, test servers) are loopback: named one by one; a deployed stage never sets it.
    [ENV.exportLoopbackOrigins]: (endpoints.exportLoopbackOrigins ?? []).join(','),
    ...(endpoints.dataDir ? { [ENV.dataDir]: endpoints.dataDir } : {}),
    ...(endpoints.sqs ? { AWS_ENDPOINT_URL_SQS: endpoints.sqs } : {}),
    ...(endpoints.s3 ? { AWS_ENDPOINT_URL_S3: endpoints.s3 } : {}),
    ...queueUrlEnv(endpoints.queues ?? {}),
  });
  delete process.env.AWS_PROFILE;
  delete process.env.AWS_SESSION_TOKEN;
}
