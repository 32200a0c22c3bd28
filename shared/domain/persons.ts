import * as v from 'valibot';
import { type TimelineRange, timeline } from './timeline.ts';
import { nowIso } from '../clock.ts';
import { config } from '../config.ts';
import { inParallel } from '../db/batch.ts';
import { leaveCohorts } from '../db/cohorts.ts';
import { bumpAnswersGeneration, bumpPersonsVersion } from '../db/projects.ts';
import {
  deletePersonRecord,
  deletePersonRecords,
  getPerson,
  getPersons,
  listPersonActivity,
  listPersonChanges,
  personCount,
  personIdOf,
  personIdsOf,
  personIdsOfUuids,
  nextPersonId,
  personsPage,
  personsPosition,
  personsPositionAfter,
  personsWithEmail,
  releaseDistinctId,
  removalItemCount,
  savePersonEdit,
  splitPersonRecord,
  TRANSACTION_ITEMS,
  type ActivityRecord,
  type PersonsPosition,
  type PersonRecord,
  type PropertyChange,
} from '../db/persons.ts';
import { Conflict, NotFound, ValidationError } from '../errors.ts';
import { UUID_PATTERN, uuidv7 } from '../ids.ts';
import { parseQueuedMessage } from '../json.ts';
import type { Caller } from './access.ts';
import type { QueuedBulkDelete } from '../queues/person-bulk-deletes.ts';
import type { DeletionRequest } from '../queues/person-deletions.ts';
import { TRANSIENT, conflictIfFalse, retryTransient } from '../retry.ts';
import { refreshPersonCohorts } from './cohort-membership.ts';
import { hideDeletedPersons, hideRemovedProperties, removedKeys } from './lake-hides.ts';
import { applyPersonUpdates } from './person-properties.ts';
import { notePersonPropertyKeys } from './property-definitions.ts';

/** PostHog's default person display-name properties, first non-empty one wins. */
export const NAME_PROPERTIES = ['email', 'Email', '$email', 'name', 'Name', 'username', 'Username', 'UserName'];

/** The spec's Person (§2.5): integer id everywhere; identified (non-UUID) distinct ids first, as PostHog orders them. */
export function personResponse(p: PersonRecord) {
  const named = NAME_PROPERTIES.map((k) => p.properties[k]).find((v) => typeof v === 'string' && v !== '');
  const distinctIds = [...p.distinct_ids].sort((a, b) => Number(UUID_PATTERN.test(a)) - Number(UUID_PATTERN.test(b)));
  return {
    id: p.id,
    name: (named as string | undefined) ?? distinctIds[0] ?? String(p.id),
    distinct_ids: distinctIds,
    properties: p.properties,
    created_at: p.created_at,
    uuid: p.uuid,
  };
}

export type PersonResponse = ReturnType<typeof personResponse>;

export async function findPerson(projectId: number, personId: number): Promise<PersonRecord> {
  const person = await getPerson(projectId, personId);
  if (!person) throw new NotFound();
  return person;
}

// ---------------------------------------------------------------------------------------------
// List
// ---------------------------------------------------------------------------------------------

export interface PersonListQuery {
  limit: number;
  offset: number;
  cursor?: string;
  distinct_id?: string;
  email?: string;
  search?: string;
  /** Person-property predicate built from the `properties` parameter (person-type filters). */
  matches?: (properties: Record<string, unknown>, personId: number) => boolean;
  /** When the request must answer (epoch ms): a filtered scan stops there too. */
  deadline?: number;
}

export interface PersonPage {
  count: number;
  results: PersonResponse[];
  /** Opaque position after this page, when more results exist. */
  nextCursor?: string;
  /** The `offset` of the next page when it is not offset + limit (a filtered page the scan limit cut short). */
  nextOffset?: number;
  hasMore: boolean;
  /** A filtered scan stopped at its limit: the page may be short and `count` counts only the matches seen; `next` resumes it. */
  scanLimited?: boolean;
}

/** A position in the project's persons (newest first) and how many results of the list lie before it. */
interface Cursor {
  position: PersonsPosition;
  offset: number;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify({ key: c.position, offset: c.offset })).toString('base64url');
}

function decodeCursor(raw: string, projectId: number): Cursor {
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as { key?: unknown; offset?: unknown };
    // Only a position this project's list could have produced (the store checks it).
    const position = c ? personsPosition(projectId, c.key) : undefined;
    if (position && typeof c.offset === 'number' && Number.isInteger(c.offset) && c.offset >= 0)
      return { position, offset: c.offset };
  } catch {
    // fall through
  }
  throw new ValidationError('Invalid cursor.', 'cursor');
}

const byNewest = (a: PersonRecord, b: PersonRecord) =>
  a.created_at === b.created_at ? b.id - a.id : a.created_at < b.created_at ? 1 : -1;

function page(all: PersonRecord[], q: PersonListQuery): PersonPage {
  const results = all.slice(q.offset, q.offset + q.limit).map(personResponse);
  return { count: all.length, results, hasMore: q.offset + q.limit < all.length };
}

/**
 * Persons newest first. Exact lookups (distinct_id, email) read an index, never the project; an
 * unfiltered list reads only its page (count from the kept counter, cursor to continue); search and
 * property filters read the project's persons in order, a bounded number per request (see scanPage).
 */
export async function listPersons(projectId: number, q: PersonListQuery): Promise<PersonPage> {
  const keep = (p: PersonRecord) =>
    (!q.matches || q.matches(p.properties, p.id)) && (!q.email || p.properties.email === q.email);
  if (q.distinct_id !== undefined) {
    const id = await personIdOf(projectId, q.distinct_id);
    const person = id === undefined ? undefined : await getPerson(projectId, id);
    return page(person && keep(person) && (!q.search || searchMatches(person, q.search)) ? [person] : [], q);
  }
  if (q.email !== undefined) {
    const found = (await personsWithEmail(projectId, q.email)).filter(
      (p) => keep(p) && (!q.search || searchMatches(p, q.search)),
    );
    return page(found.sort(byNewest), q);
  }
  if (q.search !== undefined || q.matches) return scanPage(projectId, q);
  return unfilteredPage(projectId, q);
}

function searchMatches(p: PersonRecord, search: string): boolean {
  const email = typeof p.properties.email === 'string' ? p.properties.email.toLowerCase() : '';
  return email.includes(search.toLowerCase()) || p.distinct_ids.includes(search) || p.uuid === search.toLowerCase();
}

const SCAN_PAGE = 500;
/** Query calls per filtered request: each reads up to 1 MB, so persons with large properties cannot make one request read without bound. */
const SCAN_READS = 40;

/**
 * One page of a filtered list: reads the project's persons newest first from the cursor's position
 * (or the start, skipping `offset` matches), fills the page, then goes on counting the matches after
 * it, until the persons run out or the scan reaches its limit (`config().personScanLimit` persons
 * examined, SCAN_READS reads or the request's deadline). So `count` is exact whenever the rest of the
 * project fits in one scan (as before for all but large projects). Cut short (`scanLimited`), the
 * page has the matches found so far (maybe fewer than `limit`), `count` counts the matches seen, and
 * `next` carries a cursor just after the last result or, on a short page, the last person examined:
 * following `next` resumes the scan, so a client walking `next` sees every match exactly once.
 */
async function scanPage(projectId: number, q: PersonListQuery): Promise<PersonPage> {
  const cursor = q.cursor ? decodeCursor(q.cursor, projectId) : undefined;
  const keep = (p: PersonRecord) =>
    (!q.matches || q.matches(p.properties, p.id)) && (q.search === undefined || searchMatches(p, q.search));
  const scanLimit = config().personScanLimit;
  let before = cursor?.offset ?? 0;
  let after = cursor?.position;
  let resume = after;
  const results: PersonRecord[] = [];
  let beyond = 0;
  let examined = 0;
  let reads = 0;
  let exhausted = false;
  while (examined < scanLimit && reads < SCAN_READS && !(q.deadline !== undefined && Date.now() >= q.deadline)) {
    const out = await personsPage(projectId, { limit: Math.min(SCAN_PAGE, scanLimit - examined), after });
    reads += 1;
    for (const { person, position } of out.persons) {
      examined += 1;
      const match = keep(person);
      if (results.length === q.limit) {
        if (match) beyond += 1;
        continue;
      }
      if (match && before < q.offset) before += 1;
      else if (match) results.push(person);
      resume = position;
    }
    after = out.next;
    if (!after) {
      exhausted = true;
      break;
    }
  }
  const hasMore = beyond > 0 || !exhausted;
  return {
    count: before + results.length + beyond,
    results: results.map(personResponse),
    hasMore,
    nextCursor: hasMore && resume ? encodeCursor({ position: resume, offset: before + results.length }) : undefined,
    nextOffset: hasMore ? Math.max(q.offset, before) + results.length : undefined,
    ...(exhausted ? {} : { scanLimited: true }),
  };
}

/**
 * Visits the project's persons newest first within the filtered list's bounds (`personScanLimit`
 * persons, SCAN_READS reads, the deadline), until `visit` answers false. `complete` when every person
 * was visited or `visit` stopped the walk; false when a bound cut it short.
 */
async function walkPersons(
  projectId: number,
  visit: (person: PersonRecord) => boolean,
  deadline?: number,
): Promise<{ complete: boolean }> {
  const scanLimit = config().personScanLimit;
  let after: PersonsPosition | undefined;
  let examined = 0;
  for (let reads = 0; reads < SCAN_READS && examined < scanLimit; reads += 1) {
    if (deadline !== undefined && Date.now() >= deadline) break;
    const out = await personsPage(projectId, { limit: Math.min(SCAN_PAGE, scanLimit - examined), after });
    for (const { person } of out.persons) {
      examined += 1;
      if (!visit(person)) return { complete: true };
    }
    if (!out.next) return { complete: true };
    after = out.next;
  }
  return { complete: false };
}

/** PostHog's person property values: the 20 most common (its LIMIT 20), from the newest persons it reads (its 100,000; ours the scan limit). */
export const PROPERTY_VALUES_LIMIT = 20;

/** Python's json.dumps(sort_keys=True): keys sorted, `, ` and `: ` between items. */
function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const items = Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}: ${pythonJson(record[k])}`);
    return `{${items.join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** PostHog's convert_property_value: every value named by a string, objects and lists as Python's JSON. */
function propertyValueName(value: unknown): string {
  return value !== null && typeof value === 'object' ? pythonJson(value) : String(value);
}

/**
 * `GET persons/values?key=&value=`: the values of one person property with how many persons hold
 * each, most common first, optionally those containing `value` (case-insensitive). `distinct_id` is
 * answered from the persons' distinct ids (count 1 each, in order), as PostHog does. The persons read
 * are bounded as a filtered list's are; `scan_limited` says the values come from the newest ones only.
 */
export async function personPropertyValues(
  projectId: number,
  query: { key?: string; value?: string },
  deadline?: number,
): Promise<{ results: { name: string; count: number }[]; refreshing: false; scan_limited?: true }> {
  const key = query.key;
  if (!key || key.startsWith('$virt')) return { results: [], refreshing: false };
  const needle = query.value ? query.value.toLowerCase() : undefined;
  const wanted = (name: string) => (needle === undefined ? name !== '' : name.toLowerCase().includes(needle));
  const counts = new Map<string, number>();
  const { complete } = await walkPersons(
    projectId,
    (person) => {
      if (key === 'distinct_id') {
        for (const d of person.distinct_ids) if (wanted(d)) counts.set(d, 1);
        return true;
      }
      const raw = person.properties[key];
      if (raw === undefined || raw === null) return true;
      const name = propertyValueName(raw);
      if (wanted(name)) counts.set(name, (counts.get(name) ?? 0) + 1);
      return true;
    },
    deadline,
  );
  const order =
    key === 'distinct_id'
      ? (a: [string, number], b: [string, number]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
      : (a: [string, number], b: [string, number]) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  const results = [...counts]
    .sort(order)
    .slice(0, PROPERTY_VALUES_LIMIT)
    .map(([name, count]) => ({ name, count }));
  return { results, refreshing: false, ...(complete ? {} : { scan_limited: true as const }) };
}

/** A bare offset reads the keys before it (1,000 a call): this many at most. */
export const MAX_BARE_OFFSET = 100_000;

async function unfilteredPage(projectId: number, q: PersonListQuery): Promise<PersonPage> {
  // A cursor (what `next` links carry) starts the read where the last page ended; a bare offset walks
  // the keys before it.
  if (!q.cursor && q.offset > MAX_BARE_OFFSET)
    throw new ValidationError(
      `offset is limited to ${MAX_BARE_OFFSET} without a cursor; follow a page's "next" link instead (it resumes where that page ended, at any depth).`,
      'offset',
    );
  const after = q.cursor
    ? decodeCursor(q.cursor, projectId).position
    : q.offset > 0
      ? await personsPositionAfter(projectId, q.offset)
      : undefined;
  const beyondEnd = q.offset > 0 && !q.cursor && after === undefined;
  const [count, out] = await Promise.all([
    personCount(projectId),
    beyondEnd ? Promise.resolve({ persons: [] }) : personsPage(projectId, { limit: q.limit + 1, after }),
  ]);
  const rows = out.persons.slice(0, q.limit);
  const hasMore = out.persons.length > q.limit;
  return {
    count,
    results: rows.map(({ person }) => personResponse(person)),
    hasMore,
    nextCursor: hasMore ? encodeCursor({ position: rows.at(-1)!.position, offset: q.offset + q.limit }) : undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Edits through the API: each one a property change (for the timeline) and an activity entry
// ---------------------------------------------------------------------------------------------

const EDIT_ATTEMPTS = 5;

/** Who asked for a change, as the activity log and the deletion requests record it (a bulk delete's worker has no key). */
type Actor = { user: Pick<Caller['user'], 'first_name' | 'email'> };

function activity(
  caller: Actor,
  person: PersonRecord,
  kind: ActivityRecord['activity'],
  changes: ActivityRecord['changes'],
): ActivityRecord {
  return {
    id: uuidv7(),
    person_id: person.id,
    project_id: person.project_id,
    activity: kind,
    user: { first_name: caller.user.first_name, email: caller.user.email },
    created_at: nowIso(),
    changes,
  };
}

function apiChange(
  caller: Caller,
  person: PersonRecord,
  set: Record<string, unknown>,
  unset: string[],
  changed: string[],
): PropertyChange {
  return {
    id: uuidv7(),
    person_id: person.id,
    project_id: person.project_id,
    timestamp: nowIso(),
    source: 'api',
    actor: caller.user.email,
    set,
    unset,
    properties: person.properties,
    changed,
    kind: 'update',
  };
}

/** Applies `$set`/`$unset`-style edits with optimistic concurrency: re-read and retry on a conflicting write. */
async function editProperties(
  caller: Caller,
  projectId: number,
  personId: number,
  set: Record<string, unknown>,
  unset: string[],
  kind: 'updated' | 'property_deleted',
  deadline?: number,
): Promise<PersonRecord> {
  // One hide however many attempts (each attempt's put replaces it).
  const hideId = uuidv7();
  return retryTransient(
    `Person ${personId}`,
    async () => {
      const person = await findPerson(projectId, personId);
      const { properties, changed } = applyPersonUpdates(person.properties, { set, setOnce: {}, unset });
      if (changed.length === 0) return person;
      // Before the save: the lake stops serving a removed key from now on (lake-hides.ts).
      await hideRemovedProperties(projectId, person, removedKeys(person.properties, unset), hideId);
      const next = { ...person, properties };
      const record = activity(caller, next, kind, [
        {
          type: 'Person',
          action: kind === 'updated' ? 'changed' : 'deleted',
          field: 'properties',
          before: person.properties,
          after: properties,
        },
      ]);
      if (!(await savePersonEdit(next, apiChange(caller, next, set, unset, changed), record))) return TRANSIENT;
      await notePersonPropertyKeys(projectId, set);
      await refreshPersonCohorts(projectId, [next]);
      await bumpAnswersGeneration(projectId);
      return { ...next, version: next.version + 1 };
    },
    { deadline },
  );
}

export async function updatePersonProperties(
  caller: Caller,
  projectId: number,
  personId: number,
  properties: Record<string, unknown>,
  deadline?: number,
) {
  return personResponse(await editProperties(caller, projectId, personId, properties, [], 'updated', deadline));
}

export async function deletePersonProperty(
  caller: Caller,
  projectId: number,
  personId: number,
  key: string,
  deadline?: number,
) {
  await editProperties(caller, projectId, personId, {}, [key], 'property_deleted', deadline);
  return { success: true };
}

/** PostHog's update_property: one key `$set` to any JSON value, the same edit as a PATCH of that key. */
export async function setPersonProperty(
  caller: Caller,
  projectId: number,
  personId: number,
  key: string,
  value: unknown,
  deadline?: number,
): Promise<void> {
  await editProperties(caller, projectId, personId, { [key]: value }, [], 'updated', deadline);
}

// ---------------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------------

/** How a deletion of a person's events is queued (SQS in the service; injected so this module stays SDK-free). */
export type QueueDeletion = (request: DeletionRequest) => Promise<void>;

/**
 * Deletes a person and its distinct ids. With `deleteEvents` the request to delete all its events is
 * queued first: if queuing fails nothing is deleted, so a retry of the call is complete. `read` is the
 * person as already read (bulk deletes read many at once); a conflicting write makes it read again.
 */
export async function deletePerson(
  caller: Actor,
  projectId: number,
  personId: number,
  deleteEvents: boolean,
  queue: QueueDeletion,
  read?: PersonRecord,
): Promise<void> {
  const hideId = uuidv7();
  await retryTransient(
    `Person ${personId}`,
    async (attempt) => {
      const person = attempt === 0 && read ? read : await findPerson(projectId, personId);
      // Before the delete: the lake stops serving the person's columns from now on (lake-hides.ts).
      await hideDeletedPersons(projectId, [person], [hideId]);
      if (deleteEvents) {
        await queue({
          project_id: projectId,
          person_id: person.id,
          person_uuid: person.uuid,
          distinct_ids: person.distinct_ids,
          requested_at: nowIso(),
          requested_by: caller.user.email,
        });
      }
      const record = activity(caller, person, 'deleted', [
        { type: 'Person', action: 'deleted', field: null, before: personResponse(person), after: null },
      ]);
      return conflictIfFalse(await deletePersonRecord(person, record));
    },
    {
      attempts: EDIT_ATTEMPTS,
      gaveUp: () => new Conflict(`Person ${personId} kept changing during the delete; retry it.`),
    },
  );
  await leaveCohorts(projectId, personId);
  await Promise.all([bumpAnswersGeneration(projectId), bumpPersonsVersion(projectId)]);
}

/**
 * PostHog's delete_events: the person stays, the deletion of its events (those up to now, of the
 * distinct ids it has now) waits for the same Sunday drain as a DELETE with delete_events. Nothing
 * changes until the drain, which retires the answers that counted them.
 */
export async function queuePersonEventsDeletion(
  caller: Caller,
  projectId: number,
  personId: number,
  queue: QueueDeletion,
): Promise<void> {
  const person = await findPerson(projectId, personId);
  // The drain finds events by distinct id: a person without any has none it could delete.
  if (person.distinct_ids.length > 0) await queue(deletionRequest(caller, person));
}

/**
 * PostHog's reset_person_distinct_id frees a distinct id still tied to a deleted person. Deleting a
 * person here removes its distinct ids with it, so the only id that can stay tied is one a merge
 * repointed to a person deleted meanwhile: ingestion then can neither find its person nor claim the
 * id for a new one. That mapping is removed (only if it still names a person that does not exist);
 * an id free or in use by a live person is left as it is. Either way the answer is PostHog's 202.
 */
export async function resetPersonDistinctId(projectId: number, distinctId: string): Promise<void> {
  const owner = await personIdOf(projectId, distinctId);
  if (owner === undefined || (await getPerson(projectId, owner))) return;
  if (await releaseDistinctId(projectId, distinctId, owner))
    await Promise.all([bumpAnswersGeneration(projectId), bumpPersonsVersion(projectId)]);
}

export const BULK_DELETE_LIMIT = 1000;

function deletionRequest(actor: Actor, person: PersonRecord): DeletionRequest {
  return {
    project_id: person.project_id,
    person_id: person.id,
    person_uuid: person.uuid,
    distinct_ids: person.distinct_ids,
    requested_at: nowIso(),
    requested_by: actor.user.email,
  };
}

/**
 * A bulk delete removes its persons a group per transaction, one transaction after another (each
 * updates the project's person counter, so side by side they would conflict). A group stays within
 * DynamoDB's 100 items and well within its 4 MB per transaction. One delete per transaction took
 * over 30 s for 1,000 persons on DynamoDB Local, three times the API functions' 10 s timeout; grouped
 * it is ~31 transactions, still 5-18 s on a loaded machine, so a request stops starting groups after
 * its budget (config `bulkDeleteBudgetMs`, 4 s) and queues the rest for the bulk-delete worker.
 */
const GROUP_BYTES = 2_000_000;
const QUEUE_CONCURRENCY = 16;

function* removalGroups(removals: { person: PersonRecord; activity: ActivityRecord }[]) {
  let group: typeof removals = [];
  let items = 1;
  let bytes = 0;
  for (const r of removals) {
    const size = JSON.stringify(r.activity).length;
    if (group.length && (items + removalItemCount(r.person) > TRANSACTION_ITEMS || bytes + size > GROUP_BYTES)) {
      yield group;
      group = [];
      items = 1;
      bytes = 0;
    }
    group.push(r);
    items += removalItemCount(r.person);
    bytes += size;
  }
  if (group.length) yield group;
}

/** Deletes `persons` (all of `projectId`) a group per transaction, starting no group after `stopAt`; `left` are those not started. */
async function removeInGroups(
  actor: Actor,
  projectId: number,
  persons: PersonRecord[],
  deleteEvents: boolean,
  queue: QueueDeletion,
  stopAt: number,
): Promise<{ removed: Set<number>; left: number[] }> {
  const removed = new Set<number>();
  const left: number[] = [];
  const removals = persons.map((person) => ({
    person,
    activity: activity(actor, person, 'deleted', [
      { type: 'Person', action: 'deleted', field: null, before: personResponse(person), after: null },
    ]),
  }));
  for (const group of removalGroups(removals)) {
    if (Date.now() >= stopAt) {
      for (const { person } of group) left.push(person.id);
      continue;
    }
    const fits = group.length > 1 || removalItemCount(group[0]!.person) < TRANSACTION_ITEMS;
    if (fits) {
      if (deleteEvents)
        await inParallel(group, QUEUE_CONCURRENCY, ({ person }) => queue(deletionRequest(actor, person)));
      await hideDeletedPersons(
        projectId,
        group.map(({ person }) => person),
      );
      if (await deletePersonRecords(group)) {
        for (const { person } of group) removed.add(person.id);
        await inParallel(group, QUEUE_CONCURRENCY, ({ person }) => leaveCohorts(projectId, person.id));
        continue;
      }
    }
    // A person changed since it was read (or has too many distinct ids for one transaction): one at a time, re-reading.
    for (const { person } of group) {
      try {
        await deletePerson(actor, projectId, person.id, deleteEvents, queue);
        removed.add(person.id);
      } catch (error) {
        if (!(error instanceof NotFound)) throw error;
      }
    }
  }
  if (removed.size) await Promise.all([bumpAnswersGeneration(projectId), bumpPersonsVersion(projectId)]);
  return { removed, left };
}

/** How a bulk delete's rest is queued (SQS in the service; injected so this module stays SDK-free). */
export type QueueBulkDelete = (message: QueuedBulkDelete) => Promise<void>;

/**
 * PostHog's bulk_delete: by uuids (PostHog's ids) or our integer ids, or by distinct ids, up to 1000; unknown ones (and other projects' persons) are
 * reported, not fatal. Those not reached within `budgetMs` are queued, in one message, for the
 * bulk-delete worker, which removes them within seconds; they are listed in `queued`, as given.
 */
export async function bulkDeletePersons(
  caller: Caller,
  projectId: number,
  input: { ids?: (number | string)[]; distinct_ids?: string[]; delete_events: boolean },
  queues: { deletion: QueueDeletion; rest: QueueBulkDelete },
  deadline: number,
  budgetMs = config().bulkDeleteBudgetMs,
): Promise<{
  deleted: number[];
  not_found: (number | string)[];
  queued: (number | string)[];
  /** PostHog's summary of the same request (its clients read these): what was found, what is deleted already. */
  persons_found: number;
  persons_deleted: number;
  events_queued_for_deletion: boolean;
  recordings_queued_for_deletion: false;
  deletion_errors: never[];
}> {
  const stopAt = Math.min(deadline, Date.now() + budgetMs);
  const wanted: (number | string)[] = input.ids ?? input.distinct_ids ?? [];
  let resolved: (number | undefined)[];
  if (input.ids) resolved = await personIdsGiven(projectId, input.ids);
  else {
    const owners = await personIdsOf(wanted.map((d) => ({ projectId, distinctId: String(d) })));
    resolved = wanted.map((d) => owners.get(`${projectId}#${d}`));
  }
  const persons = await getPersons(projectId, [...new Set(resolved.filter((id): id is number => id !== undefined))]);
  const { removed, left } = await removeInGroups(
    caller,
    projectId,
    persons,
    input.delete_events,
    queues.deletion,
    stopAt,
  );
  if (left.length) {
    const { first_name, email } = caller.user;
    await queues.rest({
      project_id: projectId,
      requested_by: { first_name, email },
      delete_events: input.delete_events,
      person_ids: left,
    });
  }
  const leftSet = new Set(left);
  const deleted = new Set<number>();
  const notFound: (number | string)[] = [];
  const queued: (number | string)[] = [];
  for (const [i, id] of resolved.entries()) {
    if (id !== undefined && removed.has(id)) deleted.add(id);
    else if (id !== undefined && leftSet.has(id)) queued.push(wanted[i]!);
    else notFound.push(wanted[i]!);
  }
  const found = deleted.size + left.length;
  return {
    deleted: [...deleted],
    not_found: notFound,
    queued,
    persons_found: found,
    persons_deleted: deleted.size,
    events_queued_for_deletion: input.delete_events && found > 0,
    recordings_queued_for_deletion: false,
    deletion_errors: [],
  };
}

/** A person id as a client may send it: ours (an integer, or its digits as text) or PostHog's (the person's uuid). */
export type GivenPersonId = number | string;

/**
 * The person ids that ids given in either form name, in order (`undefined`: a uuid of no person of
 * the project, or text that is neither form). Integer ids are not checked here (getPersons does);
 * uuids are looked up in the personsByUuid index, so only the project's own persons are found.
 */
export async function personIdsGiven(
  projectId: number,
  given: readonly GivenPersonId[],
): Promise<(number | undefined)[]> {
  const byUuid = await personIdsOfUuids(
    projectId,
    given.filter((w): w is string => typeof w === 'string' && UUID_PATTERN.test(w)),
  );
  return given.map((w) => (typeof w === 'number' ? w : /^\d{1,15}$/.test(w) ? Number(w) : byUuid.get(w.toLowerCase())));
}

const queuedBulkDelete = v.object({
  project_id: v.pipe(v.number(), v.integer(), v.minValue(1)),
  requested_by: v.object({ first_name: v.string(), email: v.string() }),
  delete_events: v.boolean(),
  person_ids: v.pipe(v.array(v.pipe(v.number(), v.integer(), v.minValue(0))), v.maxLength(BULK_DELETE_LIMIT)),
});

/** A queued bulk delete that can never be processed (not JSON, or not the shape above). */
export class MalformedBulkDelete extends Error {
  override name = 'MalformedBulkDelete';
}

export function parseQueuedBulkDelete(body: string): QueuedBulkDelete {
  return parseQueuedMessage(
    body,
    queuedBulkDelete,
    (reason) => new MalformedBulkDelete(`malformed bulk delete: ${reason}`),
  );
}

/**
 * The bulk-delete worker's part: re-reads the message's persons in its project (ids of other projects
 * or already gone are skipped), deletes them as bulkDeletePersons does, starts no group after `stopAt`
 * and queues what is left as a new message, so one message never asks more of an invocation than its time.
 */
export async function deleteQueuedPersons(
  message: QueuedBulkDelete,
  queues: { deletion: QueueDeletion; rest: QueueBulkDelete },
  stopAt: number,
): Promise<{ deleted: number; skipped: number; requeued: number }> {
  const persons = await getPersons(message.project_id, message.person_ids);
  const { removed, left } = await removeInGroups(
    { user: message.requested_by },
    message.project_id,
    persons,
    message.delete_events,
    queues.deletion,
    stopAt,
  );
  if (left.length) await queues.rest({ ...message, person_ids: left });
  return {
    deleted: removed.size,
    skipped: new Set(message.person_ids).size - removed.size - left.length,
    requeued: left.length,
  };
}

// ---------------------------------------------------------------------------------------------
// Split
// ---------------------------------------------------------------------------------------------

const SPLIT_CHUNK = 30;

/**
 * One person per distinct id: `main_distinct_id` (or the first) stays on this person with its
 * properties; every other id gets a new person with no properties.
 */
export async function splitPerson(caller: Caller, projectId: number, personId: number, mainDistinctId?: string) {
  return retryTransient(
    `Person ${personId}`,
    async () => {
      let person = await findPerson(projectId, personId);
      const main = mainDistinctId ?? person.distinct_ids[0];
      if (main === undefined || !person.distinct_ids.includes(main)) {
        throw new ValidationError(`'${mainDistinctId}' is not a distinct id of this person.`, 'main_distinct_id');
      }
      const others = person.distinct_ids.filter((d) => d !== main);
      if (!others.length) return { success: true };
      let ok = true;
      let committed = false;
      for (let i = 0; i < others.length && ok; i += SPLIT_CHUNK) {
        const chunk = others.slice(i, i + SPLIT_CHUNK);
        const remaining = person.distinct_ids.filter((d) => !chunk.includes(d));
        const fresh: PersonRecord[] = [];
        for (const d of chunk) {
          fresh.push({
            id: await nextPersonId(projectId),
            uuid: uuidv7(),
            project_id: projectId,
            properties: {},
            distinct_ids: [d],
            created_at: nowIso(),
            is_identified: false,
            version: 0,
          });
        }
        const last = i + SPLIT_CHUNK >= others.length;
        const record = last
          ? activity(caller, person, 'split_person', [
              { type: 'Person', action: 'split', field: 'distinct_ids', before: person.distinct_ids, after: [main] },
            ])
          : undefined;
        ok = await splitPersonRecord(person, remaining, fresh, record);
        committed ||= ok;
        person = { ...person, distinct_ids: remaining, version: person.version + 1 };
      }
      // Also when a later chunk conflicts: the earlier ones are committed.
      if (committed) await Promise.all([bumpAnswersGeneration(projectId), bumpPersonsVersion(projectId)]);
      return ok ? { success: true } : TRANSIENT;
    },
    {
      attempts: EDIT_ATTEMPTS,
      gaveUp: () => new Conflict(`Person ${personId} kept changing during the split; retry it.`),
    },
  );
}

// ---------------------------------------------------------------------------------------------
// History
// ---------------------------------------------------------------------------------------------

/**
 * Members can make a person's activity grow without end (every API edit is one entry): the newest
 * ACTIVITY_PAGED entries are paged, and `total_count` counts at most those (`total_count_capped` says when there are more).
 */
export const ACTIVITY_PAGED = 1_000;

export async function personActivity(projectId: number, personId: number, pageQuery: { limit: number; page: number }) {
  if ((pageQuery.page - 1) * pageQuery.limit >= ACTIVITY_PAGED && pageQuery.page > 1)
    throw new ValidationError(
      `Only the newest ${ACTIVITY_PAGED.toLocaleString('en')} changes are paged: page ${pageQuery.page} of ${pageQuery.limit} starts past them.`,
      'page',
    );
  const read = await listPersonActivity(projectId, personId, ACTIVITY_PAGED + 1);
  const capped = read.length > ACTIVITY_PAGED;
  const all = capped ? read.slice(0, ACTIVITY_PAGED) : read;
  const start = (pageQuery.page - 1) * pageQuery.limit;
  const results = all.slice(start, start + pageQuery.limit).map((a) => ({
    id: a.id,
    user: a.user,
    activity: a.activity,
    scope: 'Person',
    item_id: String(a.person_id),
    detail: { id: a.person_id, changes: a.changes, merge: null, trigger: null, name: null, short_id: null, type: null },
    created_at: a.created_at,
  }));
  return {
    results,
    total_count: all.length,
    ...(capped ? { total_count_capped: true } : {}),
    hasNext: start + pageQuery.limit < all.length,
    hasPrevious: pageQuery.page > 1,
  };
}

/** The person's properties over time: one point per recorded change (ingestion $set/$unset, merges, API edits). */
export async function propertiesTimeline(projectId: number, personId: number, range: TimelineRange) {
  await findPerson(projectId, personId);
  return timeline(range, async (window) =>
    (await listPersonChanges(projectId, personId, window)).map((c) => ({
      timestamp: c.timestamp,
      properties: c.properties,
      changed_keys: c.changed,
      source: c.source,
      event: c.event ?? null,
      event_uuid: c.event_uuid ?? null,
      actor: c.actor ?? null,
    })),
  );
}
