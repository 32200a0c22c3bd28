import { GetCommand, QueryCommand, ScanCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { nowIso } from '../clock.ts';
import { batchGet, inParallel } from './batch.ts';
import { call, conditional, db, tableName, transact, type TransactItem } from './client.ts';
import { nextId } from './counters.ts';
import { keys } from './keys.ts';
import { queryAll, queryItems } from './query.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

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
  /** When the person last changed (persons batch exports export what changed in a window). */
  updated_at?: string;
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
    // Every write of a person item is a change of the person.
    updated_at: nowIso(),
    ...(email ? { email_lower: email, ...keys.personsByEmail(p.project_id, email) } : {}),
    ...keys.personsByUuid(p.project_id, p.uuid),
  };
}

/** The items that make a person (for bulk seeding: benchmarks and imports write them with BatchWriteItem). */
export function personItems(person: PersonRecord): Record<string, unknown>[] {
  return [personItem(person), ...person.distinct_ids.map((d) => distinctItem(person.project_id, d, person.id))];
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
    updated_at: String(item.updated_at ?? item.created_at),
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

/** Whether a person transaction was written: false when a condition failed or another writer got there first (re-read and retry). */
async function written(items: TransactItem[]): Promise<boolean> {
  return (await transact(items)).committed;
}

export async function personIdOf(projectId: number, distinctId: string): Promise<number | undefined> {
  const out = await call(() =>
    db().send(
      new GetCommand({ TableName: tableName(), Key: keys.distinctId(projectId, distinctId), ConsistentRead: true }),
    ),
  );
  return out.Item ? Number(out.Item.person_id) : undefined;
}

export async function getPerson(projectId: number, personId: number): Promise<PersonRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.person(projectId, personId), ConsistentRead: true })),
  );
  return out.Item ? personFromItem(out.Item) : undefined;
}

/** Creates a person and claims its distinct ids; false when one of them already belongs to someone. */
export async function insertPerson(person: PersonRecord, change?: PropertyChange): Promise<boolean> {
  const Table = tableName();
  return written([
    ...person.distinct_ids.map((d) => ({
      Put: {
        TableName: Table,
        Item: distinctItem(person.project_id, d, person.id),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    })),
    { Put: { TableName: Table, Item: personItem(person), ConditionExpression: 'attribute_not_exists(pk)' } },
    countDelta(person.project_id, 1),
    ...(change ? [{ Put: { TableName: Table, Item: changeItem(change) } }] : []),
  ]);
}

function countDelta(projectId: number, delta: number): TransactItem {
  return {
    Update: {
      TableName: tableName(),
      Key: keys.personCount(projectId),
      UpdateExpression: 'ADD #c :d SET entity = :e',
      ExpressionAttributeNames: { '#c': 'count' },
      ExpressionAttributeValues: { ':d': delta, ':e': 'PersonCount' },
    },
  };
}

/** The person written as given at its next version, if nobody wrote it since it was read (optimistic concurrency). */
function versionedPut(person: PersonRecord): TransactItem {
  return {
    Put: {
      TableName: tableName(),
      Item: personItem({ ...person, version: person.version + 1 }),
      ConditionExpression: 'version = :v',
      ExpressionAttributeValues: { ':v': person.version },
    },
  };
}

/** The person removed, if nobody wrote it since it was read. */
function versionedDelete(person: PersonRecord): TransactItem {
  return {
    Delete: {
      TableName: tableName(),
      Key: keys.person(person.project_id, person.id),
      ConditionExpression: 'version = :v',
      ExpressionAttributeValues: { ':v': person.version },
    },
  };
}

/**
 * Writes the person as given (its version + 1) if nobody wrote it since it was read at `person.version`;
 * optionally claims new distinct ids in the same transaction. False on a conflict: re-read and retry.
 */
export async function savePerson(
  person: PersonRecord,
  options: { change?: PropertyChange; claim?: string[] } = {},
): Promise<boolean> {
  const Table = tableName();
  return written([
    versionedPut(person),
    ...(options.claim ?? []).map((d) => ({
      Put: {
        TableName: Table,
        Item: distinctItem(person.project_id, d, person.id),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    })),
    ...(options.change ? [{ Put: { TableName: Table, Item: changeItem(options.change) } }] : []),
  ]);
}

const MOVES_PER_TRANSACTION = 90;

/**
 * Merges `source` into `target` (already holding the merged properties and all distinct ids):
 * repoints the source's distinct ids, deletes the source, saves the target. Both versions are checked.
 */
export async function mergePersonInto(
  target: PersonRecord,
  source: PersonRecord,
  change: PropertyChange,
): Promise<boolean> {
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
    if (!(await written(moves.splice(0, MOVES_PER_TRANSACTION).map(repoint)))) return false;
  }
  return written([
    versionedPut(target),
    versionedDelete(source),
    ...moves.map(repoint),
    countDelta(target.project_id, -1),
    { Put: { TableName: Table, Item: changeItem(change) } },
  ]);
}

/** A person's recorded property changes, oldest first: those at `from`..`to` (inclusive), the first `limit` of them. */
export async function listPersonChanges(
  projectId: number,
  personId: number,
  window: { from?: string; to?: string; limit?: number } = {},
): Promise<PropertyChange[]> {
  const items = await queryAll(keys.personPartition(projectId, personId).pk, keys.personChangePrefix, {
    range: keys.changeRange(window.from, window.to),
    limit: window.limit,
  });
  return items.map(changeFromItem);
}

/** Person ids for many (project, distinct id) pairs at once; key `<projectId>#<distinctId>`. */
export async function personIdsOf(pairs: { projectId: number; distinctId: string }[]): Promise<Map<string, number>> {
  const unique = new Map(pairs.map((p) => [`${p.projectId}#${p.distinctId}`, p]));
  const items = await batchGet([...unique.values()].map((p) => keys.distinctId(p.projectId, p.distinctId)));
  return new Map(items.map((item) => [String(item.pk).slice('DISTINCT#'.length), Number(item.person_id)]));
}

export interface ActivityRecord {
  id: string;
  person_id: number;
  project_id: number;
  activity: 'updated' | 'property_deleted' | 'split_person' | 'deleted';
  user: { first_name: string; email: string };
  created_at: string;
  changes: {
    type: 'Person';
    action: 'changed' | 'deleted' | 'split';
    field: string | null;
    before: unknown;
    after: unknown;
  }[];
}

export function activityItem(a: ActivityRecord) {
  return {
    ...keys.personActivity(a.project_id, a.person_id, a.created_at, a.id),
    entity: 'PersonActivity',
    ...a,
    changes: JSON.stringify(a.changes),
  };
}

/** A person edit made through the API: the person (version-checked), its property change and its activity entry, atomically. */
export async function savePersonEdit(
  person: PersonRecord,
  change: PropertyChange,
  activity: ActivityRecord,
): Promise<boolean> {
  const Table = tableName();
  return written([
    versionedPut(person),
    { Put: { TableName: Table, Item: changeItem(change) } },
    { Put: { TableName: Table, Item: activityItem(activity) } },
  ]);
}

/**
 * Removes a person and its distinct ids (new events with those ids will create a new person).
 * The activity entry stays in the person's partition, so the history outlives the person.
 */
export async function deletePersonRecord(person: PersonRecord, activity: ActivityRecord): Promise<boolean> {
  const Table = tableName();
  const ids = [...person.distinct_ids];
  // Distinct ids beyond one transaction's room go first; until the last step the person still owns the rest.
  while (ids.length > MOVES_PER_TRANSACTION) {
    const chunk = ids.splice(0, MOVES_PER_TRANSACTION);
    await written(chunk.map((d) => ({ Delete: { TableName: Table, Key: keys.distinctId(person.project_id, d) } })));
  }
  return written([...removal({ ...person, distinct_ids: ids }, activity), countDelta(person.project_id, -1)]);
}

/** The person, its distinct ids (those still its own) and its activity entry: what removing it writes. */
function removal(person: PersonRecord, activity: ActivityRecord): TransactItem[] {
  const Table = tableName();
  return [
    versionedDelete(person),
    ...person.distinct_ids.map((d) => ({
      Delete: {
        TableName: Table,
        Key: keys.distinctId(person.project_id, d),
        ConditionExpression: 'attribute_not_exists(pk) OR person_id = :p',
        ExpressionAttributeValues: { ':p': person.id },
      },
    })),
    { Put: { TableName: Table, Item: activityItem(activity) } },
  ];
}

/**
 * Removes a distinct id's mapping if it still names `personId` (a person found gone): false when it
 * changed meanwhile (claimed or repointed by ingestion), which is left alone.
 */
export async function releaseDistinctId(projectId: number, distinctId: string, personId: number): Promise<boolean> {
  return written([
    {
      Delete: {
        TableName: tableName(),
        Key: keys.distinctId(projectId, distinctId),
        ConditionExpression: 'person_id = :p',
        ExpressionAttributeValues: { ':p': personId },
      },
    },
  ]);
}

/** Items one transaction may hold (DynamoDB's limit), and how many a person's removal takes. */
export const TRANSACTION_ITEMS = 100;
export const removalItemCount = (person: PersonRecord) => person.distinct_ids.length + 2;

/**
 * Removes several persons of a project in one transaction (bulk deletes): all of them, each at the
 * version it was read, or none (false). One counter update for all: the counter is a single item,
 * and transactions updating it side by side would conflict.
 */
export async function deletePersonRecords(
  removals: { person: PersonRecord; activity: ActivityRecord }[],
): Promise<boolean> {
  if (removals.length === 0) return true;
  return written([
    ...removals.flatMap((r) => removal(r.person, r.activity)),
    countDelta(removals[0]!.person.project_id, -removals.length),
  ]);
}

/**
 * Splits a person: it keeps `keep` (and its properties); every other distinct id gets a new person
 * with no properties. All in one transaction (so at most ~30 ids at a time; the caller chunks).
 */
export async function splitPersonRecord(
  person: PersonRecord,
  keep: string[],
  fresh: PersonRecord[],
  activity?: ActivityRecord,
): Promise<boolean> {
  const Table = tableName();
  return written([
    versionedPut({ ...person, distinct_ids: keep }),
    ...fresh.flatMap((p) => [
      { Put: { TableName: Table, Item: personItem(p), ConditionExpression: 'attribute_not_exists(pk)' } },
      ...p.distinct_ids.map((d) => ({
        Put: {
          TableName: Table,
          Item: distinctItem(p.project_id, d, p.id),
          ConditionExpression: 'person_id = :old',
          ExpressionAttributeValues: { ':old': person.id },
        },
      })),
    ]),
    countDelta(person.project_id, fresh.length),
    ...(activity ? [{ Put: { TableName: Table, Item: activityItem(activity) } }] : []),
  ]);
}

export async function personCount(projectId: number): Promise<number> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.personCount(projectId), ConsistentRead: true })),
  );
  return Number(out.Item?.count ?? 0);
}

type PageKey = Record<string, unknown>;

/**
 * A position in a project's persons (newest first), opaque above this module: the domain passes it
 * back (inside its list cursors) without looking inside; personsPosition() checks one read back.
 */
export type PersonsPosition = string & { readonly __personsPosition: unique symbol };

const positionOf = (key: PageKey) => JSON.stringify(key) as PersonsPosition;

/**
 * A position read back from a client's cursor, when it is one `personsPage` of this project could
 * have returned (anything else would reach DynamoDB as a bad start key); undefined otherwise.
 * The key object that cursors carried before positions were strings is accepted too.
 */
export function personsPosition(projectId: number, raw: unknown): PersonsPosition | undefined {
  let key = raw;
  if (typeof raw === 'string') {
    try {
      key = JSON.parse(raw);
    } catch {
      return undefined;
    }
  }
  return isPersonPageKey(projectId, key) ? positionOf(key) : undefined;
}

/** One page of a project's persons, newest first, after `after` (a previous page's position); each with its own position. */
export async function personsPage(
  projectId: number,
  options: { limit: number; after?: PersonsPosition },
): Promise<{ persons: { person: PersonRecord; position: PersonsPosition }[]; next?: PersonsPosition }> {
  const out = await queryPersons(projectId, {
    limit: options.limit,
    startKey: options.after && (JSON.parse(options.after) as PageKey),
  });
  return {
    persons: out.persons.map(({ person, key }) => ({ person, position: positionOf(key) })),
    ...(out.nextKey ? { next: positionOf(out.nextKey) } : {}),
  };
}

/** One read of a project's persons, newest first, from `startKey` (a previous page's end). */
async function queryPersons(
  projectId: number,
  options: { limit: number; startKey?: PageKey },
): Promise<{ persons: { person: PersonRecord; key: PageKey }[]; nextKey?: PageKey }> {
  const out = await queryPersonsIndex(projectId, options.limit, options.startKey);
  return {
    persons: (out.Items ?? []).map((item) => ({ person: personFromItem(item), key: pageKeyOf(item) })),
    nextKey: out.LastEvaluatedKey,
  };
}

/** One Query of the project's persons on the parent index, newest first (or oldest first when `ascending`). */
function queryPersonsIndex(
  projectId: number,
  limit: number,
  startKey?: PageKey,
  projection?: string,
  ascending = false,
) {
  const index = TABLE_SCHEMA.indexes.byParent;
  return call(() =>
    db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: index.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': index.partitionKey },
        ExpressionAttributeValues: { ':p': keys.personsOfProject(projectId, '', 0).parent_pk },
        ScanIndexForward: ascending,
        Limit: limit,
        ExclusiveStartKey: startKey,
        ...(projection ? { ProjectionExpression: projection } : {}),
      }),
    ),
  );
}

const pageKeyOf = (item: Record<string, unknown>): PageKey => ({
  pk: item.pk,
  sk: item.sk,
  parent_pk: item.parent_pk,
  parent_sk: item.parent_sk,
});

/** Whether a page key (from a client's cursor) is one `queryPersons` of this project could have returned. */
export function isPersonPageKey(projectId: number, key: unknown): key is PageKey {
  if (!key || typeof key !== 'object' || Array.isArray(key)) return false;
  const k = key as Record<string, unknown>;
  const { parent_pk } = keys.personsOfProject(projectId, '', 0);
  return (
    Object.keys(k).length === 4 &&
    k.parent_pk === parent_pk &&
    k.sk === 'PERSON' &&
    typeof k.pk === 'string' &&
    new RegExp(`^PERSON#${projectId}#\\d{1,15}$`).test(k.pk) &&
    typeof k.parent_sk === 'string' &&
    /^[0-9T:.Z-]{1,40}#\d{12,15}$/.test(k.parent_sk)
  );
}

/** The position after the first `count` persons (newest first), reading keys only; undefined when there are no more. */
export async function personsPositionAfter(projectId: number, count: number): Promise<PersonsPosition | undefined> {
  const key = await skipPersons(projectId, count);
  return key && positionOf(key);
}

async function skipPersons(projectId: number, count: number): Promise<PageKey | undefined> {
  let startKey: PageKey | undefined;
  let left = count;
  while (left > 0) {
    const out = await queryPersonsIndex(projectId, Math.min(left, 1000), startKey, 'pk, sk, parent_pk, parent_sk');
    const items = out.Items ?? [];
    left -= items.length;
    if (!out.LastEvaluatedKey || items.length === 0) return left > 0 ? undefined : pageKeyOf(items.at(-1)!);
    startKey = left > 0 ? out.LastEvaluatedKey : pageKeyOf(items.at(-1)!);
  }
  return startKey;
}

const SORT_KEY_PATTERN = /^([0-9T:.Z+-]{1,40})#(\d{12,15})$/;

/**
 * One read of a project's persons in creation order (`created_at`, then id), ascending or descending,
 * strictly after `after`: a person's sort key (its index `parent_sk`, which never changes), so a read
 * resumes at the same place whatever was created or deleted since (that person may be gone too).
 */
export async function personsInCreationOrder(
  projectId: number,
  options: { ascending: boolean; limit: number; after?: string },
): Promise<{ persons: { person: PersonRecord; sortKey: string }[]; more: boolean }> {
  let startKey: PageKey | undefined;
  if (options.after !== undefined) {
    const parts = SORT_KEY_PATTERN.exec(options.after);
    if (!parts) throw new Error(`not a person sort key: ${options.after.slice(0, 60)}`);
    const id = Number(parts[2]);
    startKey = { ...keys.person(projectId, id), ...keys.personsOfProject(projectId, parts[1]!, id) };
  }
  const out = await queryPersonsIndex(projectId, options.limit, startKey, undefined, options.ascending);
  return {
    persons: (out.Items ?? []).map((item) => ({ person: personFromItem(item), sortKey: String(item.parent_sk) })),
    more: out.LastEvaluatedKey !== undefined,
  };
}

const UUID_LOOKUPS_IN_FLIGHT = 16;

/**
 * The person ids of a project's persons with these uuids (any case), by lower-cased uuid: one Query
 * of the keys-only personsByUuid index per uuid. A uuid of no person of the project is absent.
 */
export async function personIdsOfUuids(projectId: number, uuids: readonly string[]): Promise<Map<string, number>> {
  const index = TABLE_SCHEMA.indexes.personsByUuid;
  const found = new Map<string, number>();
  await inParallel([...new Set(uuids.map((u) => u.toLowerCase()))], UUID_LOOKUPS_IN_FLIGHT, async (uuid) => {
    const [item] = await queryItems(
      {
        IndexName: index.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': index.partitionKey },
        ExpressionAttributeValues: { ':p': keys.personsByUuid(projectId, uuid).uuid_pk },
      },
      1,
    );
    if (item) found.set(uuid, keys.personIdOfKey(String(item.pk)));
  });
  return found;
}

/**
 * Writes `uuid_pk` on person items written before the personsByUuid index existed (`npm run migrate
 * -- person-uuids`); returns how many. Repeatable: a person that has it, or is gone, is skipped.
 */
export async function indexPersonUuids(): Promise<number> {
  let indexed = 0;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await call(() =>
      db().send(
        new ScanCommand({
          TableName: tableName(),
          FilterExpression: 'entity = :e AND attribute_not_exists(#u)',
          ExpressionAttributeNames: { '#u': TABLE_SCHEMA.indexes.personsByUuid.partitionKey },
          ExpressionAttributeValues: { ':e': 'Person' },
          ExclusiveStartKey,
        }),
      ),
    );
    await inParallel(page.Items ?? [], UUID_LOOKUPS_IN_FLIGHT, async (item) => {
      const { uuid_pk } = keys.personsByUuid(Number(item.project_id), String(item.uuid));
      // Undefined: deleted (or merged away) since the scan read it, nothing to index.
      const written = await conditional(() =>
        db().send(
          new UpdateCommand({
            TableName: tableName(),
            Key: { pk: item.pk, sk: item.sk },
            UpdateExpression: 'SET #u = :u',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#u': TABLE_SCHEMA.indexes.personsByUuid.partitionKey },
            ExpressionAttributeValues: { ':u': uuid_pk },
          }),
        ),
      );
      if (written) indexed += 1;
    });
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return indexed;
}

/** Persons whose e-mail equals this one, ignoring case (the index); the caller compares exactly. */
export async function personsWithEmail(projectId: number, email: string): Promise<PersonRecord[]> {
  const index = TABLE_SCHEMA.indexes.personsByEmail;
  const items = await queryItems({
    IndexName: index.name,
    KeyConditionExpression: '#p = :p',
    ExpressionAttributeNames: { '#p': index.partitionKey },
    ExpressionAttributeValues: { ':p': keys.personsByEmail(projectId, email.toLowerCase()).email_pk },
    ScanIndexForward: false,
  });
  return items.map(personFromItem);
}

/** A person's API changes, newest first: the first `limit` of them. */
export async function listPersonActivity(
  projectId: number,
  personId: number,
  limit: number,
): Promise<ActivityRecord[]> {
  const items = await queryAll(keys.personPartition(projectId, personId).pk, keys.personActivityPrefix, {
    newestFirst: true,
    limit,
  });
  return items.map((item) => ({
    ...(item as unknown as ActivityRecord),
    changes: JSON.parse(String(item.changes ?? '[]')),
  }));
}

/** A new person id: integers counted per project (a global counter would be one hot item). */
export async function nextPersonId(projectId: number): Promise<number> {
  return nextId(keys.personCounter(projectId));
}

/** Many persons of a project at once (BatchGetItem). */
export async function getPersons(projectId: number, ids: number[]): Promise<PersonRecord[]> {
  return (await batchGet([...new Set(ids)].map((id) => keys.person(projectId, id)))).map(personFromItem);
}
