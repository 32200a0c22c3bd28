/**
 * Bulk seeding of a local stack's table: plain BatchWriteItem calls (25 items each) with a bounded
 * number in flight, unprocessed items retried. For benchmarks that measure reads, not ingestion.
 */
import { BatchWriteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';

export function localDynamo(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/**
 * Writes `items` (plain objects, marshalled here) with up to `inFlight` BatchWriteItem calls at once.
 * `onProgress(written)` is called after every completed call.
 */
export async function batchWriteAll(
  client: DynamoDBClient,
  table: string,
  items: Iterable<Record<string, unknown>>,
  options: { inFlight?: number; onProgress?: (written: number) => void } = {},
): Promise<number> {
  const inFlight = options.inFlight ?? 16;
  let written = 0;
  const running = new Set<Promise<void>>();
  let failure: unknown;
  const write = async (chunk: Record<string, unknown>[]) => {
    let pending = chunk.map((Item) => ({ PutRequest: { Item: marshall(Item, { removeUndefinedValues: true }) } }));
    for (let attempt = 0; pending.length; attempt += 1) {
      if (attempt) await new Promise((r) => setTimeout(r, Math.min(1_000, 20 * 2 ** attempt)));
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
    written += chunk.length;
    options.onProgress?.(written);
  };
  const launch = (chunk: Record<string, unknown>[]) => {
    const p: Promise<void> = write(chunk)
      .catch((e: unknown) => {
        failure ??= e;
      })
      .finally(() => running.delete(p));
    running.add(p);
  };
  let batch: Record<string, unknown>[] = [];
  for (const item of items) {
    batch.push(item);
    if (batch.length === 25) {
      launch(batch);
      batch = [];
      if (running.size >= inFlight) await Promise.race(running);
      if (failure) break;
    }
  }
  if (batch.length && !failure) launch(batch);
  await Promise.all(running);
  if (failure) throw failure;
  return written;
}
