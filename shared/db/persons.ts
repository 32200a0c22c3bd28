import { GetCommand, QueryCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { batchGet } from './batch.ts';
import { call, cancellationCodes, db, tableName } from './client.ts';
import { keys } from './keys.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export interface PersonRecord {
  id: number;
  uuid: string;
  project_id: number;
  properties: Record<string, unknown>;
  distinct_ids: string[];
  created_at: string;
  is_identified: boolean;
  /** Optimistic-concurrency counter: every write is conditional on the version it read. */
  version: number;
}

export interface PropertyChange {
  id: string;
  person_id: number;
  project_id: number;
  timestamp: string;
  source: 'event' | 'api';
  event_uuid?: string;
  event?: string;
  actor?: string;
  /** What the change did: keys set (new values) and keys removed. */
  set: Record<string, unknown>;
  unset: string[];
  /** The person's properties right after the change, for the properties timeline. */
  properties: Record<string, unknown>;
  /** Keys whose value changed (set, changed or removed). */
  changed: string[];
  /** merge / split / create context where it applies. */
  kind: 'create' | 'update' | 'merge';
  merged_from?: number;
}

function personItem(p: PersonRecord) {
  const email = typeof p.properties.email === 'string' ? p.properties.email.toLowerCase() : undefined;
  return {
    ...keys.person(p.project_id, p.id),
    ...keys.personsOfProject(p.project_id, p.created_at, p.id),
    entity: 'Person',
    id: p.id,
    uuid: p.uuid,
    project_id: p.project_id,
    properties: JSON.stringify(p.properties),
    distinct_ids: p.distinct_ids,
    created_at: p.created_at,
    is_identified: p.is_identified,
    version: p.version,
    ...(email ? { email_lower: email } : {}),
  };
}

export function personFromItem(item: Record<string, unknown>): PersonRecord {
  return {
    id: Number(item.id),
    uuid: String(item.uuid),
    project_id: Number(item.project_id),
    properties: JSON.parse(String(item.properties ?? '{}')) as Record<string, unknown>,
    distinct_ids: (item.distinct_ids as string[] | undefined) ?? [],
    created_at: String(item.created_at),
    is_identified: Boolean(item.is_identified),
    version: Number(item.version ?? 0),
  };
}

function changeItem(c: PropertyChange) {
  return {
    ...keys.personChange(c.project_id, c.person_id, c.timestamp, c.id),
    entity: 'PersonChange',
    ...c,
    set: JSON.stringify(c.set),
    properties: JSON.stringify(c.properties),
  };
}

export function changeFromItem(item: Record<string, unknown>): PropertyChange {
  return {
    ...(item as unknown as PropertyChange),
    set: JSON.parse(String(item.set ?? '{}')) as Record<string, unknown>,
    properties: JSON.parse(String(item.properties ?? '{}')) as Record<string, unknown>,
  };
}

const distinctItem = (projectId: number, distinctId: string, personId: number) => ({
  ...keys.distinctId(projectId, distinctId),
  entity: 'DistinctId',
  distinct_id: distinctId,
  person_id: personId,
});

async function transact(items: TransactItem[]): Promise<boolean> {
  try {
    await call(() => db().send(new TransactWriteCommand({ TransactItems: items })));
    return true;
  } catch (error) {
    const codes = cancellationCodes(error);
    if (codes && codes.some((c) => c === 'ConditionalCheckFailed' || c === 'TransactionConflict')) return false;
    throw error;
  }
}

export async function personIdOf(projectId: number, distinctId: string): Promise<number | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.distinctId(projectId, distinctId), ConsistentRead: true })),
  );
  return out.Item ? Number(out.Item.person_id) : undefined;
}

export async function getPerson(projectId: number, personId: number): Promise<PersonRecord | undefined> {
  const out = await call(() => db().send(new GetCommand({ TableName: tableName(), Key: keys.person(projectId, personId), ConsistentRead: true })));
  return out.Item ? personFromItem(out.Item) : undefined;
}

/** Creates a person and claims its distinct ids; false when one of them already belongs to someone. */
export async function insertPerson(person: PersonRecord, change?: PropertyChange): Promise<boolean> {
  const Table = tableName();
  return transact([
    ...person.distinct_ids.map((d) => ({
      Put: { TableName: Table, Item: distinctItem(person.project_id, d, person.id), ConditionExpression: 'attribute_not_exists(pk)' },
    })),
    { Put: { TableName: Table, Item: personItem(person), ConditionExpression: 'attribute_not_exists(pk)' } },
    ...(change ? [{ Put: { TableName: Table, Item: changeItem(change) } }] : []),
  ]);
}

/**
 * Writes the person as given (its version + 1) if nobody wrote it since it was read at `person.version`;
 * optionally claims new distinct ids in the same transaction. False on a conflict: re-read and retry.
 */
export async function savePerson(person: PersonRecord, options: { change?: PropertyChange; claim?: string[] } = {}): Promise<boolean> {
  const Table = tableName();
  return transact([
    {
      Put: {
        TableName: Table,
        Item: personItem({ ...person, version: person.version + 1 }),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': person.version },
      },
    },
    ...(options.claim ?? []).map((d) => ({
      Put: { TableName: Table, Item: distinctItem(person.project_id, d, person.id), ConditionExpression: 'attribute_not_exists(pk)' },
    })),
    ...(options.change ? [{ Put: { TableName: Table, Item: changeItem(options.change) } }] : []),
  ]);
}

const MOVES_PER_TRANSACTION = 90;

/**
 * Merges `source` into `target` (already holding the merged properties and all distinct ids):
 * repoints the source's distinct ids, deletes the source, saves the target. Both versions are checked.
 */
export async function mergePersonInto(target: PersonRecord, source: PersonRecord, change: PropertyChange): Promise<boolean> {
  const Table = tableName();
  const repoint = (d: string) => ({
    Put: {
      TableName: Table,
      Item: distinctItem(target.project_id, d, target.id),
      ConditionExpression: 'person_id = :s',
      ExpressionAttributeValues: { ':s': source.id },
    },
  });
  const moves = [...source.distinct_ids];
  // Very large merges move distinct ids ahead of the final transaction; reads follow the ids, so events resolve to the target at once.
  while (moves.length > MOVES_PER_TRANSACTION) {
    if (!(await transact(moves.splice(0, MOVES_PER_TRANSACTION).map(repoint)))) return false;
  }
  return transact([
    {
      Put: {
        TableName: Table,
        Item: personItem({ ...target, version: target.version + 1 }),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': target.version },
      },
    },
    {
      Delete: {
        TableName: Table,
        Key: keys.person(source.project_id, source.id),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': source.version },
      },
    },
    ...moves.map(repoint),
    { Put: { TableName: Table, Item: changeItem(change) } },
  ]);
}

/** A person's recorded property changes, oldest first. */
export async function listPersonChanges(projectId: number, personId: number): Promise<PropertyChange[]> {
  const changes: PropertyChange[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await call(() =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': keys.personPartition(projectId, personId).pk, ':prefix': keys.personChangePrefix },
          ExclusiveStartKey,
        }),
      ),
    );
    for (const item of out.Items ?? []) changes.push(changeFromItem(item));
    ExclusiveStartKey = out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return changes;
}

/** Person ids for many (project, distinct id) pairs at once; key `<projectId>#<distinctId>`. */
export async function personIdsOf(pairs: { projectId: number; distinctId: string }[]): Promise<Map<string, number>> {
  const unique = new Map(pairs.map((p) => [`${p.projectId}#${p.distinctId}`, p]));
  const items = await batchGet([...unique.values()].map((p) => keys.distinctId(p.projectId, p.distinctId)));
  return new Map(items.map((item) => [String(item.pk).slice('DISTINCT#'.length), Number(item.person_id)]));
}
