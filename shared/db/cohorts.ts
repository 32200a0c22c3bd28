import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { batchDelete, batchGet, batchPut } from './batch.ts';
import { call, conditional, db, tableName, transact } from './client.ts';
import { nextId } from './counters.ts';
import { record } from './items.ts';
import { keys } from './keys.ts';
import { dueKeys, queryAll } from './query.ts';

/** Where a running recalculation is: the calculation's id, the last person examined, members written so far. */
export interface CohortCalculation {
  id: string;
  /** The last person examined (its creation-order sort key); absent before the first page. */
  after?: string;
  matched: number;
  /** `scan`: persons are examined; `sweep`: members the calculation did not write are removed. */
  phase: 'scan' | 'sweep';
  /** The sweep's position: the last member person id examined. */
  sweep_after?: number;
  /** Members the sweep kept so far (the count, once it ends). */
  kept?: number;
  /** When the calculation started: every step evaluates the definition (behavioural windows) at this instant. Absent on calculations started before the field. */
  started_at?: string;
  /** When a step last saved progress: a calculation silent for STUCK_AFTER_MS is restarted by the schedule. */
  touched_at: string;
}

export interface CohortRecord {
  id: number;
  project_id: number;
  name: string;
  description: string;
  /** PostHog's `filters` as given (validated), stored as JSON. */
  filters: unknown;
  is_static: boolean;
  deleted: boolean;
  created_at: string;
  created_by: { email: string; first_name: string };
  count: number | null;
  is_calculating: boolean;
  last_calculation: string | null;
  errors_calculating: number;
  /** Whether the definition has behavioural leaves (recalculated on a schedule). */
  behavioural: boolean;
  /** Cohort ids its `cohort` leaves name (loops are refused against these). */
  references: number[];
  calculation?: CohortCalculation;
  version: number;
}

const item = (c: CohortRecord) => ({
  ...keys.cohort(c.project_id, c.id),
  entity: 'Cohort',
  ...c,
  filters: JSON.stringify(c.filters),
  ...(c.calculation ? { calculation: JSON.stringify(c.calculation) } : {}),
  ...dueEntry(c),
});

/** PostHog recalculates behavioural cohorts every 24 hours. */
export const BEHAVIOURAL_RECALCULATION_MS = 24 * 3_600_000;
/** A calculation that saved no progress for this long lost its message: the schedule starts it again. */
export const STUCK_AFTER_MS = 30 * 60_000;
const plus = (iso: string, ms: number) => new Date(new Date(iso).getTime() + ms).toISOString();

/**
 * The schedule's entry (dueByTime): a calculation in flight is due once it has been silent too long;
 * a live behavioural cohort 24 h after its last calculation; others never.
 */
function dueEntry(c: CohortRecord) {
  if (c.deleted || c.is_static) return {};
  if (c.calculation) return keys.cohortDue(plus(c.calculation.touched_at, STUCK_AFTER_MS), c.project_id, c.id);
  if (c.behavioural)
    return keys.cohortDue(plus(c.last_calculation ?? c.created_at, BEHAVIOURAL_RECALCULATION_MS), c.project_id, c.id);
  return {};
}

function fromItem(i: Record<string, unknown>): CohortRecord {
  const r = record<CohortRecord & { calculation?: string; filters: string }>(i)!;
  const { calculation, ...rest } = r;
  return {
    ...rest,
    filters: JSON.parse(String(r.filters ?? 'null')),
    ...(calculation ? { calculation: JSON.parse(calculation) as CohortCalculation } : {}),
    count: r.count === null || r.count === undefined ? null : Number(r.count),
    references: (r.references as number[] | undefined)?.map(Number) ?? [],
    version: Number(r.version ?? 0),
  };
}

export async function nextCohortId(projectId: number): Promise<number> {
  return nextId(keys.cohortCounter(projectId));
}

/** Writes a cohort: new (`expected` undefined) or over the version read (false when another writer got there first). */
export async function putCohort(c: CohortRecord, expected?: number): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new PutCommand({
          TableName: tableName(),
          Item: item(c),
          ConditionExpression: expected === undefined ? 'attribute_not_exists(pk)' : 'version = :v',
          ...(expected === undefined ? {} : { ExpressionAttributeValues: { ':v': expected } }),
        }),
      ),
    )) !== undefined
  );
}

export async function getCohort(projectId: number, cohortId: number): Promise<CohortRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.cohort(projectId, cohortId), ConsistentRead: true })),
  );
  return out.Item ? fromItem(out.Item) : undefined;
}

export async function getCohorts(projectId: number, ids: number[]): Promise<CohortRecord[]> {
  return (await batchGet([...new Set(ids)].map((id) => keys.cohort(projectId, id)))).map(fromItem);
}

/** A project's cohorts by id, deleted ones included (capped per project: one partition, read whole). */
export async function listCohorts(projectId: number): Promise<CohortRecord[]> {
  const { pk, skPrefix } = keys.cohortsOfProject(projectId);
  return (await queryAll(pk, skPrefix)).map(fromItem);
}

/** Adds `delta` to a cohort's count (a membership the ingest worker added or removed). */
export async function addToCohortCount(projectId: number, cohortId: number, delta: number): Promise<void> {
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.cohort(projectId, cohortId),
        UpdateExpression: 'ADD #c :d',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#c': 'count' },
        ExpressionAttributeValues: { ':d': delta },
      }),
    ),
  );
}

/** The cohorts due for their scheduled recalculation at `now` (dueByTime). */
export async function dueCohorts(now: Date, limit: number): Promise<{ projectId: number; cohortId: number }[]> {
  return (await dueKeys(keys.cohortDuePk, now, limit)).flatMap((k) => {
    const m = /^COHORTS#(\d+)$/.exec(k.pk);
    const n = /^COHORT#(\d+)$/.exec(k.sk);
    return m && n ? [{ projectId: Number(m[1]), cohortId: Number(n[1]) }] : [];
  });
}

// ---------------------------------------------------------------------------------------------
// Membership: two items per (cohort, person), written and removed together (#110, #111)
// ---------------------------------------------------------------------------------------------

const memberItems = (projectId: number, cohortId: number, personId: number, calc: string) => [
  { ...keys.cohortMember(projectId, cohortId, personId), entity: 'CohortMember', person_id: personId, calc },
  { ...keys.personCohort(projectId, personId, cohortId), entity: 'PersonCohort', cohort_id: cohortId, calc },
];

/** Writes memberships (a calculation's page, a static upload), tagged with the calculation that wrote them. */
export async function putMembers(projectId: number, cohortId: number, personIds: number[], calc: string) {
  await batchPut(personIds.flatMap((id) => memberItems(projectId, cohortId, id, calc)));
}

export async function deleteMembers(projectId: number, cohortId: number, personIds: number[]) {
  await batchDelete(
    personIds.flatMap((id) => [keys.cohortMember(projectId, cohortId, id), keys.personCohort(projectId, id, cohortId)]),
  );
}

/** Adds one membership and counts it, once: false when the person was already a member. */
export async function addMember(projectId: number, cohortId: number, personId: number, calc: string) {
  const [member, pointer] = memberItems(projectId, cohortId, personId, calc);
  const Table = tableName();
  return (
    await transact([
      { Put: { TableName: Table, Item: member!, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: Table, Item: pointer! } },
      {
        Update: {
          TableName: Table,
          Key: keys.cohort(projectId, cohortId),
          UpdateExpression: 'ADD #c :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#c': 'count' },
          ExpressionAttributeValues: { ':one': 1 },
        },
      },
    ])
  ).committed;
}

/** Removes one membership and uncounts it, once: false when the person was not a member. */
export async function removeMember(projectId: number, cohortId: number, personId: number) {
  const Table = tableName();
  return (
    await transact([
      {
        Delete: {
          TableName: Table,
          Key: keys.cohortMember(projectId, cohortId, personId),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
      { Delete: { TableName: Table, Key: keys.personCohort(projectId, personId, cohortId) } },
      {
        Update: {
          TableName: Table,
          Key: keys.cohort(projectId, cohortId),
          UpdateExpression: 'ADD #c :minus',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#c': 'count' },
          ExpressionAttributeValues: { ':minus': -1 },
        },
      },
    ])
  ).committed;
}

/** One page of a cohort's members by person id, after `afterPersonId` (#110). */
export async function membersPage(
  projectId: number,
  cohortId: number,
  options: { limit: number; afterPersonId?: number },
): Promise<{ members: { personId: number; calc: string }[]; more: boolean }> {
  const { pk, skPrefix } = keys.cohortMembers(projectId, cohortId);
  const start =
    options.afterPersonId === undefined ? undefined : keys.cohortMember(projectId, cohortId, options.afterPersonId);
  const out = await call(() =>
    db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':pk': pk, ':p': skPrefix },
        Limit: options.limit,
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: { pk: start.pk, sk: start.sk } } : {}),
      }),
    ),
  );
  return {
    members: (out.Items ?? []).map((i) => ({ personId: Number(i.person_id), calc: String(i.calc) })),
    more: out.LastEvaluatedKey !== undefined,
  };
}

/** Which of these persons are members of the cohort (one BatchGetItem per 100). */
export async function membersAmong(projectId: number, cohortId: number, personIds: number[]): Promise<Set<number>> {
  const found = await batchGet(
    personIds.map((id) => keys.cohortMember(projectId, cohortId, id)),
    { expression: '#p', names: { '#p': 'person_id' } },
  );
  return new Set(found.map((i) => Number(i.person_id)));
}

/** The cohorts a person is in, by cohort id (#111). */
export async function cohortIdsOfPerson(projectId: number, personId: number): Promise<number[]> {
  const items = await queryAll(keys.personPartition(projectId, personId).pk, keys.personCohortPrefix, {
    projection: { expression: '#c', names: { '#c': 'cohort_id' } },
  });
  return items.map((i) => Number(i.cohort_id));
}

/** A deleted person leaves every cohort, each count kept (#111 then #110 per cohort). */
export async function leaveCohorts(projectId: number, personId: number): Promise<void> {
  for (const cohortId of await cohortIdsOfPerson(projectId, personId))
    await removeMember(projectId, cohortId, personId);
}
