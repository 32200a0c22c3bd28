import { DynamoDBDocumentClient } from '#shared/aws/dynamodb.ts';
import { vi } from 'vitest';

/**
 * Runs `run` with every item DynamoDB hands back (Query/Scan `Items`, BatchGetItem `Responses`) shown
 * to `visit`, in this process: how tests check what a read path reads, on the real table.
 */
export async function withItemsRead<T>(
  visit: (item: Record<string, unknown>) => void,
  run: () => Promise<T>,
): Promise<T> {
  const original = DynamoDBDocumentClient.prototype.send;
  const spy = vi.spyOn(DynamoDBDocumentClient.prototype, 'send').mockImplementation(async function (
    this: DynamoDBDocumentClient,
    ...args: unknown[]
  ) {
    const out = (await (original as (...a: unknown[]) => Promise<unknown>).apply(this, args)) as {
      Items?: Record<string, unknown>[];
      Responses?: Record<string, Record<string, unknown>[]>;
    };
    for (const item of [...(out?.Items ?? []), ...Object.values(out?.Responses ?? {}).flat()]) visit(item);
    return out;
  });
  try {
    return await run();
  } finally {
    spy.mockRestore();
  }
}
