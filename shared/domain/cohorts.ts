import * as v from 'valibot';
import { CsvError, parse as parseCsv } from 'csv-parse/sync';
import { now, nowIso } from '../clock.ts';
import { inParallel } from '../db/batch.ts';
import {
  addToCohortCount,
  cohortIdsOfPerson,
  dueCohorts,
  getCohort,
  getCohorts,
  listCohorts as readCohorts,
  membersAmong,
  membersPage,
  nextCohortId,
  putCohort,
  putMembers,
  removeMember,
  type CohortCalculation,
  type CohortRecord,
} from '../db/cohorts.ts';
import { getPersons, personIdsOf, personsWithEmail } from '../db/persons.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import { Conflict, NotFound, ValidationError } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { parseQueuedMessage } from '../json.ts';
import type { QueuedCohortCalculation } from '../queues/cohort-calculations.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import type { Caller } from './access.ts';
import { actionDefinitions } from './actions.ts';
import { parseCohortFilters, referencesLoop } from './cohort-definitions.ts';
import { findPerson, type GivenPersonId, personIdsGiven, personResponse } from './persons.ts';

/** Caps (stated in the 400s). */
export const MAX_COHORTS_PER_PROJECT = 500;
/** Rows of one CSV upload, and ids of one `_create_static_person_ids` / `add_persons_to_static_cohort` request. */
export const MAX_STATIC_ROWS = 10_000;

/** How a calculation step is queued (SQS in the service; injected so this module stays SDK-free). */
export type QueueCalculation = (message: QueuedCohortCalculation) => Promise<void>;

function cohortType(c: CohortRecord): string {
  if (c.is_static) return 'static';
  if (c.behavioural) return 'behavioral';
  return c.references?.length ? 'analytical' : 'person_property';
}

/** PostHog's Cohort resource. */
export function cohortResponse(c: CohortRecord) {
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    groups: [] as unknown[],
    deleted: c.deleted,
    filters: c.filters,
    query: null,
    is_calculating: c.is_calculating,
    created_by: c.created_by,
    created_at: c.created_at,
    last_calculation: c.last_calculation,
    version: c.version,
    pending_version: c.is_calculating ? c.version : null,
    errors_calculating: c.errors_calculating,
    count: c.count,
    is_static: c.is_static,
    cohort_type: cohortType(c),
    experiment_set: [] as unknown[],
  };
}

export async function findCohort(projectId: number, cohortId: number): Promise<CohortRecord> {
  const cohort = await getCohort(projectId, cohortId);
  if (!cohort) throw new NotFound();
  return cohort;
}

export async function listCohorts(
  projectId: number,
  q: { limit: number; offset: number; search?: string; type?: 'static' | 'dynamic' },
) {
  const needle = q.search?.toLowerCase();
  const all = (await readCohorts(projectId))
    .filter((c) => !c.deleted)
    .filter((c) => q.type === undefined || c.is_static === (q.type === 'static'))
    .filter((c) => needle === undefined || c.name.toLowerCase().includes(needle))
    // PostHog lists newest first.
    .sort((a, b) => b.id - a.id);
  return { count: all.length, results: all.slice(q.offset, q.offset + q.limit).map(cohortResponse) };
}

// ---------------------------------------------------------------------------------------------
// Definitions: validated against the project (referenced cohorts, actions)
// ---------------------------------------------------------------------------------------------

async function checkedDefinition(projectId: number, cohortId: number | undefined, filters: unknown) {
  const def = parseCohortFilters(filters, now().getTime());
  if (def.references.length) {
    const byId = new Map((await readCohorts(projectId)).map((c) => [c.id, c]));
    for (const id of def.references) {
      const ref = byId.get(id);
      if (!ref || ref.deleted) throw new ValidationError(`Cohort ${id} does not exist.`, 'filters');
    }
    if (
      cohortId !== undefined &&
      referencesLoop(cohortId, (id) => (id === cohortId ? def.references : (byId.get(id)?.references ?? [])))
    )
      throw new ValidationError('Cohorts cannot reference each other in a loop.', 'filters');
  }
  const actionIds = def.events.flatMap((e) => (e.eventType === 'actions' ? [Number(e.key)] : []));
  if (actionIds.length) {
    const found = new Set((await actionDefinitions(projectId, actionIds)).map((a) => a.id));
    const missing = actionIds.find((id) => !found.has(id));
    if (missing !== undefined) throw new ValidationError(`Action ${missing} does not exist.`, 'filters');
  }
  return def;
}

// ---------------------------------------------------------------------------------------------
// Create, update, soft delete
// ---------------------------------------------------------------------------------------------

export interface CohortInput {
  name?: string;
  description?: string;
  filters?: unknown;
  is_static?: boolean;
  deleted?: boolean;
  /** Static cohorts: person ids to start with (PostHog's `_create_static_person_ids`). */
  _create_static_person_ids?: (number | string)[];
  /** A CSV upload (multipart field `csv`), already read as text. */
  csv?: string;
}

export async function createCohort(caller: Caller, projectId: number, input: CohortInput, queue: QueueCalculation) {
  const live = (await readCohorts(projectId)).filter((c) => !c.deleted).length;
  if (live >= MAX_COHORTS_PER_PROJECT)
    throw new ValidationError(`A project may have at most ${MAX_COHORTS_PER_PROJECT} cohorts.`, null);
  const isStatic = input.is_static === true || input.csv !== undefined;
  // Everything is checked before an id is taken: a refused request leaves the table as it was.
  const def = isStatic ? undefined : await checkedDefinition(projectId, undefined, input.filters);
  const staticIds = isStatic ? await staticPersonIds(projectId, input) : [];
  const at = nowIso();
  const cohort: CohortRecord = {
    id: await nextCohortId(projectId),
    project_id: projectId,
    name: input.name ?? '',
    description: input.description ?? '',
    filters: isStatic ? (input.filters ?? { properties: {} }) : input.filters,
    is_static: isStatic,
    deleted: false,
    created_at: at,
    created_by: { email: caller.user.email, first_name: caller.user.first_name },
    count: isStatic ? staticIds.length : null,
    is_calculating: false,
    last_calculation: isStatic ? at : null,
    errors_calculating: 0,
    behavioural: (def?.events.length ?? 0) > 0,
    references: def?.references ?? [],
    version: 1,
  };
  if (isStatic) {
    // Members first: the cohort appears with its count true.
    await putMembers(projectId, cohort.id, staticIds, 'static');
    await putCohort(cohort);
  } else {
    await putCohort(cohort);
    await startCalculation(cohort, queue);
  }
  await bumpAnswersGeneration(projectId);
  return cohortResponse((await getCohort(projectId, cohort.id)) ?? cohort);
}

export async function updateCohort(projectId: number, cohortId: number, input: CohortInput, queue: QueueCalculation) {
  const current = await findCohort(projectId, cohortId);
  if (input.is_static !== undefined && input.is_static !== current.is_static)
    throw new ValidationError('A cohort cannot change between static and dynamic.', 'is_static');
  const redefined = !current.is_static && input.filters !== undefined;
  const def = redefined ? await checkedDefinition(projectId, cohortId, input.filters) : undefined;
  const undeleted = current.deleted && input.deleted === false;
  // The upload is read before anything is written: a refused file leaves the cohort as it was.
  const uploaded = current.is_static && input.csv !== undefined ? await csvPersonIds(projectId, input.csv) : undefined;
  const next: CohortRecord = {
    ...current,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.deleted !== undefined ? { deleted: input.deleted } : {}),
    ...(def ? { filters: input.filters, behavioural: def.events.length > 0, references: def.references } : {}),
    version: current.version + 1,
  };
  if (!(await putCohort(next, current.version)))
    throw new Conflict(`Cohort ${cohortId} changed while it was being updated; retry it.`);
  if (uploaded) await addStaticMembers(next, uploaded);
  if (!next.deleted && !next.is_static && (redefined || undeleted)) await startCalculation(next, queue);
  await bumpAnswersGeneration(projectId);
  return cohortResponse((await getCohort(projectId, cohortId)) ?? next);
}

// ---------------------------------------------------------------------------------------------
// Static cohorts
// ---------------------------------------------------------------------------------------------

async function staticPersonIds(projectId: number, input: CohortInput): Promise<number[]> {
  const ids = new Set<number>();
  // An empty list asks for an empty cohort (as PostHog's); a list that names no person is refused below.
  if (input._create_static_person_ids?.length)
    for (const id of await existingPersonIds(projectId, input._create_static_person_ids, '_create_static_person_ids'))
      ids.add(id);
  if (input.csv !== undefined) for (const id of await csvPersonIds(projectId, input.csv)) ids.add(id);
  return [...ids];
}

/** PostHog's answer when none of the ids given names a person of the project. */
export const NO_VALID_PERSONS = 'No valid users to add to cohort';

/**
 * The persons of the project that ids name, in PostHog's form (person uuids) or ours (integer ids).
 * Ids that name no person of the project are skipped, as PostHog skips them, but never all of them:
 * a request that would add no one is PostHog's 400, not a 200 that did nothing.
 */
async function existingPersonIds(projectId: number, given: GivenPersonId[], attr: string): Promise<number[]> {
  if (given.length > MAX_STATIC_ROWS)
    throw new ValidationError(`At most ${MAX_STATIC_ROWS} persons per request.`, attr);
  const resolved = await personIdsGiven(projectId, given);
  const ids = [...new Set(resolved.filter((id): id is number => id !== undefined && id > 0))];
  const found = (await getPersons(projectId, ids)).map((p) => p.id);
  if (found.length === 0) throw new ValidationError(NO_VALID_PERSONS, attr);
  return found;
}

/**
 * A CSV's cells as rows, read by csv-parse (RFC 4180 quoting, CRLF or LF, a UTF-8 BOM dropped); rows
 * whose cells are all blank are skipped. A file csv-parse cannot read (a quote never closed, a quote
 * inside an unquoted field) or a row with another number of cells than the first is a 400 on `csv`
 * naming the line, and nothing is stored.
 */
type CsvRecord = { record: string[]; info: { lines: number } };

export function csvRows(text: string): string[][] {
  let lastRecordLine = 0;
  let records: CsvRecord[];
  try {
    // With `info`, each record comes wrapped with where it was read (csv-parse's types do not say so).
    records = parseCsv(text, {
      bom: true,
      skip_empty_lines: true,
      relax_column_count: true,
      info: true,
      on_record: (record: string[], context) => {
        lastRecordLine = context.lines;
        return record;
      },
    }) as unknown as CsvRecord[];
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    if (error.code === 'CSV_QUOTE_NOT_CLOSED') {
      const line = firstNonBlankLineAfter(text, lastRecordLine);
      throw new ValidationError(
        `The CSV is malformed: the quoted field opened on line ${line} is never closed (the file ends inside it).`,
        'csv',
      );
    }
    throw new ValidationError(
      `The CSV is malformed on line ${error.lines}: ${error.message.replace(/\.$/, '')}.`,
      'csv',
    );
  }
  const rows = records.filter(({ record }) => record.some((c) => c.trim() !== ''));
  const width = rows[0]?.record.length ?? 0;
  const ragged = rows.find(({ record }) => record.length !== width);
  if (ragged)
    throw new ValidationError(
      `The CSV is malformed on line ${ragged.info.lines}: ${cells(ragged.record.length)} where its first row has ${width}.`,
      'csv',
    );
  return rows.map(({ record }) => record);
}

const cells = (n: number) => `${n} ${n === 1 ? 'cell' : 'cells'}`;

/** The 1-based number of the first line after `line` holding more than blanks (where the next record begins). */
function firstNonBlankLineAfter(text: string, line: number): number {
  const lines = text.split(/\r\n|\n|\r/);
  for (let i = line; i < lines.length; i++) if (lines[i]!.trim() !== '') return i + 1;
  return line + 1;
}

const CSV_COLUMNS = ['person_id', 'distinct_id', 'email'] as const;
type CsvColumn = (typeof CSV_COLUMNS)[number];

/**
 * PostHog's CSV rules: a header naming `person_id`, `distinct_id` or `email` (any case; the first
 * of these, in that order, is read) picks the column; a file of one column without such a header is
 * a list of distinct ids, its first row included; several columns without one are a 400.
 */
export function csvIdentifiers(text: string): { column: CsvColumn; values: string[] } {
  const rows = csvRows(text);
  if (rows.length === 0) throw new ValidationError('The CSV file is empty.', 'csv');
  const header = rows[0]!.map((h) =>
    h
      .trim()
      .toLowerCase()
      .replace(/[\s-]+/g, '_'),
  );
  const column = CSV_COLUMNS.find((c) => header.includes(c));
  let values: string[];
  if (column) {
    const at = header.indexOf(column);
    values = rows.slice(1).map((r) => (r[at] ?? '').trim());
  } else if (rows.every((r) => r.filter((c) => c.trim() !== '').length <= 1)) {
    values = rows.map((r) => (r.find((c) => c.trim() !== '') ?? '').trim());
  } else
    throw new ValidationError(
      'The CSV must have one column of distinct ids, or a header naming a person_id, distinct_id or email column.',
      'csv',
    );
  values = values.filter((x) => x !== '');
  if (values.length > MAX_STATIC_ROWS)
    throw new ValidationError(`A CSV upload may have at most ${MAX_STATIC_ROWS} rows.`, 'csv');
  return { column: column ?? 'distinct_id', values };
}

/** A CSV upload's persons; a file none of whose rows names a person of the project is a 400 (see existingPersonIds). */
async function csvPersonIds(projectId: number, text: string): Promise<number[]> {
  const { column, values } = csvIdentifiers(text);
  if (column === 'person_id') return existingPersonIds(projectId, values, 'csv');
  let found: number[];
  if (column === 'distinct_id') {
    const owners = await personIdsOf(values.map((distinctId) => ({ projectId, distinctId })));
    found = [...new Set(owners.values())];
  } else {
    const byEmail = await inParallel([...new Set(values)], 8, async (email) =>
      (await personsWithEmail(projectId, email)).filter(
        (p) => String(p.properties.email ?? '').toLowerCase() === email.toLowerCase(),
      ),
    );
    found = [...new Set(byEmail.flat().map((p) => p.id))];
  }
  if (found.length === 0)
    throw new ValidationError(`${NO_VALID_PERSONS}: no ${column} in the CSV names a person of this project.`, 'csv');
  return found;
}

async function addStaticMembers(cohort: CohortRecord, personIds: number[]) {
  const already = await membersAmong(cohort.project_id, cohort.id, personIds);
  const fresh = personIds.filter((id) => !already.has(id));
  await putMembers(cohort.project_id, cohort.id, fresh, 'static');
  await adjustCount(cohort, fresh.length);
}

async function adjustCount(cohort: CohortRecord, delta: number) {
  if (delta === 0) return;
  await addToCohortCount(cohort.project_id, cohort.id, delta);
}

async function staticCohort(projectId: number, cohortId: number) {
  const cohort = await findCohort(projectId, cohortId);
  if (!cohort.is_static || cohort.deleted)
    throw new ValidationError('Only a static cohort can have persons added or removed.', null);
  return cohort;
}

/** PostHog's add_persons_to_static_cohort: `person_ids` as person uuids (PostHog's form) or our integer ids. */
export async function addPersonsToStaticCohort(projectId: number, cohortId: number, personIds: GivenPersonId[]) {
  const cohort = await staticCohort(projectId, cohortId);
  await addStaticMembers(cohort, await existingPersonIds(projectId, personIds, 'person_ids'));
  await bumpAnswersGeneration(projectId);
  return cohortResponse(await findCohort(projectId, cohortId));
}

/**
 * PostHog's remove_person_from_static_cohort: `person_id` as the person's uuid or our integer id. A
 * person of no such id in the project is PostHog's 404; one not in the cohort is a 404 too (PostHog
 * answers 200 there: we say that nothing was removed).
 */
export async function removePersonFromStaticCohort(projectId: number, cohortId: number, personId: GivenPersonId) {
  await staticCohort(projectId, cohortId);
  const [id] = await personIdsGiven(projectId, [personId]);
  if (id === undefined || (await getPersons(projectId, [id])).length === 0)
    throw new NotFound("Person with this UUID does not exist in the cohort's team");
  if (!(await removeMember(projectId, cohortId, id))) throw new NotFound('The person is not in this cohort.');
  await bumpAnswersGeneration(projectId);
  return cohortResponse(await findCohort(projectId, cohortId));
}

/** A static copy of a cohort's current members (PostHog's duplicate_as_static_cohort). */
export async function duplicateAsStatic(caller: Caller, projectId: number, cohortId: number, queue: QueueCalculation) {
  const source = await findCohort(projectId, cohortId);
  if (source.deleted) throw new NotFound();
  const created = await createCohort(
    caller,
    projectId,
    { name: `${source.name} (static copy)`, description: source.description, is_static: true },
    queue,
  );
  let after: number | undefined;
  let total = 0;
  for (;;) {
    const page = await membersPage(projectId, cohortId, { limit: 1000, afterPersonId: after });
    const ids = page.members.map((m) => m.personId);
    await putMembers(projectId, created.id, ids, 'static');
    total += ids.length;
    after = ids.at(-1);
    if (!page.more || after === undefined) break;
  }
  const copy = await findCohort(projectId, created.id);
  await adjustCount(copy, total);
  return cohortResponse(await findCohort(projectId, created.id));
}

// ---------------------------------------------------------------------------------------------
// Reads of membership
// ---------------------------------------------------------------------------------------------

const cursorSchema = v.object({ after: v.pipe(v.number(), v.integer(), v.minValue(0)) });

/** A cohort's persons by person id, one page (cursor = the last person id of the previous page). */
export async function cohortPersons(projectId: number, cohortId: number, q: { limit: number; cursor?: string }) {
  const cohort = await findCohort(projectId, cohortId);
  let after: number | undefined;
  if (q.cursor !== undefined) {
    try {
      after = v.parse(cursorSchema, JSON.parse(Buffer.from(q.cursor, 'base64url').toString('utf8'))).after;
    } catch {
      throw new ValidationError('Invalid cursor.', 'cursor');
    }
  }
  const page = await membersPage(projectId, cohortId, { limit: q.limit, afterPersonId: after });
  const ids = page.members.map((m) => m.personId);
  const byId = new Map((await getPersons(projectId, ids)).map((p) => [p.id, p]));
  const results = ids.flatMap((id) => {
    const p = byId.get(id);
    return p ? [personResponse(p)] : [];
  });
  const last = ids.at(-1);
  return {
    count: cohort.count ?? 0,
    results,
    nextCursor:
      page.more && last !== undefined ? Buffer.from(JSON.stringify({ after: last })).toString('base64url') : undefined,
  };
}

/** The live cohorts a person is in (PostHog's persons/cohorts): the person named by integer id or uuid. */
export async function cohortsOfPerson(projectId: number, given: GivenPersonId) {
  const [personId] = await personIdsGiven(projectId, [given]);
  if (personId === undefined) throw new NotFound();
  await findPerson(projectId, personId);
  const ids = await cohortIdsOfPerson(projectId, personId);
  const cohorts = await getCohorts(projectId, ids);
  return cohorts
    .filter((c) => !c.deleted)
    .sort((a, b) => a.id - b.id)
    .map(cohortResponse);
}

// ---------------------------------------------------------------------------------------------
// Calculation: a worker, in pages that resume (the cohort item says where)
// ---------------------------------------------------------------------------------------------

/** Starts (or restarts) a dynamic cohort's calculation: the cohort says so at once, the worker does it. */
export async function startCalculation(cohort: CohortRecord, queue: QueueCalculation): Promise<void> {
  const calculation = await retryTransient(
    `Cohort ${cohort.id}`,
    async (attempt) => {
      const current = attempt === 0 ? cohort : await findCohort(cohort.project_id, cohort.id);
      const at = nowIso();
      const started: CohortCalculation = { id: uuidv7(), phase: 'scan', matched: 0, started_at: at, touched_at: at };
      const next = { ...current, is_calculating: true, calculation: started, version: current.version + 1 };
      return (await putCohort(next, current.version)) ? started : TRANSIENT;
    },
    { attempts: SAVE_ATTEMPTS },
  );
  await queue({ project_id: cohort.project_id, cohort_id: cohort.id, calculation_id: calculation.id });
}

/** Writes of one cohort item racing others (a PATCH, a calculation step): re-read and written again this often. */
export const SAVE_ATTEMPTS = 8;

const queuedSchema = v.object({
  project_id: v.pipe(v.number(), v.integer()),
  cohort_id: v.pipe(v.number(), v.integer()),
  calculation_id: v.string(),
});
export function parseQueuedCalculation(body: string): QueuedCohortCalculation {
  return parseQueuedMessage(body, queuedSchema, (reason) => new Error(`malformed cohort calculation: ${reason}`));
}

/** The scheduled pass: behavioural cohorts due (24 h after their last calculation) and calculations left stuck. */
export async function recalculateDueCohorts(queue: QueueCalculation, limit = 200): Promise<number> {
  const due = await dueCohorts(now(), limit);
  for (const { projectId, cohortId } of due) {
    const cohort = await getCohort(projectId, cohortId);
    if (cohort && !cohort.deleted && !cohort.is_static) await startCalculation(cohort, queue);
  }
  return due.length;
}
