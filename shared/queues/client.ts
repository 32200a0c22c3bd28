import { SQSClient } from '../aws/sqs.ts';

let client: SQSClient | undefined;

/** One SQS client per process, with bounded timeouts like the table's. */
export const sqs = () =>
  (client ??= new SQSClient({ maxAttempts: 3, connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000 }));
