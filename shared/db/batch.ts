import { BatchGetCommand, BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
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

const backoff = (round: number) => new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** round)));

/** BatchGetItem over any number of keys, retrying unprocessed keys; returns the items found. */
export async function batchGet(
  keys: readonly ItemKey[],
  projection?: { expression: string; names: Record<string, string> },
  concurrency = 8,
): Promise<Record<string, unknown>[]> {
  const Table = tableName();
  const found: Record<string, unknown>[] = [];
  await inParallel(chunks(keys, GET_LIMIT), concurrency, async (chunk) => {
    let pending: Record<string, unknown>[] | undefined = chunk as unknown as Record<string, unknown>[];
    for (let round = 0; pending?.length; round += 1) {
      if (round >= MAX_ROUNDS) throw new Error('BatchGetItem: keys still unprocessed after retries');
      if (round) await backoff(round);
      const out = await call(() =>
        db().send(
          new BatchGetCommand({
            RequestItems: {
              [Table]: {
                Keys: pending!,
                ...(projection ? { ProjectionExpression: projection.expression, ExpressionAttributeNames: projection.names } : {}),
              },
            },
          }),
        ),
      );
      found.push(...(out.Responses?.[Table] ?? []));
      pending = out.UnprocessedKeys?.[Table]?.Keys;
    }
  });
  return found;
}

/** BatchWriteItem puts over any number of items, retrying unprocessed items with backoff. */
export async function batchPut(items: readonly Record<string, unknown>[], concurrency = 8): Promise<void> {
  const Table = tableName();
  await inParallel(chunks(items, WRITE_LIMIT), concurrency, async (chunk) => {
    let pending = chunk.map((Item) => ({ PutRequest: { Item } }));
    for (let round = 0; pending.length; round += 1) {
      if (round >= MAX_ROUNDS) throw new Error('BatchWriteItem: items still unprocessed after retries');
      if (round) await backoff(round);
      const out = await call(() => db().send(new BatchWriteCommand({ RequestItems: { [Table]: pending } })));
      pending = (out.UnprocessedItems?.[Table] ?? []) as typeof pending;
    }
  });
}

/** BatchWriteItem deletes over any number of keys (deleting a missing item is fine: re-runs are harmless). */
export async function batchDelete(keys: readonly ItemKey[], concurrency = 8): Promise<void> {
  const Table = tableName();
  await inParallel(chunks(keys, WRITE_LIMIT), concurrency, async (chunk) => {
    let pending = chunk.map((Key) => ({ DeleteRequest: { Key: { pk: Key.pk, sk: Key.sk } } }));
    for (let round = 0; pending.length; round += 1) {
      if (round >= MAX_ROUNDS) throw new Error('BatchWriteItem: deletes still unprocessed after retries');
      if (round) await backoff(round);
      const out = await call(() => db().send(new BatchWriteCommand({ RequestItems: { [Table]: pending } })));
      pending = (out.UnprocessedItems?.[Table] ?? []) as typeof pending;
    }
  });
}
