import { BatchGetCommand, BatchWriteCommand, type BatchWriteCommandInput } from '../aws/dynamodb.ts';
import { TRANSIENT, retryTransient, type RetryPolicy } from '../retry.ts';
import { call, db, tableName } from './client.ts';
import type { ItemKey } from './keys.ts';

const GET_LIMIT = 100;
const WRITE_LIMIT = 25;
const MAX_ROUNDS = 8;

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function inParallel<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  });
  await Promise.all(lanes);
  return results;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Unprocessed keys or items (throttled inside a batch) are sent again with backoff, up to MAX_ROUNDS sends. */
const unprocessed = (message: string): RetryPolicy => ({
  attempts: MAX_ROUNDS,
  baseMs: 40,
  capMs: 1000,
  gaveUp: () => new Error(message),
});

async function writeAll(
  Table: string,
  requests: NonNullable<BatchWriteCommandInput['RequestItems']>[string],
  gaveUp: string,
): Promise<void> {
  let pending = requests;
  await retryTransient(
    'BatchWriteItem',
    async () => {
      const out = await call(() => db().send(new BatchWriteCommand({ RequestItems: { [Table]: pending } })));
      pending = out.UnprocessedItems?.[Table] ?? [];
      return pending.length ? TRANSIENT : true;
    },
    unprocessed(gaveUp),
  );
}

/** BatchGetItem over any number of keys, retrying unprocessed keys; returns the items found. */
export async function batchGet(
  keys: readonly ItemKey[],
  projection?: { expression: string; names: Record<string, string> },
  concurrency = 8,
): Promise<Record<string, unknown>[]> {
  const Table = tableName();
  const found: Record<string, unknown>[] = [];
  await inParallel(chunks(keys, GET_LIMIT), concurrency, async (chunk) => {
    let pending = chunk as unknown as Record<string, unknown>[];
    await retryTransient(
      'BatchGetItem',
      async () => {
        const out = await call(() =>
          db().send(
            new BatchGetCommand({
              RequestItems: {
                [Table]: {
                  Keys: pending,
                  ...(projection
                    ? { ProjectionExpression: projection.expression, ExpressionAttributeNames: projection.names }
                    : {}),
                },
              },
            }),
          ),
        );
        found.push(...(out.Responses?.[Table] ?? []));
        pending = out.UnprocessedKeys?.[Table]?.Keys ?? [];
        return pending.length ? TRANSIENT : true;
      },
      unprocessed('BatchGetItem: keys still unprocessed after retries'),
    );
  });
  return found;
}

/** BatchWriteItem puts over any number of items, retrying unprocessed items with backoff. */
export async function batchPut(items: readonly Record<string, unknown>[], concurrency = 8): Promise<void> {
  const Table = tableName();
  await inParallel(chunks(items, WRITE_LIMIT), concurrency, async (chunk) => {
    await writeAll(
      Table,
      chunk.map((Item) => ({ PutRequest: { Item } })),
      'BatchWriteItem: items still unprocessed after retries',
    );
  });
}

/** BatchWriteItem deletes over any number of keys (deleting a missing item is fine: re-runs are harmless). */
export async function batchDelete(keys: readonly ItemKey[], concurrency = 8): Promise<void> {
  const Table = tableName();
  await inParallel(chunks(keys, WRITE_LIMIT), concurrency, async (chunk) => {
    await writeAll(
      Table,
      chunk.map((Key) => ({ DeleteRequest: { Key: { pk: Key.pk, sk: Key.sk } } })),
      'BatchWriteItem: deletes still unprocessed after retries',
    );
  });
}
