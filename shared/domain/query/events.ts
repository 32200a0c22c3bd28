/**
 * EventsQuery (PostHog's events explorer): rows of events, or aggregates grouped by the other columns,
 * with HogQL expressions in `select`, `where` and `orderBy` (events-shape.ts says what they mean).
 *
 * Rows in time order are read from the raw events' day index, newest (or oldest) day first, stopping once the page
 * (+1 row, for `hasMore`) is full. With an event name each Query walks only that name's part of the
 * day (the index's sort key starts with the name), so no other name is read; without one every name
 * of the day is. Compacted day segments do not serve rows: they hold no uuid and only the property
 * columns a reader names, while `*` needs both. count() reads like a trend (event-segments.ts:
 * compacted segments where exact, raw events elsewhere, only the columns it needs). Rows in any other
 * order read the whole window's raw events (within the scan cap) and keep the page's top rows.
 */
import type { EvalContext, HogValue } from '../../hogql/index.ts';
import { now as clockNow } from '../../clock.ts';
import { config } from '../../config.ts';
import { readDayEventsInOrder, type StoredEvent, utcDays } from '../../db/events.ts';
import { getPerson, getPersons, personIdsOf } from '../../db/persons.ts';
import { firstEventAt } from '../../db/projects.ts';
import { ValidationError } from '../../errors.ts';
import type { EventsQuery } from '../../schemas/query/events.ts';
import { forEachRow } from '../../segments/codec.ts';
import { dateContext } from '../../trends/dates.ts';
import { groupColumn } from '../../trends/groups.ts';
import { compileGroup, isGroup, parseProperties } from '../../trends/properties.ts';
import { filterGroupLookup } from '../trend-groups.ts';
import type { PropertyGroup, TrendEvent } from '../../trends/types.ts';
import { readTrendRows } from '../event-days.ts';
import { projectSettings } from '../projects.ts';
import {
  checkAggregation,
  checkAnswerBytes,
  displayCell,
  compareEvents,
  compileColumns,
  compileGrouping,
  compileOrderKey,
  compileWhere,
  type EventFacts,
  type EventsColumn,
  type EventsOrderTerm,
  type Condition,
  eventReader,
  eventValues,
  Groups,
  isAggregation,
  isTimeOrder,
  pageOf,
  parseLimit,
  parseOrder,
  parsePersonId,
  parseSelect,
  parseWhere,
  type PersonCell,
  propertyKeysOf,
  readsPerson,
  refuseUnsupportedFields,
  resolveWindow,
  shapeRows,
} from './events-shape.ts';
import { compareKeys, TopK } from './expressions.ts';
import type { Checkpoint } from './checkpoint.ts';
import type { RunContext } from './runner.ts';
import { cohortRefsOf } from '../../trends/cohort-filters.ts';
import { checkCohortRefs, loadCohortMembers } from '../trend-cohorts.ts';
/**
 * Days read at once on the rows path (each day is 4 shard Queries): one first (a busy day fills the
 * page alone), then twice as many each round up to this, so sparse days are reached in few round trips.
 */
const MAX_DAYS_AT_ONCE = 8;

/** The event properties the filters read (the columns an aggregated query decodes). */
function eventFilterKeys(group: PropertyGroup): string[] {
  return group.values.flatMap((v) =>
    isGroup(v)
      ? eventFilterKeys(v)
      : filterReadsPerson(v.type)
        ? []
        : v.type === 'group'
          ? [groupColumn((v as { group_type_index: number }).group_type_index)]
          : [v.key],
  );
}

/** Person properties and cohort membership are read through the event's person. */
const filterReadsPerson = (type: string | undefined) => type === 'person' || type === 'cohort';

/** Whether a filter reads person properties or cohorts (then every candidate event's person is looked up). */
function usesPersonProperties(group: PropertyGroup): boolean {
  return group.values.some((v) => (isGroup(v) ? usesPersonProperties(v) : filterReadsPerson(v.type)));
}

/** The person id behind each person cell (kept out of the cell, which is PostHog's person column as is). */
const personIdOfCell = new WeakMap<PersonCell, number>();

/** Each distinct id's person column: PostHog's person object, or just the distinct id when it has no person. */
async function personCells(projectId: number, distinctIds: Iterable<string>): Promise<(id: string) => PersonCell> {
  const unique = [...new Set(distinctIds)];
  if (!unique.length) return (distinct_id) => ({ distinct_id });
  const ids = await personIdsOf(unique.map((distinctId) => ({ projectId, distinctId })));
  const persons = new Map((await getPersons(projectId, [...new Set(ids.values())])).map((p) => [p.id, p]));
  return (distinct_id) => {
    const id = ids.get(`${projectId}#${distinct_id}`);
    const p = id === undefined ? undefined : persons.get(id);
    if (!p) return { distinct_id };
    const cell = { uuid: p.uuid, created_at: p.created_at, properties: p.properties, distinct_id };
    personIdOfCell.set(cell, p.id);
    return cell;
  };
}

export async function runEventsQuery(context: RunContext, query: EventsQuery): Promise<Record<string, unknown>> {
  const { projectId } = context;
  refuseUnsupportedFields(query as Record<string, unknown>);
  const columns = parseSelect(query.select);
  const conditions = parseWhere(query.where, columns);
  const aggregated = isAggregation(columns);
  const order = parseOrder(query.orderBy, columns, aggregated);
  checkAggregation(columns, conditions, order, aggregated);
  const { limit, offset } = parseLimit(query.limit, query.offset);
  const { group } = parseProperties(query.properties, 'query__properties', { groups: true, cohorts: true });
  const cohortRefs = cohortRefsOf(group);
  const cohorts = await loadCohortMembers(projectId, await checkCohortRefs(projectId, cohortRefs));
  const personId = parsePersonId(query.personId);
  const firstAt = await firstEventAt(projectId);
  const now = clockNow();
  const ctx = dateContext(projectSettings(context.project), now);
  const evalCtx: EvalContext = { timezone: ctx.tz, now };
  const window = resolveWindow(query.after, query.before, ctx, firstAt?.getTime());
  const matches = compileGroup(group, ctx, {
    groups: await filterGroupLookup(projectId, group, 'query__properties'),
    cohorts,
  });
  const where = compileWhere(conditions, evalCtx);
  const person = personId === undefined ? undefined : await getPerson(projectId, personId);
  const onlyDistinctIds = personId === undefined ? null : new Set(person?.distinct_ids ?? []);
  const expressions = columns.flatMap((c) => (c.kind === 'expr' ? [c] : []));
  const plan: Plan = {
    projectId,
    columns,
    conditions,
    order,
    name: query.event || null,
    window,
    tz: ctx.tz,
    evalCtx,
    candidate: (e) =>
      e.t > window.after && e.t < window.before && (onlyDistinctIds === null || onlyDistinctIds.has(e.distinct_id)),
    matches: (e, cell) =>
      matches(asTrendEvent(e, cell && 'properties' in cell ? cell.properties : NO_PROPERTIES, cell)) &&
      where(eventReader(e, ctx.tz, cell)),
    personFilters:
      usesPersonProperties(group) ||
      readsPerson(conditions) ||
      (!isTimeOrder(order) && readsPerson(order)) ||
      (aggregated && readsPerson(expressions)),
    limit,
    offset,
    check: context.check,
  };
  const values = aggregated
    ? await aggregatedRows(plan, now, [
        ...eventFilterKeys(group),
        ...propertyKeysOf([...expressions, ...conditions, ...order]),
      ])
    : isTimeOrder(order)
      ? await eventRows(plan, order[0]!.descending)
      : await orderedRows(plan);
  const { results, types } = shapeRows(columns, values.results);
  const body = { results, columns: columns.map((c) => c.label), types, hasMore: values.hasMore, limit, offset };
  checkAnswerBytes(Buffer.byteLength(JSON.stringify(body)));
  return body;
}

/** A validated query, ready to read. */
interface Plan {
  projectId: number;
  columns: EventsColumn[];
  conditions: Condition[];
  order: EventsOrderTerm[];
  /** null: every event name. */
  name: string | null;
  /** Exclusive bounds, epoch ms. */
  window: { after: number; before: number };
  /** The project's time zone (expressions read times in it). */
  tz: string;
  evalCtx: EvalContext;
  /** In the window and of personId's distinct ids. */
  candidate: (e: EventFacts) => boolean;
  /** The property filters and `where`, given the event's person (undefined unless `personFilters`). */
  matches: (e: EventFacts, person: PersonCell | undefined) => boolean;
  /** The filters (or the order, or aggregates) read the event's person: candidates' persons are looked up first. */
  personFilters: boolean;
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

const asTrendEvent = (
  e: EventFacts,
  personProperties: Record<string, unknown>,
  cell: PersonCell | undefined,
): TrendEvent => ({
  event: e.event,
  distinct_id: e.distinct_id,
  // Cohort filters test the person's id (compileGroup); without a person the distinct id stands for itself.
  person_id: cell && personIdOfCell.has(cell) ? String(personIdOfCell.get(cell)) : e.distinct_id,
  timestamp: e.t,
  properties: e.properties,
  person_properties: personProperties,
});

type Found = StoredEvent & EventFacts;

const asFound = (e: StoredEvent): Found => ({ ...e, t: Date.parse(e.timestamp) });

/**
 * The candidates the filters keep, persons looked up first when the filters read them; with the
 * lookup, so later steps (orders, cells) read the same persons.
 */
async function filtered<E extends EventFacts>(
  plan: Plan,
  candidates: E[],
): Promise<{ kept: E[]; person: ((id: string) => PersonCell) | undefined }> {
  if (!plan.personFilters)
    return { kept: candidates.filter(checking(plan.check, (e: E) => plan.matches(e, undefined))), person: undefined };
  const person = await personCells(
    plan.projectId,
    candidates.map((e) => e.distinct_id),
  );
  plan.check();
  return { kept: candidates.filter(checking(plan.check, (e: E) => plan.matches(e, person(e.distinct_id)))), person };
}

function tooManyEvents(cap: number): ValidationError {
  return new ValidationError(
    `This query would read more than ${cap.toLocaleString('en-US')} events, the most one EventsQuery reads (ANALYTICS_EVENTS_QUERY_SCAN_LIMIT): give an "event", narrow "after"/"before", or add filters that leave fewer events to skip.`,
    'query__after',
  );
}

/** Whether the page's cells read persons (a `person` column or an expression over person fields). */
const cellsReadPersons = (columns: EventsColumn[]) =>
  columns.some((c) => c.kind === 'person' || c.kind === 'display' || (c.kind === 'expr' && readsPerson([c])));

/** The page's events as values per column, their persons looked up when a cell reads them. */
async function pageValues(plan: Plan, events: Found[]): Promise<unknown[][]> {
  const person = cellsReadPersons(plan.columns)
    ? await personCells(
        plan.projectId,
        events.map((e) => e.distinct_id),
      )
    : (distinct_id: string) => ({ distinct_id });
  const cells = compileColumns(plan.columns, plan.evalCtx);
  return events.map((e) =>
    eventValues(plan.columns, cells, e, plan.projectId, eventReader(e, plan.tz, person(e.distinct_id)), person),
  );
}

/** Rows in time order: day by day in that order until offset + limit + 1 events are kept. */
/**
 * What a day read keeps, called on every event read (the reads' checkpoint). Person filters are
 * applied after the read (they need the persons), so then a shard reads its whole day.
 */
function keepWhileReading(plan: Plan): (e: StoredEvent) => boolean {
  return checking(
    plan.check,
    plan.personFilters
      ? (e: StoredEvent) => plan.candidate(asFound(e))
      : (e: StoredEvent) => {
          const c = asFound(e);
          return plan.candidate(c) && plan.matches(c, undefined);
        },
  );
}

async function eventRows(plan: Plan, descending: boolean): Promise<{ results: unknown[][]; hasMore: boolean }> {
  const { projectId, name, window } = plan;
  const need = plan.offset + plan.limit + 1;
  const days = utcDays(new Date(window.after), new Date(window.before));
  if (descending) days.reverse();
  const range = { from: new Date(window.after), to: new Date(window.before), newestFirst: descending };
  const keep = keepWhileReading(plan);
  const found: Found[] = [];
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
      const { kept } = plan.personFilters
        ? await filtered(plan, read.events.map(asFound))
        : { kept: read.events.map(asFound) };
      found.push(...kept.slice(0, need - found.length));
    }
    size = Math.min(2 * size, MAX_DAYS_AT_ONCE);
  }
  plan.check();
  found.sort(compareEvents(descending));
  const page = pageOf(found, plan.limit, plan.offset);
  return { results: await pageValues(plan, page.results), hasMore: page.hasMore };
}

/**
 * Rows in an expression's order: every event of the window is a candidate, so the whole window is
 * read (within the scan cap, as any rows query), and only the best offset + limit + 1 are kept.
 */
async function orderedRows(plan: Plan): Promise<{ results: unknown[][]; hasMore: boolean }> {
  const { projectId, name, window } = plan;
  const need = plan.offset + plan.limit + 1;
  const days = utcDays(new Date(window.after), new Date(window.before));
  const range = { from: new Date(window.after), to: new Date(window.before), newestFirst: false };
  const keep = keepWhileReading(plan);
  const keyOf = compileOrderKey(plan.order, plan.evalCtx);
  const byKey = compareKeys(plan.order.map((t) => t.descending));
  // Ties in the order fall back to the events' own order, newest first (so pages never overlap).
  const byTime = compareEvents(true);
  const top = new TopK<{ e: Found; key: HogValue[] }>(need, (a, b) => byKey(a.key, b.key) || byTime(a.e, b.e));
  const cap = config().eventsQueryScanLimit;
  const budget = { items: cap };
  while (days.length) {
    plan.check();
    const reads = await Promise.all(
      days
        .splice(0, MAX_DAYS_AT_ONCE)
        .map((day) => readDayEventsInOrder(projectId, day, name, range, Number.POSITIVE_INFINITY, keep, budget)),
    );
    // Days read side by side may each take a page of the budget: what was read past it is over the cap too.
    if (budget.items < 0) throw tooManyEvents(cap);
    for (const read of reads) {
      if (!read.complete) throw tooManyEvents(cap);
      const events = read.events.map(asFound);
      const { kept, person } = plan.personFilters ? await filtered(plan, events) : { kept: events, person: undefined };
      kept.forEach((e, i) => {
        if (i % CHECK_EVERY === 0) plan.check();
        top.push({ e, key: keyOf(eventReader(e, plan.tz, person?.(e.distinct_id))) });
      });
    }
  }
  plan.check();
  const page = pageOf(
    top.sorted().map((r) => r.e),
    plan.limit,
    plan.offset,
  );
  return { results: await pageValues(plan, page.results), hasMore: page.hasMore };
}

function tooManyPersons(cap: number): ValidationError {
  return new ValidationError(
    `This query reads the persons of more than ${cap.toLocaleString('en-US')} distinct ids, the most one aggregated EventsQuery looks up (ANALYTICS_EVENTS_QUERY_SCAN_LIMIT): narrow "after"/"before", give an "event", or leave person fields and person filters out.`,
    'query__after',
  );
}

function tooManyAggregated(cap: number): ValidationError {
  return new ValidationError(
    `This query would aggregate more than ${cap.toLocaleString('en-US')} events, the most one aggregated EventsQuery reads (ANALYTICS_EVENTS_QUERY_AGGREGATE_LIMIT): give an "event" or narrow "after"/"before".`,
    'query__after',
  );
}

/**
 * Aggregates grouped by the other columns, over the window's events read like a trend reads them
 * (compacted columns, only the properties the query names). Events stream into their groups: memory
 * holds the groups (capped), not the events.
 */
async function aggregatedRows(
  plan: Plan,
  now: Date,
  properties: string[],
): Promise<{ results: unknown[][]; hasMore: boolean }> {
  const { projectId, columns, name, window } = plan;
  const projection = { properties: [...new Set(properties)], distinctIds: true };
  const { columns: stored } = await readTrendRows(
    projectId,
    new Date(window.after),
    new Date(window.before),
    name === null ? null : [name],
    projection,
    now,
    plan.check,
  );
  const { eventsQueryAggregateLimit: cap, eventsQueryGroupLimit, eventsQueryScanLimit } = config();
  /** Every event read, in the window or not, counted against the cap; the checkpoint every CHECK_EVERY. */
  const each = (visit: (e: EventFacts) => void) => {
    let read = 0;
    const counted = (e: EventFacts) => {
      read += 1;
      if (read > cap) throw tooManyAggregated(cap);
      if (read % CHECK_EVERY === 0) plan.check();
      visit(e);
    };
    for (const { name: event, segment } of stored.segments) {
      plan.check();
      forEachRow(segment, projection, (distinct_id, t, props) => counted({ event, distinct_id, t, properties: props }));
    }
    for (const row of stored.rows) counted(row);
  };
  let person: ((id: string) => PersonCell) | undefined;
  if (plan.personFilters) {
    const ids = new Set<string>();
    each((e) => {
      if (plan.candidate(e)) ids.add(e.distinct_id);
    });
    // Each distinct id's person is a lookup: as many as the rows paths examine events, no more.
    if (ids.size > eventsQueryScanLimit) throw tooManyPersons(eventsQueryScanLimit);
    person = await personCells(projectId, ids);
    plan.check();
  }
  const groups = new Groups(compileGrouping(columns, plan.conditions, plan.order, plan.evalCtx), eventsQueryGroupLimit);
  each((e) => {
    if (!plan.candidate(e)) return;
    const cell = person?.(e.distinct_id);
    if (plan.matches(e, cell)) groups.add(eventReader(e, plan.tz, cell));
  });
  const page = pageOf(groups.rows(plan.check), plan.limit, plan.offset);
  const personColumn = columns.findIndex((c) => c.kind === 'person' || c.kind === 'display');
  if (personColumn < 0) return { results: page.results, hasMore: page.hasMore };
  const cells = await personCells(
    projectId,
    page.results.map((r) => String(r[personColumn])),
  );
  const shown = (kind: EventsColumn['kind'], v: unknown) =>
    kind === 'person' ? cells(String(v)) : kind === 'display' ? displayCell(String(v), cells(String(v))) : v;
  return { results: page.results.map((r) => r.map((v, i) => shown(columns[i]!.kind, v))), hasMore: page.hasMore };
}
