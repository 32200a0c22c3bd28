import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { batchGet } from './batch.ts';
import { call, conditional, db, tableName, transact, type TransactItem } from './client.ts';
import { keys } from './keys.ts';
import { queryAll } from './query.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

export interface GroupType {
  group_type: string;
  group_type_index: number;
  name_singular: string | null;
  name_plural: string | null;
  created_at: string;
}

export interface GroupTypesRecord {
  project_id: number;
  types: GroupType[];
  /** Optimistic-concurrency counter: 0 when the item does not exist yet. */
  version: number;
}

export interface GroupRecord {
  project_id: number;
  group_type_index: number;
  group_key: string;
  group_properties: Record<string, unknown>;
  /** Per property, the time of the event that last set it: an older `$group_set` arriving later loses (as PostHog's). */
  properties_last_updated_at: Record<string, string>;
  created_at: string;
  /** Optimistic-concurrency counter: 0 for a group not stored yet, then 1, 2, ... */
  version: number;
}

/** A `$group_set` applied to a group: the group's properties right after it, as person changes are kept. */
export interface GroupChange {
  id: string;
  project_id: number;
  group_type_index: number;
  group_key: string;
  timestamp: string;
  event_uuid: string;
  set: Record<string, unknown>;
  properties: Record<string, unknown>;
  changed: string[];
  kind: 'create' | 'update';
}

export async function getGroupTypes(projectId: number): Promise<GroupTypesRecord> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.groupTypes(projectId), ConsistentRead: true })),
  );
  const item = out.Item;
  return {
    project_id: projectId,
    types: item ? (JSON.parse(String(item.types)) as GroupType[]) : [],
    version: Number(item?.version ?? 0),
  };
}

/** The types written at the next version, if nobody wrote them since they were read. */
export async function saveGroupTypes(record: GroupTypesRecord): Promise<boolean> {
  const out = await conditional(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.groupTypes(record.project_id),
          entity: 'GroupTypes',
          types: JSON.stringify(record.types),
          version: record.version + 1,
        },
        ...(record.version === 0
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': record.version } }),
      }),
    ),
  );
  return out !== undefined;
}

function groupItem(g: GroupRecord) {
  return {
    ...keys.group(g.project_id, g.group_type_index, g.group_key),
    ...keys.groupsOfType(g.project_id, g.group_type_index, g.created_at, g.group_key),
    entity: 'Group',
    project_id: g.project_id,
    group_type_index: g.group_type_index,
    group_key: g.group_key,
    group_properties: JSON.stringify(g.group_properties),
    properties_last_updated_at: JSON.stringify(g.properties_last_updated_at),
    created_at: g.created_at,
    version: g.version,
  };
}

function groupFromItem(item: Record<string, unknown>): GroupRecord {
  return {
    project_id: Number(item.project_id),
    group_type_index: Number(item.group_type_index),
    group_key: String(item.group_key),
    group_properties: JSON.parse(String(item.group_properties ?? '{}')) as Record<string, unknown>,
    properties_last_updated_at: JSON.parse(String(item.properties_last_updated_at ?? '{}')) as Record<string, string>,
    created_at: String(item.created_at),
    version: Number(item.version ?? 0),
  };
}

function changeItem(c: GroupChange) {
  return {
    ...keys.groupChange(c.project_id, c.group_type_index, c.group_key, c.timestamp, c.id),
    entity: 'GroupChange',
    ...c,
    set: JSON.stringify(c.set),
    properties: JSON.stringify(c.properties),
  };
}

/**
 * The stored groups among `refs` (type index and key), in one pass of BatchGetItem (100 keys per
 * request, 8 requests in flight), only their identity, properties and creation time.
 */
export async function getGroups(
  projectId: number,
  refs: readonly { typeIndex: number; groupKey: string }[],
): Promise<Omit<GroupRecord, 'project_id' | 'properties_last_updated_at' | 'version'>[]> {
  const items = await batchGet(
    refs.map((r) => keys.group(projectId, r.typeIndex, r.groupKey)),
    {
      expression: '#i, #k, #p, #c',
      names: { '#i': 'group_type_index', '#k': 'group_key', '#p': 'group_properties', '#c': 'created_at' },
    },
  );
  return items.map((item) => ({
    group_type_index: Number(item.group_type_index),
    group_key: String(item.group_key),
    group_properties: JSON.parse(String(item.group_properties ?? '{}')) as Record<string, unknown>,
    created_at: String(item.created_at),
  }));
}

export async function getGroup(
  projectId: number,
  typeIndex: number,
  groupKey: string,
): Promise<GroupRecord | undefined> {
  const out = await call(() =>
    db().send(
      new GetCommand({ TableName: tableName(), Key: keys.group(projectId, typeIndex, groupKey), ConsistentRead: true }),
    ),
  );
  return out.Item ? groupFromItem(out.Item) : undefined;
}

/** Transactions hold 100 items: the group and its change, and this many property counts at most. */
export const COUNTS_PER_TRANSACTION = 95;

function countDeltas(projectId: number, typeIndex: number, added: readonly string[]): TransactItem[] {
  return added.map((key) => ({
    Update: {
      TableName: tableName(),
      Key: keys.groupPropertyCount(projectId, typeIndex, key),
      UpdateExpression: 'ADD #c :one SET entity = :e, group_type_index = :i, property_key = :k',
      ExpressionAttributeNames: { '#c': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':e': 'GroupPropertyCount', ':i': typeIndex, ':k': key },
    },
  }));
}

/**
 * A group created or saved at its next version with its change entry, counting the property keys it
 * newly holds (`added`, at most COUNTS_PER_TRANSACTION: the caller counts the rest with addPropertyCounts).
 * False when another writer got there first (re-read and retry).
 */
export async function writeGroup(
  group: GroupRecord,
  change: GroupChange | undefined,
  added: readonly string[],
): Promise<boolean> {
  const put: TransactItem =
    group.version === 0
      ? {
          Put: {
            TableName: tableName(),
            Item: groupItem({ ...group, version: 1 }),
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        }
      : {
          Put: {
            TableName: tableName(),
            Item: groupItem({ ...group, version: group.version + 1 }),
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': group.version },
          },
        };
  const outcome = await transact([
    put,
    ...(change ? [{ Put: { TableName: tableName(), Item: changeItem(change) } }] : []),
    ...countDeltas(group.project_id, group.group_type_index, added),
  ]);
  return outcome.committed;
}

/** Counts keys past what one transaction holds (a `$group_set` adding very many keys at once). */
export async function addPropertyCounts(projectId: number, typeIndex: number, added: readonly string[]): Promise<void> {
  for (const item of countDeltas(projectId, typeIndex, added))
    await call(() => db().send(new UpdateCommand(item.Update as ConstructorParameters<typeof UpdateCommand>[0])));
}

/** A position in one type's groups (newest first): the sort key of the last group a page returned. */
export type GroupsPosition = { createdAt: string; groupKey: string };

/** One read of a type's groups, newest first, after `after`. */
export async function groupsPage(
  projectId: number,
  typeIndex: number,
  limit: number,
  after?: GroupsPosition,
): Promise<{ groups: GroupRecord[]; more: boolean }> {
  const index = TABLE_SCHEMA.indexes.byParent;
  const out = await call(() =>
    db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: index.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': index.partitionKey },
        ExpressionAttributeValues: { ':p': keys.groupsOfType(projectId, typeIndex, '', '').parent_pk },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: after && {
          ...keys.group(projectId, typeIndex, after.groupKey),
          ...keys.groupsOfType(projectId, typeIndex, after.createdAt, after.groupKey),
        },
      }),
    ),
  );
  return { groups: (out.Items ?? []).map(groupFromItem), more: out.LastEvaluatedKey !== undefined };
}

/** A type's groups (identity and properties), newest first, at most `max` + 1 (so a caller sees it has more than `max`). */
export async function groupsOfType(projectId: number, typeIndex: number, max: number): Promise<GroupRecord[]> {
  const groups: GroupRecord[] = [];
  let after: GroupsPosition | undefined;
  for (;;) {
    const page = await groupsPage(projectId, typeIndex, Math.min(1000, max + 1 - groups.length), after);
    groups.push(...page.groups);
    const last = page.groups.at(-1);
    if (!page.more || !last || groups.length > max) return groups;
    after = { createdAt: last.created_at, groupKey: last.group_key };
  }
}

/** A group's recorded `$group_set` changes, oldest first: those at `from`..`to` (inclusive), the first `limit` of them. */
export async function listGroupChanges(
  projectId: number,
  typeIndex: number,
  groupKey: string,
  window: { from?: string; to?: string; limit?: number } = {},
): Promise<GroupChange[]> {
  const items = await queryAll(keys.group(projectId, typeIndex, groupKey).pk, keys.groupChangePrefix, {
    range: keys.changeRange(window.from, window.to),
    limit: window.limit,
  });
  return items.map((item) => ({
    ...(item as unknown as GroupChange),
    set: JSON.parse(String(item.set ?? '{}')) as Record<string, unknown>,
    properties: JSON.parse(String(item.properties ?? '{}')) as Record<string, unknown>,
  }));
}

/** Every (type, property key, groups holding it) of a project: one Query of its counts partition. */
export async function groupPropertyCounts(
  projectId: number,
): Promise<{ group_type_index: number; key: string; count: number }[]> {
  const items = await queryAll(keys.groupPropertyCounts(projectId).pk, '');
  return items.map((item) => ({
    group_type_index: Number(item.group_type_index),
    key: String(item.property_key),
    count: Number(item.count ?? 0),
  }));
}
