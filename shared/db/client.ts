import {
  documentClient,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '../aws/dynamodb.ts';
import { requireTableName } from '../config.ts';
import { PayloadTooLarge, ServiceUnavailable, ValidationError } from '../errors.ts';
import { invocationKind } from '../invocation.ts';

/**
 * The client for the running invocation's kind (shared/invocation.ts), one per kind and process:
 * bounded timeouts and retries (shared/config.ts, DYNAMODB_TIMEOUTS) so a dead or hung table fails
 * instead of hanging.
 */
export const db = (): DynamoDBDocumentClient => documentClient(invocationKind());

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

/**
 * DynamoDB refusing a value the client sent (an item over 400 KB, a key over 2048/1024 bytes, maps
 * nested over 32 levels): the request's fault, so a 4xx in the error shape rather than a 500. These
 * are refused before anything is written (a transaction is refused whole).
 */
function refusedInput(e: { name?: string; message?: string }): Error | undefined {
  if (e.name !== 'ValidationException') return undefined;
  const message = e.message ?? '';
  if (/item size (to update )?has exceeded the maximum allowed size/i.test(message)) {
    return new PayloadTooLarge('The request would store more than the 400 KB one stored item may hold.');
  }
  if (
    /primary key values must be under|size of (hash|range)key has exceeded|size of all range keys has exceeded/i.test(
      message,
    )
  ) {
    return new ValidationError('A value is too long to be used as an identifier.', null);
  }
  if (/nesting levels have exceeded/i.test(message))
    return new ValidationError('Values may not be nested more than 32 levels deep.', null);
  if (/size limit exceeded/i.test(message)) return new ValidationError('A value is too long to be stored.', null);
  return undefined;
}

/** Runs a table call, turning transport failures and throttling (after the client's retries) into a 503, and values DynamoDB refuses into a 4xx. */
export async function call<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    const e = error as { name?: string; code?: string; message?: string; $metadata?: unknown };
    if (UNAVAILABLE.has(e.name ?? '') || UNAVAILABLE.has(e.code ?? '')) throw new ServiceUnavailable();
    throw refusedInput(e) ?? error;
  }
}

/**
 * Runs a conditional write through `call`: its output, or undefined when the condition failed (the
 * item was not as expected: someone else got there first, or it is gone). Other errors propagate.
 */
export async function conditional<T>(operation: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call(operation);
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

function isConditionalCheckFailed(error: unknown): boolean {
  return (error as { name?: string }).name === 'ConditionalCheckFailedException';
}

/** One item of a transaction, optionally named so that a failed condition can be told by name. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number] & { name?: string };

/**
 * What a transaction came to: committed; refused because the conditions of `failed` items did not
 * hold (their names, or their index in the request when unnamed); or `conflict`, another transaction
 * was writing one of its items at the same time (DynamoDB's TransactionConflict: the caller re-reads
 * and retries, see retryTransient).
 */
export type TransactOutcome =
  | { committed: true }
  | { committed: false; failed: string[] }
  | { committed: false; conflict: true };

const THROTTLED = new Set([
  'TransactionInProgressException',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
]);

/**
 * THE way to run TransactWriteItems and read a cancellation. Throttling (of the call, or as an item's
 * cancellation reason) is never read as a failed condition: it is a 503 (ServiceUnavailable), like any
 * throttled call. A failed condition wins over a conflict (it is a fact about the data); any other
 * cancellation reason (a refused value) propagates as the error it is.
 */
export async function transact(items: TransactItem[]): Promise<TransactOutcome> {
  const TransactItems = items.map(({ name: _, ...item }) => item);
  try {
    await call(() => db().send(new TransactWriteCommand({ TransactItems })));
    return { committed: true };
  } catch (error) {
    const e = error as { name?: string; CancellationReasons?: { Code?: string }[] };
    if (THROTTLED.has(e.name ?? '')) throw new ServiceUnavailable();
    if (e.name !== 'TransactionCanceledException') throw error;
    const codes = (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
    const failed = codes.flatMap((code, i) => (code === 'ConditionalCheckFailed' ? [items[i]?.name ?? String(i)] : []));
    if (failed.length) return { committed: false, failed };
    if (codes.some((code) => THROTTLED.has(code))) throw new ServiceUnavailable();
    if (codes.includes('TransactionConflict')) return { committed: false, conflict: true };
    throw error;
  }
}
