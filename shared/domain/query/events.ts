/**
 * EventsQuery (PostHog's events explorer): rows of events, or count() grouped by the other columns.
 *
 * Rows are read from the raw events' day index, newest (or oldest) day first, stopping once the page
 * (+1 row, for `hasMore`) is full. With an event name each Query walks only that name's part of the
 * day (the index's sort key starts with the name), so no other name is read; without one every name
 * of the day is. Compacted day segments do not serve rows: they hold no uuid and only the property
 * columns a reader names, while `*` needs both. count() reads like a trend (event-segments.ts:
 * compacted segments where exact, raw events elsewhere, only the columns it needs).
 */
import { now as clockNow } from '../../clock.ts';
import { config } from '../../config.ts';
import { readDayEventsInOrder, type StoredEvent, utcDays } from '../../db/events.ts';
import { getPerson, getPersons, personIdsOf } from '../../db/persons.ts';
import { firstEventAt } from '../../db/projects.ts';
import { ValidationError } from '../../errors.ts';
import type { EventsQuery } from '../../schemas/query/events.ts';
import { forEachRow } from '../../segments/codec.ts';
import { dateContext } from '../../trends/dates.ts';
import { compileGroup, isGroup, parseProperties } from '../../trends/properties.ts';
import type { PropertyGroup, TrendEvent } from '../../trends/types.ts';
import { readTrendRows } from '../event-segments.ts';
import { projectSettings } from '../projects.ts';
import {
  checkAnswerBytes,
  checkGroupBy,
  columnTypes,
  compareEvents,
  type CountedEvent,
  countGroups,
  type EventsColumn,
  eventRow,
  groupRow,
  isAggregation,
  orderGroups,
  pageOf,
  parseLimit,
  parseOrder,
  parsePersonId,
  parseSelect,
  type PersonCell,
  refuseUnsupportedFields,
  resolveWindow,
} from './events-shape.ts';
import type { Checkpoint } from './checkpoint.ts';
import type { RunContext } from './runner.ts';

/**
 * Days read at once on the rows path (each day is 4 shard Queries): one first (a busy day fills the
 * page alone), then twice as many each round up to this, so sparse days are reached in few round trips.
 */
const MAX_DAYS_AT_ONCE = 8;

/** The event properties the filters read (the columns a count() decodes). */
function eventFilterKeys(group: PropertyGroup): string[] {
  return group.values.flatMap((v) => (isGroup(v) ? eventFilterKeys(v) : v.type === 'person' ? [] : [v.key]));
}

/** Whether a filter reads person properties (then every candidate event's person is looked up). */
function usesPersonProperties(group: PropertyGroup): boolean {
  return group.values.some((v) => (isGroup(v) ? usesPersonProperties(v) : v.type === 'person'));
}

/** Each distinct id's person column: PostHog's person object, or just the distinct id when it has no person. */
async function personCells(projectId: number, distinctIds: Iterable<string>): Promise<(id: string) => PersonCell> {
  const unique = [...new Set(distinctIds)];
  if (!unique.length) return (distinct_id) => ({ distinct_id });
  const ids = await personIdsOf(unique.map((distinctId) => ({ projectId, distinctId })));
  const persons = new Map((await getPersons(projectId, [...new Set(ids.values())])).map((p) => [p.id, p]));
  return (distinct_id) => {
    const id = ids.get(`${projectId}#${distinct_id}`);
    const p = id === undefined ? undefined : persons.get(id);
    return p ? { uuid: p.uuid, created_at: p.created_at, properties: p.properties, distinct_id } : { distinct_id };
  };
}

export async function runEventsQuery(context: RunContext, query: EventsQuery): Promise<Record<string, unknown>> {
  const { projectId } = context;
  refuseUnsupportedFields(query as Record<string, unknown>);
  const columns = parseSelect(query.select);
  const aggregated = isAggregation(columns);
  if (aggregated) checkGroupBy(columns);
  const order = parseOrder(query.orderBy, aggregated);
  const { limit, offset } = parseLimit(query.limit, query.offset);
  const { group } = parseProperties(query.properties, 'query__properties');
  const personId = parsePersonId(query.personId);
  const firstAt = await firstEventAt(projectId);
  const now = clockNow();
  const ctx = dateContext(projectSettings(context.project), now);
  const window = resolveWindow(query.after, query.before, ctx, firstAt?.getTime());
  const matches = compileGroup(group, ctx);
  const person = personId === undefined ? undefined : await getPerson(projectId, personId);
  const onlyDistinctIds = personId === undefined ? null : new Set(person?.distinct_ids ?? []);
  const plan: Plan = {
    projectId,
    columns,
    name: query.event || null,
    window,
    candidate: (e) =>
      e.t > window.after && e.t < window.before && (onlyDistinctIds === null || onlyDistinctIds.has(e.distinct_id)),
    matches: (e, personProperties) => matches(asTrendEvent(e, personProperties)),
    personFilters: usesPersonProperties(group),
    descending: order.descending,
    limit,
    offset,
    check: context.check,
  };
  const answer = aggregated ? await countedRows(plan, now, eventFilterKeys(group)) : await eventRows(plan);
  const body = {
    results: answer.results,
    columns: columns.map((c) => c.label),
    types: columnTypes(columns),
    hasMore: answer.hasMore,
    limit,
    offset,
  };
  checkAnswerBytes(Buffer.byteLength(JSON.stringify(body)));
  return body;
}

/** A validated query, ready to read. */
interface Plan {
  projectId: number;
  columns: EventsColumn[];
  /** null: every event name. */
  name: string | null;
  /** Exclusive bounds, epoch ms. */
  window: { after: number; before: number };
  /** In the window and of personId's distinct ids. */
  candidate: (e: CountedEvent) => boolean;
  /** The property filters, given the event's person's properties ({} unless `personFilters`). */
  matches: (e: CountedEvent, personProperties: Record<string, unknown>) => boolean;
  /** The filters read person properties: candidates' persons are looked up before `matches`. */
  personFilters: boolean;
  descending: boolean;
  limit: number;
  offset: number;
  /** The run's checkpoint, called in every loop over events (checkpoint.ts). */
  check: Checkpoint;
}

/** Events handled between two checkpoints in per-event loops: a check costs a clock read, an event far less. */
const CHECK_EVERY = 512;

/** `test` with the plan's checkpoint called every CHECK_EVERY events. */
function checking<E>(check: Checkpoint, test: (e: E) => boolean): (e: E) => boolean {
  let seen = 0;
  return (e) => {
    seen += 1;
    if (seen % CHECK_EVERY === 0) check();
    return test(e);
  };
}

const NO_PROPERTIES: Record<string, unknown> = {};

const asTrendEvent = (e: CountedEvent, personProperties: Record<string, unknown>): TrendEvent => ({
  event: e.event,
  distinct_id: e.distinct_id,
  person_id: e.distinct_id,
  timestamp: e.t,
  properties: e.properties,
  person_properties: personProperties,
});

/** The candidates the filters keep, persons looked up first when the filters read them. */
async function filtered<E extends CountedEvent>(plan: Plan, candidates: E[]): Promise<E[]> {
  if (!plan.personFilters) return candidates.filter(checking(plan.check, (e: E) => plan.matches(e, NO_PROPERTIES)));
  const person = await personCells(
    plan.projectId,
    candidates.map((e) => e.distinct_id),
  );
  plan.check();
  return candidates.filter(
    checking(plan.check, (e: E) => {
      const cell = person(e.distinct_id);
      return plan.matches(e, 'properties' in cell ? cell.properties : NO_PROPERTIES);
    }),
  );
}

function tooManyEvents(cap: number): ValidationError {
  return new ValidationError(
    `This query would read more than ${cap.toLocaleString('en-US')} events, the most one EventsQuery reads: give an "event", narrow "after"/"before", or add filters that leave fewer events to skip.`,
    'query__after',
  );
}

/** The distinct ids whose person the page shows (none without a person column). */
const personColumnIds = (columns: EventsColumn[], ids: () => string[]) =>
  columns.some((c) => c.kind === 'person') ? ids() : [];

/** Rows: day by day in the requested order until offset + limit + 1 events are kept. */
async function eventRows(plan: Plan): Promise<{ results: unknown[][]; hasMore: boolean }> {
  const { projectId, columns, name, window, descending } = plan;
  const need = plan.offset + plan.limit + 1;
  const days = utcDays(new Date(window.after), new Date(window.before));
  if (descending) days.reverse();
  const range = { from: new Date(window.after), to: new Date(window.before), newestFirst: descending };
  const asCounted = (e: StoredEvent) => ({ ...e, t: Date.parse(e.timestamp) });
  // Person filters are applied after the read (they need the persons), so a shard reads its whole day.
  // Called on every event read: the reads' checkpoint.
  const keep = checking(
    plan.check,
    plan.personFilters
      ? (e: StoredEvent) => plan.candidate(asCounted(e))
      : (e: StoredEvent) => {
          const c = asCounted(e);
          return plan.candidate(c) && plan.matches(c, NO_PROPERTIES);
        },
  );
  const found: StoredEvent[] = [];
  const cap = config().eventsQueryScanLimit;
  const budget = { items: cap };
  let size = 1;
  while (days.length && found.length < need) {
    plan.check();
    const want = plan.personFilters ? Number.POSITIVE_INFINITY : need - found.length;
    const reads = await Promise.all(
      days.splice(0, size).map((day) => readDayEventsInOrder(projectId, day, name, range, want, keep, budget)),
    );
    for (const read of reads) {
      if (!read.complete) throw tooManyEvents(cap);
      const kept = plan.personFilters ? await filtered(plan, read.events.map(asCounted)) : read.events;
      found.push(...kept.slice(0, need - found.length));
    }
    size = Math.min(2 * size, MAX_DAYS_AT_ONCE);
  }
  plan.check();
  found.sort(compareEvents(descending));
  const page = pageOf(found, plan.limit, plan.offset);
  const person = await personCells(
    projectId,
    personColumnIds(columns, () => page.results.map((e) => e.distinct_id)),
  );
  return { results: page.results.map((e) => eventRow(columns, e, projectId, person)), hasMore: page.hasMore };
}

/** count() grouped by the other columns, over the window's events read like a trend reads them. */
async function countedRows(
  plan: Plan,
  now: Date,
  filterProperties: string[],
): Promise<{ results: unknown[][]; hasMore: boolean }> {
  const { projectId, columns, name, window } = plan;
  const groupProperties = columns.flatMap((c) => (c.kind === 'property' ? [c.key] : []));
  const projection = { properties: [...new Set([...filterProperties, ...groupProperties])], distinctIds: true };
  const { columns: stored } = await readTrendRows(
    projectId,
    new Date(window.after),
    new Date(window.before),
    name === null ? null : [name],
    projection,
    now,
    plan.check,
  );
  const candidates: CountedEvent[] = [];
  const candidate = checking(plan.check, plan.candidate);
  for (const { name: event, segment } of stored.segments) {
    plan.check();
    forEachRow(segment, projection, (distinct_id, t, properties) => {
      const e = { event, distinct_id, t, properties };
      if (candidate(e)) candidates.push(e);
    });
  }
  for (const row of stored.rows) if (candidate(row)) candidates.push(row);
  const counted = await filtered(plan, candidates);
  const groups = countGroups(columns, counted, plan.check);
  plan.check();
  const page = pageOf(orderGroups(groups, plan.descending), plan.limit, plan.offset);
  const personColumn = columns.findIndex((c) => c.kind === 'person');
  const person = await personCells(
    projectId,
    personColumnIds(columns, () => page.results.map((g) => String(g.values[personColumn]))),
  );
  return { results: page.results.map((g) => groupRow(columns, g, person)), hasMore: page.hasMore };
}
