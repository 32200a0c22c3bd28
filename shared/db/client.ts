import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { requireTableName } from '../config.ts';
import { ServiceUnavailable } from '../errors.ts';

let documentClient: DynamoDBDocumentClient | undefined;

/** One client per process; bounded timeouts and retries so a dead table answers 503 fast instead of hanging. */
export function db(): DynamoDBDocumentClient {
  documentClient ??= DynamoDBDocumentClient.from(
    new DynamoDBClient({
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000 },
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return documentClient;
}

export function tableName(): string {
  return requireTableName();
}

const UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'TimeoutError',
  'RequestTimeout',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

/** Runs a table call, turning transport failures and throttling (after SDK retries) into a 503. */
export async function call<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    const e = error as { name?: string; code?: string; $metadata?: unknown };
    if (UNAVAILABLE.has(e.name ?? '') || UNAVAILABLE.has(e.code ?? '')) throw new ServiceUnavailable();
    throw error;
  }
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return (error as { name?: string }).name === 'ConditionalCheckFailedException';
}

/** For a cancelled transaction, the cancellation reason code of each item in request order. */
export function cancellationCodes(error: unknown): string[] | undefined {
  const e = error as { name?: string; CancellationReasons?: { Code?: string }[] };
  if (e.name !== 'TransactionCanceledException') return undefined;
  return (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
}
