import { QueryCommand, type QueryCommandInput } from '../aws/dynamodb.ts';
import { call, db, tableName } from './client.ts';
import type { ItemKey } from './keys.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

export type QueryInput = Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>;

/** Every item a Query matches, page after page; with `limit`, stops once that many are read. */
export async function queryItems(input: QueryInput, limit?: number): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await call(() =>
      db().send(
        new QueryCommand({
          ...input,
          TableName: tableName(),
          ExclusiveStartKey,
          ...(limit ? { Limit: limit - items.length } : {}),
        }),
      ),
    );
    items.push(...(out.Items ?? []));
    ExclusiveStartKey = limit && items.length >= limit ? undefined : out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

/** Every item of a partition (optionally those whose sort key starts with `prefix`, or lies in `range`, inclusive). */
export async function queryAll(
  pk: string,
  prefix: string,
  options: {
    newestFirst?: boolean;
    limit?: number;
    projection?: { expression: string; names: Record<string, string> };
    range?: readonly [string, string];
  } = {},
): Promise<Record<string, unknown>[]> {
  const { range } = options;
  return queryItems(
    {
      KeyConditionExpression: range
        ? 'pk = :pk AND sk BETWEEN :a AND :b'
        : prefix
          ? 'pk = :pk AND begins_with(sk, :p)'
          : 'pk = :pk',
      ExpressionAttributeValues: range
        ? { ':pk': pk, ':a': range[0], ':b': range[1] }
        : prefix
          ? { ':pk': pk, ':p': prefix }
          : { ':pk': pk },
      ScanIndexForward: !options.newestFirst,
      ...(options.projection
        ? { ProjectionExpression: options.projection.expression, ExpressionAttributeNames: options.projection.names }
        : {}),
    },
    options.limit,
  );
}

/** Every item of an index partition (`byParent`, `dueByTime`, ...), optionally a sort-key range; with `limit`, the first that many. */
export async function queryIndex(
  index: { name: string; partitionKey: string; sortKey: string },
  partition: string,
  range?: { from?: string; to: string },
  limit?: number,
): Promise<Record<string, unknown>[]> {
  const sortKeyCondition = range ? (range.from === undefined ? ' AND #s <= :to' : ' AND #s BETWEEN :from AND :to') : '';
  return queryItems(
    {
      IndexName: index.name,
      KeyConditionExpression: `#p = :p${sortKeyCondition}`,
      ExpressionAttributeNames: { '#p': index.partitionKey, ...(range ? { '#s': index.sortKey } : {}) },
      ExpressionAttributeValues: {
        ':p': partition,
        ...(range ? { ':to': range.to, ...(range.from === undefined ? {} : { ':from': range.from }) } : {}),
      },
    },
    limit,
  );
}

/** Keys of the items whose dueByTime entry (`due_pk`) is due by `now`, earliest first (the sparse index: never a scan); with `limit`, the first that many. */
export async function dueKeys(duePk: string, now: Date, limit?: number): Promise<ItemKey[]> {
  const items = await queryIndex(TABLE_SCHEMA.indexes.dueByTime, duePk, { to: `${now.toISOString()}#\uffff` }, limit);
  return items.map((i) => ({ pk: String(i.pk), sk: String(i.sk) }));
}
