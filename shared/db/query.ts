import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { call, db, tableName } from './client.ts';
import type { ItemKey } from './keys.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

/** Every item of a partition (optionally those whose sort key starts with `prefix`), page after page. */
export async function queryAll(
  pk: string,
  prefix: string,
  options: { newestFirst?: boolean; limit?: number; projection?: { expression: string; names: Record<string, string> } } = {},
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await call(() =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: prefix ? 'pk = :pk AND begins_with(sk, :p)' : 'pk = :pk',
          ExpressionAttributeValues: prefix ? { ':pk': pk, ':p': prefix } : { ':pk': pk },
          ScanIndexForward: !options.newestFirst,
          ...(options.projection ? { ProjectionExpression: options.projection.expression, ExpressionAttributeNames: options.projection.names } : {}),
          ExclusiveStartKey,
          ...(options.limit ? { Limit: options.limit - items.length } : {}),
        }),
      ),
    );
    items.push(...(out.Items ?? []));
    ExclusiveStartKey = options.limit && items.length >= options.limit ? undefined : out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

/** Keys of the items whose dueByTime entry (`due_pk`) is due by `now` (the sparse index: never a scan). */
export async function dueKeys(duePk: string, now: Date): Promise<ItemKey[]> {
  const index = TABLE_SCHEMA.indexes.dueByTime;
  const found: ItemKey[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await call(() =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: index.name,
          KeyConditionExpression: '#p = :p AND #s <= :now',
          ExpressionAttributeNames: { '#p': index.partitionKey, '#s': index.sortKey },
          ExpressionAttributeValues: { ':p': duePk, ':now': `${now.toISOString()}#\uffff` },
          ExclusiveStartKey,
        }),
      ),
    );
    found.push(...(out.Items ?? []).map((i) => ({ pk: String(i.pk), sk: String(i.sk) })));
    ExclusiveStartKey = out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return found;
}
