/**
 * Lake hides: what the lake's files still hold but must not serve (shared/domain/lake-hides.ts says
 * when one is made and when it goes). One item per hide in the project's partition, sorted by id
 * (UUID v7: time order); a hide whose days are not yet known carries a dueByTime entry the compactor
 * takes. Access patterns #136-#139 (docs/access-patterns.md).
 */
import { UpdateCommand } from '../aws/dynamodb.ts';
import { batchDelete, batchGet, batchPut, inParallel } from './batch.ts';
import { conditional, db, tableName } from './client.ts';
import { keys } from './keys.ts';
import { dueKeys, queryAll } from './query.ts';

export interface LakeHideRecord {
  projectId: number;
  /** UUID v7. */
  id: string;
  /** When it was recorded (ISO): a day rewritten from at least a minute later no longer needs it. */
  at: string;
  /**
   * `person`: the person is deleted, its person columns read NULL; `properties`: these keys were
   * removed from the person, they read NULL; `events`: the distinct ids' events up to `until` are
   * deleted, their rows are not served.
   */
  kind: 'person' | 'properties' | 'events';
  /** The person's uuid (`person`, `properties`). */
  personUuid?: string;
  /** The removed keys (`properties`). */
  keys?: string[];
  /** The person's distinct ids (where its events are), or those whose events are deleted. */
  distinctIds: string[];
  /** ISO: events up to this time are deleted (`events`). */
  until?: string;
  /** The UTC days whose rewrite it waits for; undefined while the compactor has not found them. */
  days?: string[];
  /** Every day rewritten: it stays (and is applied) until its dueByTime entry, then is deleted. */
  settled?: boolean;
}

function item(h: LakeHideRecord): Record<string, unknown> {
  return {
    ...keys.lakeHide(h.projectId, h.id),
    ...(h.days ? {} : keys.lakeHideDue(h.at, h.projectId, h.id)),
    entity: 'LakeHide',
    project_id: h.projectId,
    at: h.at,
    kind: h.kind,
    ...(h.personUuid ? { person_uuid: h.personUuid } : {}),
    ...(h.keys?.length ? { keys: h.keys } : {}),
    distinct_ids: h.distinctIds,
    ...(h.until ? { until: h.until } : {}),
    ...(h.days?.length ? { days: new Set(h.days) } : {}),
  };
}

function record(i: Record<string, unknown>): LakeHideRecord {
  const days = i.days instanceof Set ? [...(i.days as Set<string>)].sort() : undefined;
  return {
    projectId: Number(i.project_id),
    id: String(i.sk),
    at: String(i.at),
    kind: i.kind as LakeHideRecord['kind'],
    ...(typeof i.person_uuid === 'string' ? { personUuid: i.person_uuid } : {}),
    ...(Array.isArray(i.keys) ? { keys: i.keys.map(String) } : {}),
    distinctIds: Array.isArray(i.distinct_ids) ? i.distinct_ids.map(String) : [],
    ...(typeof i.until === 'string' ? { until: i.until } : {}),
    // Resolved (no due entry) or settled with no days left: an empty set is no attribute in DynamoDB.
    ...(days ? { days } : i.due_pk === undefined || i.settled === true ? { days: [] } : {}),
    ...(i.settled === true ? { settled: true } : {}),
  };
}

/** #136: puts hides (BatchWriteItem, 25 a call). */
export async function putLakeHides(hides: readonly LakeHideRecord[]): Promise<void> {
  await batchPut(hides.map(item));
}

/** #137: the project's hides; with `limit`, at most that many (the caller's cap + 1, so it knows when there are more). */
export async function readLakeHides(projectId: number, limit?: number): Promise<LakeHideRecord[]> {
  const items = await queryAll(keys.lakeHidePartition(projectId).pk, '', { limit });
  return items.map(record);
}

/** #138: hides whose days the compactor has yet to find, and settled ones whose time is up; oldest first. */
export async function dueLakeHides(now: Date, limit: number): Promise<LakeHideRecord[]> {
  const found = await dueKeys(keys.lakeHideDue('', 0, '').due_pk, now, limit);
  return (await batchGet(found)).map(record);
}

/**
 * #138: the hide's days are known: added to its set, its due entry removed. Only while it is still
 * due when `ifDue` (the compactor's finding must not undo a later one). False: someone else resolved it.
 */
export async function resolveLakeHide(
  h: LakeHideRecord,
  days: readonly string[],
  ifDue: boolean,
  settledUntil: string,
): Promise<boolean> {
  const done = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.lakeHide(h.projectId, h.id),
        UpdateExpression: days.length ? 'ADD #days :days REMOVE due_pk, due_sk' : 'REMOVE due_pk, due_sk',
        ConditionExpression: ifDue ? 'attribute_exists(due_pk)' : 'attribute_exists(pk)',
        ...(days.length ? { ExpressionAttributeNames: { '#days': 'days' } } : {}),
        ...(days.length ? { ExpressionAttributeValues: { ':days': new Set(days) } } : {}),
      }),
    ),
  );
  if (done === undefined) return false;
  if (!days.length) await settleIfDone(h.projectId, h.id, settledUntil);
  return true;
}

/** #139: `day` was rewritten; each hide waiting for it no longer does, and one waiting for nothing is settled until `settledUntil(at)`. */
export async function settleLakeHides(
  projectId: number,
  day: string,
  ids: readonly string[],
  settledUntil: (at: string) => string,
): Promise<void> {
  await inParallel(ids, 8, async (id) => {
    const out = await conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.lakeHide(projectId, id),
          UpdateExpression: 'DELETE #days :day',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#days': 'days' },
          ExpressionAttributeValues: { ':day': new Set([day]) },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    const left = out?.Attributes;
    if (left && !left.days && left.due_pk === undefined)
      await settleIfDone(projectId, id, settledUntil(String(left.at)));
  });
}

/** Marks a hide that waits for no day (and is not due: a resolution racing it keeps it) settled, due for deletion at `until`. */
async function settleIfDone(projectId: number, id: string, until: string): Promise<void> {
  const due = keys.lakeHideDue(until, projectId, id);
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.lakeHide(projectId, id),
        UpdateExpression: 'SET settled = :true, due_pk = :dp, due_sk = :ds',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#days) AND attribute_not_exists(due_pk)',
        ExpressionAttributeNames: { '#days': 'days' },
        ExpressionAttributeValues: { ':true': true, ':dp': due.due_pk, ':ds': due.due_sk },
      }),
    ),
  );
}

/** #136, #138: hides replaced by later ones (the drain's, once it knows the days), and settled ones whose time is up. */
export async function deleteLakeHides(projectId: number, ids: readonly string[]): Promise<void> {
  await batchDelete(ids.map((id) => keys.lakeHide(projectId, id)));
}
