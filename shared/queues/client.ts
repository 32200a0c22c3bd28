import { SQSClient } from '@aws-sdk/client-sqs';

let client: SQSClient | undefined;

/** One SQS client per process, with bounded timeouts like the table's. */
export const sqs = () =>
  (client ??= new SQSClient({ maxAttempts: 3, requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000 } }));
