/**
 * Planning a trend over events: the date range and periods, what storage must read (days, names,
 * properties, persons) and the caps. The computation is the columnar engine (columnar/engine.ts).
 */
import { ValidationError } from '#shared/errors.ts';
import {
  dateContext,
  type DateContext,
  fromDateRange,
  type Period,
  periodsOf,
  resolveRange,
  toDateRange,
  windowStart,
} from './dates.ts';
import {
  checkDaysRead,
  checkResponseSize,
  clampToEvents,
  MAX_TREND_BUCKETS,
  type ReadWindow,
  tooManyBuckets,
} from './limits.ts';
import { fieldsOf } from '#shared/hogql/index.ts';
import { actorGroupOf, groupColumn, groupTypesOfFilters, requiredGroupOf } from './groups.ts';
import { HOGQL, propertyKeysOf, readsActors } from './hogql.ts';
import { windowDays } from './math.ts';
import type { ActionsSeries, TrendsModel } from './model.ts';
import { type FilterOptions, parseFilter } from './properties.ts';
import { isValidTimeZone } from './tz.ts';
import {
  ACTIVE_USER_MATHS,
  COUNT_PER_ACTOR_MATHS,
  type ActionDefinition,
  type DateRange,
  type HogQLPropertyFilter,
  isHogQLFilter,
  type ProjectSettings,
  type PropertyFilter,
  type PropertyGroup,
  type SeriesMath,
} from './types.ts';

export function projectContext(query: TrendsModel, project: ProjectSettings, now: Date): DateContext {
  if (!isValidTimeZone(project.timezone))
    throw new ValidationError(`Unknown time zone "${project.timezone}".`, query.attrs.timezone);
  return dateContext(project, now);
}

export function resolveDateRange(
  query: TrendsModel,
  project: ProjectSettings,
  now: Date,
  firstEventAt?: Date,
): DateRange {
  const ctx = projectContext(query, project, now);
  const range = withBucketCap(query, () => resolveRange(query, ctx, firstEventAt?.getTime()));
  checkResponseSize(query, range.buckets.length);
  return toDateRange(range, query.interval, ctx);
}

/** The bucket cap as a 400 (the compared period is resolved on its own and may hold an hour more across DST). */
function withBucketCap<T>(query: TrendsModel, resolve: () => T): T {
  try {
    return resolve();
  } catch (err) {
    if (err instanceof RangeError) throw tooManyBuckets(query);
    throw err;
  }
}

/** The range and the compared one; `now` is irrelevant once the range is resolved. */
export function periodsFor(query: TrendsModel, range: DateRange): Period[] {
  const periods = withBucketCap(query, () =>
    periodsOf(query, fromDateRange(range), {
      tz: range.timezone,
      now: range.to.getTime(),
      weekStartDay: range.week_start_day,
    }),
  );
  for (const p of periods) if (p.buckets.length > MAX_TREND_BUCKETS) throw tooManyBuckets(query, p.buckets.length);
  return periods;
}

/** Where a period's events start, reaching back for the weekly/monthly active windows of its first bucket. */
export function readFrom(query: TrendsModel, period: Period, tz: string): number {
  const first = period.buckets[0];
  const lookbackDays = Math.max(0, ...query.series.map((s) => windowDays(s.math, query.interval) ?? 0));
  return first === undefined || lookbackDays === 0
    ? period.from
    : Math.min(period.from, windowStart(first, lookbackDays, tz));
}

export function eventsNeeded(query: TrendsModel, range: DateRange): { from: Date; to: Date } {
  const periods = periodsFor(query, range);
  const from = Math.min(...periods.map((p) => readFrom(query, p, range.timezone)));
  const to = Math.max(...periods.map((p) => p.to));
  return { from: new Date(from), to: new Date(to) };
}

/**
 * What storage must read: eventsNeeded from the UTC day of the project's first event on, and up to
 * `latestEventAt` (the latest time an event can be stored with, when the caller knows it); the response
 * still shows every requested bucket, zero-filled. Null when nothing can be stored in it. 400 when
 * that is more days than a trend may read (shared/trends/limits.ts).
 */
export function eventsToRead(
  query: TrendsModel,
  range: DateRange,
  firstEventAt: Date | undefined,
  latestEventAt?: Date,
): ReadWindow | null {
  const read = clampToEvents(eventsNeeded(query, range), firstEventAt, latestEventAt);
  const current = { ...query, compareFilter: { compare: false, compare_to: null } };
  checkDaysRead(query, read, () => clampToEvents(eventsNeeded(current, range), firstEventAt, latestEventAt));
  return read;
}

export function indexActions(query: TrendsModel, actions: ActionDefinition[]): Map<number, ActionDefinition> {
  const byId = new Map(actions.map((a) => [a.id, a]));
  for (const entity of query.series) {
    if (entity.kind === 'ActionsNode' && !byId.has(entity.id)) throw unknownAction(entity);
  }
  return byId;
}

/** An action series whose action the project does not have, named as its front end names it. */
export const unknownAction = (series: ActionsSeries) =>
  new ValidationError(`Action ${series.id} does not exist.`, series.idAttr, 'does_not_exist');

/** An action series' definition (indexActions has checked that each exists). */
export const actionOf = (byId: ReadonlyMap<number, ActionDefinition>, id: number) => byId.get(id)!;

/**
 * Event names storage must read, or null when every event is needed: an `id: null` series, an
 * action step without an event, or a session breakdown (a session's duration spans all its events).
 */
export function needsEventNames(query: TrendsModel, actions: ActionDefinition[]): string[] | null {
  if (query.breakdownFilter?.source === 'session') return null;
  const byId = indexActions(query, actions);
  const names = new Set<string>();
  for (const entity of query.series) {
    if (entity.kind === 'EventsNode') {
      if (entity.event === null) return null;
      names.add(entity.event);
      continue;
    }
    for (const step of actionOf(byId, entity.id).steps) {
      if (step.event === null || step.event === undefined) return null;
      names.add(step.event);
    }
  }
  return [...names].sort();
}

const PERSON_MATHS: ReadonlySet<SeriesMath> = new Set<SeriesMath>([...ACTIVE_USER_MATHS, ...COUNT_PER_ACTOR_MATHS]);

type Filter = PropertyFilter | HogQLPropertyFilter;

/** The fields a trend's HogQL expressions read: hogql filters of a group, the breakdown's, each math_hogql. */
const filterFields = (v: Filter): string[][] => (isHogQLFilter(v) ? fieldsOf(v.expr) : []);
const groupFields = (g: PropertyGroup): string[][] =>
  g.values.flatMap((v) => ('values' in v ? groupFields(v) : filterFields(v)));
function expressionFields(query: TrendsModel, testAccounts: Filter[]): string[][] {
  const fields = [...groupFields(query.properties), ...testAccounts.flatMap(filterFields)];
  if (query.breakdownFilter?.expr) fields.push(...fieldsOf(query.breakdownFilter.expr));
  for (const s of query.series) {
    fields.push(...groupFields(s.properties));
    if (s.math_hogql) fields.push(...fieldsOf(s.math_hogql));
  }
  return fields;
}

/** The test-account filters in use (parsed: their expressions read fields too). */
const appliedTestAccounts = (query: TrendsModel, project: ProjectSettings): Filter[] =>
  query.filterTestAccounts ? testAccountFilters(query, project) : [];

/** Person properties and cohort membership are both read through the events' persons. */
const readsPerson = (f: Filter) => f.type === 'person' || f.type === 'cohort';
const groupUsesPersons = (g: PropertyGroup): boolean =>
  g.values.some((v) => ('values' in v ? groupUsesPersons(v) : readsPerson(v)));
const filtersUsePersons = (filters: Filter[] | undefined) => (filters ?? []).some(readsPerson);

/**
 * Whether the answer depends on who the events' persons are (merged distinct ids, person properties):
 * person maths, person filters anywhere (request, series, action steps, test-account filters in use),
 * person property maths, person breakdowns, expressions reading `person_id`, `distinct_id` or
 * `person.properties`. When it does not, storage skips resolving persons.
 */
export function needsPersons(query: TrendsModel, project: ProjectSettings, actions: ActionDefinition[]): boolean {
  const source = query.breakdownFilter?.source;
  if (source === 'person' || source === 'cohort' || groupUsesPersons(query.properties)) return true;
  const testAccounts = appliedTestAccounts(query, project);
  if (filtersUsePersons(testAccounts)) return true;
  if (readsActors(expressionFields(query, testAccounts))) return true;
  const byId = indexActions(query, actions);
  return query.series.some(
    (s) =>
      (PERSON_MATHS.has(s.math) && actorGroupOf(s, query) === null) ||
      (s.math_property !== null && s.math_property_type === 'person_properties') ||
      groupUsesPersons(s.properties) ||
      (s.kind === 'ActionsNode' && actionOf(byId, s.id).steps.some((step) => filtersUsePersons(step.properties))),
  );
}

/** The event key a filter reads: its own, a group filter's `$group_N` column, none for person, cohort and hogql filters. */
const eventKeyOf = (f: Filter): string[] =>
  readsPerson(f) || isHogQLFilter(f)
    ? []
    : f.type === 'group'
      ? [groupColumn((f as PropertyFilter).group_type_index!)]
      : [f.key];
const eventKeysOf = (g: PropertyGroup): string[] =>
  g.values.flatMap((v) => ('values' in v ? eventKeysOf(v) : v.type === 'hogql' ? [] : eventKeyOf(v)));
export const eventFilterKeys = (filters: Filter[] | undefined) => (filters ?? []).flatMap(eventKeyOf);

/**
 * Every event property the answer can depend on: filter keys (request, series, action steps, applied
 * test-account filters), the event breakdown, event property maths, `$session_id` for session
 * maths and breakdowns, and the properties HogQL expressions read (`properties.$a.b` reads `$a`).
 * Storage may hand over events with only these properties.
 */
export function eventPropertiesUsed(
  query: TrendsModel,
  project: ProjectSettings,
  actions: ActionDefinition[],
): string[] {
  const used = new Set<string>(eventKeysOf(query.properties));
  const testAccounts = appliedTestAccounts(query, project);
  for (const k of eventFilterKeys(testAccounts)) used.add(k);
  for (const k of propertyKeysOf(expressionFields(query, testAccounts))) used.add(k);
  const breakdown = query.breakdownFilter;
  if (breakdown?.source === 'event') used.add(breakdown.property);
  if (breakdown?.source === 'session') used.add('$session_id');
  if (breakdown?.source === 'group') used.add(groupColumn(breakdown.group_type_index!));
  const byId = indexActions(query, actions);
  for (const s of query.series) {
    const required = requiredGroupOf(s, query);
    if (required !== null) used.add(groupColumn(required));
    for (const k of eventKeysOf(s.properties)) used.add(k);
    if (s.math === 'unique_session') used.add('$session_id');
    if (s.math_property !== null && s.math_property_type !== 'person_properties') used.add(s.math_property);
    if (s.kind === 'ActionsNode')
      for (const step of actionOf(byId, s.id).steps) for (const k of eventFilterKeys(step.properties)) used.add(k);
  }
  return [...used].sort();
}

/**
 * The group types whose properties the answer reads (group filters anywhere, a group breakdown):
 * the caller loads those groups once per query (GroupLookup).
 */
export function groupTypesRead(query: TrendsModel, project: ProjectSettings, actions: ActionDefinition[]): number[] {
  const types = groupTypesOfFilters(query.properties, new Set());
  const flat = (filters: Filter[] | undefined) => groupTypesOfFilters({ type: 'AND', values: filters ?? [] }, types);
  flat(appliedTestAccounts(query, project));
  if (query.breakdownFilter?.source === 'group') types.add(query.breakdownFilter.group_type_index!);
  const byId = indexActions(query, actions);
  for (const s of query.series) {
    groupTypesOfFilters(s.properties, types);
    if (s.kind === 'ActionsNode') for (const step of actionOf(byId, s.id).steps) flat(step.properties);
  }
  return [...types].sort();
}

/** Filters stored with the project or an action are validated like request filters (400 on what we cannot evaluate). */
export function parseStoredFilters(
  filters: PropertyFilter[] | undefined,
  attr: string,
  options: FilterOptions = {},
): (PropertyFilter | HogQLPropertyFilter)[] {
  return (filters ?? []).map((f, i) => parseFilter(f as unknown as Record<string, unknown>, `${attr}__${i}`, options));
}

/** The project's test-account filters, their errors named as the model's front end names them (ModelAttrs.testAccounts). */
export function testAccountFilters(
  query: TrendsModel,
  project: ProjectSettings,
): (PropertyFilter | HogQLPropertyFilter)[] {
  const { attr, each } = query.attrs.testAccounts;
  if (each) return parseStoredFilters(project.test_account_filters, attr, HOGQL);
  try {
    return parseStoredFilters(project.test_account_filters, attr, HOGQL);
  } catch (error) {
    // The query's field is the switch: the filters themselves are the project's.
    if (error instanceof ValidationError) throw new ValidationError(error.detail, attr, error.code);
    throw error;
  }
}
