import { GetCommand, QueryCommand } from '#shared/aws/dynamodb.ts';
import { db, tableName } from '#shared/db/client.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';

/**
 * Everything one test tenant can touch, read item by item from the shared test table (other test
 * files write the same table at the same time, so a whole-table scan would never be stable).
 * Starts from the user's partition (its memberships name the organizations), and reads each
 * organization's partition (its projects), its batch exports and their partitions, each project's
 * lookup/counter/action partitions, its persons (through the byParent index) with their distinct ids
 * (a person's append-only history entries by key only),
 * and the events captured into `eventProjects` since `eventsSince` (through the eventsByInsertedHour index).
 * Rate-limit and trend-cache items are not the tenant's data and are left out.
 */
export interface TenantScope {
  userId: string;
  organizationIds: string[];
  projectIds: number[];
  /** Batch exports whose own partition (runs, window claims, logs) is read; all when absent. */
  exportIds?: string[];
  /** Projects whose raw events (by ingestion hour) are part of the snapshot. */
  eventProjects?: number[];
  eventsSince?: Date;
}

export type Snapshot = Map<string, string>;

const IGNORED = ['RATE#', 'TRENDCACHE#'];

/** Item attributes as JSON: DynamoDB returns an item's attributes in a stable order, so no key sorting is needed. */
function replacer(this: unknown, _key: string, value: unknown): unknown {
  if (value instanceof Set) return [...value].map(String).sort();
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value).toString('base64')}`;
  return value;
}

async function queryAll(input: {
  pk: string;
  index?: { name: string; key: string };
  keysOnly?: boolean;
}): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: input.index?.name,
        KeyConditionExpression: '#k = :k',
        ExpressionAttributeNames: { '#k': input.index?.key ?? TABLE_SCHEMA.partitionKey },
        ExpressionAttributeValues: { ':k': input.pk },
        ConsistentRead: input.index ? undefined : true,
        ...(input.keysOnly ? { ProjectionExpression: 'pk, sk' } : {}),
        ExclusiveStartKey,
      }),
    );
    items.push(...((out.Items ?? []) as Record<string, unknown>[]));
    ExclusiveStartKey = out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

async function getItem(pk: string, sk: string): Promise<Record<string, unknown> | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: { pk, sk }, ConsistentRead: true }));
  return out.Item as Record<string, unknown> | undefined;
}

export async function snapshotTenant(scope: TenantScope): Promise<Snapshot> {
  const snapshot: Snapshot = new Map();
  const add = (items: (Record<string, unknown> | undefined)[]) => {
    for (const item of items) {
      if (!item) continue;
      const pk = String(item.pk);
      if (IGNORED.some((p) => pk.startsWith(p))) continue;
      snapshot.set(`${pk} | ${String(item.sk)}`, JSON.stringify(item, replacer));
    }
  };
  const user = queryAll({ pk: `USER#${scope.userId}` }).then(add);
  await Promise.all([
    user,
    ...scope.organizationIds.map(async (orgId) => {
      const byParent = { name: TABLE_SCHEMA.indexes.byParent.name, key: TABLE_SCHEMA.indexes.byParent.partitionKey };
      const [org, members, exports] = await Promise.all([
        queryAll({ pk: `ORG#${orgId}` }),
        queryAll({ pk: `ORG#${orgId}#MEMBERS`, index: byParent }),
        queryAll({ pk: `EXPORTS#${orgId}` }),
      ]);
      [org, members, exports].forEach(add);
      const slug = org.find((i) => i.sk === 'ORG')?.slug;
      const tokens = org.filter((i) => String(i.sk).startsWith('PROJECT#')).map((i) => String(i.api_token));
      const exportIds = exports
        .map((e) => String(e.id ?? String(e.sk).slice('EXPORT#'.length)))
        .filter((id) => !scope.exportIds || scope.exportIds.includes(id));
      await Promise.all([
        ...(slug ? [getItem(`SLUG#${String(slug)}`, 'SLUG').then((i) => add([i]))] : []),
        ...tokens.map((t) => getItem(`TOKEN#${t}`, 'TOKEN').then((i) => add([i]))),
        ...exportIds.map((id) => queryAll({ pk: `EXPORT#${id}` }).then(add)),
      ]);
    }),
    ...scope.projectIds.map(async (projectId) => {
      const byParent = { name: TABLE_SCHEMA.indexes.byParent.name, key: TABLE_SCHEMA.indexes.byParent.partitionKey };
      const [persons] = await Promise.all([
        queryAll({ pk: `PROJECT#${projectId}#PERSONS`, index: byParent }),
        queryAll({ pk: `PROJECT#${projectId}` }).then(add),
        queryAll({ pk: `ACTIONS#${projectId}` }).then(add),
        getItem(`COUNTER#action#${projectId}`, 'COUNTER').then((i) => add([i])),
        getItem(`COUNTER#person#${projectId}`, 'COUNTER').then((i) => add([i])),
        queryAll({ pk: `PROJECT#${projectId}#GROUPPROPS` }).then(add),
        queryAll({ pk: `PROJECT#${projectId}#PROPDEFS` }).then(add),
        // Groups of every type index (0-4), each group's partition whole (its item and its changes).
        ...[0, 1, 2, 3, 4].map((index) =>
          queryAll({ pk: `PROJECT#${projectId}#GROUPS#${index}`, index: byParent }).then((groups) =>
            Promise.all(groups.map((g) => queryAll({ pk: String(g.pk) }).then(add))),
          ),
        ),
      ]);
      // A person's activity and property-change entries are append-only (and may hold hundreds of KB each):
      // their keys show an entry added or removed; the person item itself is compared whole.
      await Promise.all(
        persons.flatMap((p) => [
          getItem(`PERSON#${projectId}#${String(p.id)}`, 'PERSON').then((i) => add([i])),
          queryAll({ pk: `PERSON#${projectId}#${String(p.id)}`, keysOnly: true }).then((items) =>
            add(items.filter((i) => i.sk !== 'PERSON')),
          ),
          ...((p.distinct_ids as string[] | undefined) ?? []).map((d) =>
            getItem(`DISTINCT#${projectId}#${d}`, 'DISTINCT').then((i) => add([i])),
          ),
        ]),
      );
    }),
  ]);
  if (scope.eventProjects?.length) {
    const hours: string[] = [];
    const since = scope.eventsSince ?? new Date();
    for (
      let t = Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), since.getUTCDate(), since.getUTCHours());
      t <= Date.now() + 3_600_000;
      t += 3_600_000
    ) {
      hours.push(new Date(t).toISOString().slice(0, 13));
    }
    const index = TABLE_SCHEMA.indexes.eventsByInsertedHour;
    await Promise.all(
      scope.eventProjects.flatMap((projectId) =>
        hours.flatMap((hour) =>
          Array.from({ length: TABLE_SCHEMA.eventDayShards }, async (_, shard) => {
            const keysOnly = await queryAll({
              pk: `I#${projectId}#${hour}#${shard}`,
              index: { name: index.name, key: index.partitionKey },
            });
            add(keysOnly);
          }),
        ),
      ),
    );
  }
  return snapshot;
}

/** Items added, removed or changed between two snapshots, one line each (empty: no change). */
export function diffSnapshots(before: Snapshot, after: Snapshot): string[] {
  const lines: string[] = [];
  for (const [key, value] of after) {
    if (!before.has(key)) lines.push(`+ ${key} ${value.slice(0, 300)}`);
    else if (before.get(key) !== value)
      lines.push(`~ ${key}\n    was ${before.get(key)!.slice(0, 300)}\n    now ${value.slice(0, 300)}`);
  }
  for (const key of before.keys()) if (!after.has(key)) lines.push(`- ${key}`);
  return lines;
}
