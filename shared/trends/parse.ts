/**
 * The legacy trend request (posthog/models/filters/*, posthog/api/insight.py `trend`): a POST body,
 * or a GET query string whose structured values are JSON strings, validated and converted into the
 * engine's model (model.ts) as PostHog's filter_to_query converts a legacy filter into a TrendsQuery.
 * Everything is validated here so the engine never sees a request it cannot answer; errors name the
 * field as DRF would (`events__0__math`), and so do the engine's later ones (the model's attrs).
 */
import { textOf, ValidationError } from '#shared/errors.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '#shared/json.ts';
import { type Expr, unalias } from '#shared/hogql/index.ts';
import { parseDateExpression, relativeParts } from './dates.ts';
import { parseFormula } from './formula.ts';
import { cohortBreakdownModel } from './cohort-filters.ts';
import { ACTOR_MATHS, groupTypeIndexOf } from './groups.ts';
import { HOGQL, parseTrendExpr } from './hogql.ts';
import { checkBreakdownLimit, checkEarliestYear, checkRelativeReach, checkSeriesCount, MAX_SERIES } from './limits.ts';
import type { BreakdownModel, ModelAttrs, SeriesModel, TrendsModel } from './model.ts';
import { parseProperties } from './properties.ts';
import {
  COUNT_PER_ACTOR_MATHS,
  PROPERTY_MATHS,
  UNBROKEN_DISPLAYS,
  type Display,
  type Interval,
  type SeriesMath,
  type PropertyGroup,
} from './types.ts';

const KNOWN_MATHS = new Set<string>([
  'total',
  'dau',
  'weekly_active',
  'monthly_active',
  'unique_session',
  'unique_group',
  ...PROPERTY_MATHS,
  ...COUNT_PER_ACTOR_MATHS,
  'hogql',
]);
const UNSUPPORTED_MATHS: Record<string, string> = {
  first_time_for_user: 'Math "first_time_for_user" is not supported.',
  first_matching_event_for_user: 'Math "first_matching_event_for_user" is not supported.',
};

export const DEFAULT_BREAKDOWN_LIMIT = 25;
/** PostHog raises the limit for WorldMap so every country shows. */
export const WORLD_MAP_BREAKDOWN_LIMIT = 300;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const blank = (v: unknown) => v === undefined || v === null || v === '';

/** A structured value that a GET sends as a JSON string. */
function jsonValue(raw: unknown, attr: string): unknown {
  if (typeof raw !== 'string') return raw;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ValidationError('Value must be valid JSON.', attr);
  }
  // A body is refused past this depth before it is parsed; a GET's JSON parameters get the same limit.
  if (nestedDeeperThan(value))
    throw new ValidationError(`Value may not nest deeper than ${MAX_JSON_DEPTH} levels.`, attr);
  return value;
}

function tryJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function booleanValue(raw: unknown, attr: string): boolean {
  if (blank(raw)) return false;
  if (typeof raw === 'boolean') return raw;
  if (raw === 'true' || raw === '1' || raw === 'True' || raw === 1) return true;
  if (raw === 'false' || raw === '0' || raw === 'False' || raw === 0) return false;
  throw new ValidationError('Must be a valid boolean.', attr);
}

function optionalString(raw: unknown, attr: string): string | null {
  if (blank(raw)) return null;
  if (typeof raw !== 'string') throw new ValidationError('Not a valid string.', attr);
  return raw;
}

function integerValue(raw: unknown, attr: string): number | null {
  if (blank(raw)) return null;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!Number.isInteger(n)) throw new ValidationError('A valid integer is required.', attr);
  return n;
}

/** The legacy request's own field names, for the engine's later errors. */
const LEGACY_ATTRS: ModelAttrs = {
  series: 'events',
  date_from: 'date_from',
  date_to: 'date_to',
  interval: 'interval',
  breakdown_limit: 'breakdown_limit',
  compare: 'compare',
  compare_to: 'compare_to',
  timezone: 'timezone',
  testAccounts: { attr: 'filter_test_accounts', each: true },
};

export function parseTrendRequest(raw: Record<string, unknown>): TrendsModel {
  if (!isObject(raw)) throw new ValidationError('Expected an object.', null);
  const aggregationGroup = groupTypeIndexOf(raw.aggregation_group_type_index, 'aggregation_group_type_index');
  const events = entityList(raw.events, 'events');
  const actions = entityList(raw.actions, 'actions');
  if (!events.length && !actions.length)
    throw new ValidationError('At least one of events or actions is required.', 'events', 'required');
  checkSeriesCount(events.length, actions.length);
  const series = orderSeries([...actions, ...events]);
  const display = parseDisplay(raw.display, 'display');
  const formula = optionalString(raw.formula, 'formula')?.trim() || null;
  const compareTo = parseCompareTo(raw.compare_to, 'compare_to');
  const explicitDate = booleanValue(raw.explicit_date, 'explicit_date');
  // Checked in the order the fields were always checked: a request with several faults names the same one.
  const properties = parseProperties(jsonValue(raw.properties, 'properties'), 'properties', HOGQL).group;
  const filterTestAccounts = booleanValue(raw.filter_test_accounts, 'filter_test_accounts');
  const dateRange = {
    date_from: parseDate(raw.date_from, 'date_from', true),
    date_to: parseDate(raw.date_to, 'date_to', false),
    explicitDate,
  };
  const interval = parseInterval(raw.interval, 'interval');
  const breakdownFilter = breakdownModel(
    {
      type: raw.breakdown_type,
      breakdown: raw.breakdown,
      limit: raw.breakdown_limit,
      hideOther: raw.breakdown_hide_other_aggregation,
      groupTypeIndex: raw.breakdown_group_type_index,
    },
    display,
    LEGACY_BREAKDOWN_ATTRS,
  );
  return {
    series,
    dateRange,
    interval,
    properties,
    filterTestAccounts,
    aggregation_group_type_index: aggregationGroup,
    breakdownFilter,
    // `compare_to` without `compare` still asks for a comparison (the newer compareFilter sends both).
    compareFilter: { compare: booleanValue(raw.compare, 'compare') || compareTo !== null, compare_to: compareTo },
    trendsFilter: { display, formula },
    formula: formula === null ? null : parseFormula(formula, series.length, 'formula'),
    attrs: LEGACY_ATTRS,
  };
}

type Ordered = { series: SeriesModel; requestedOrder: number | null };

function entityList(raw: unknown, list: 'events' | 'actions'): Ordered[] {
  const value = jsonValue(raw, list);
  if (blank(value)) return [];
  if (!Array.isArray(value))
    throw new ValidationError(`Expected a list of items but got type "${typeof value}".`, list);
  if (value.length > MAX_SERIES)
    checkSeriesCount(list === 'events' ? value.length : 0, list === 'actions' ? value.length : 0);
  return value.map((item, i) => parseEntity(item, list, i));
}

/** One entry of `events` or `actions` as a series of the model (filter_to_query's series node). */
function parseEntity(raw: unknown, list: 'events' | 'actions', index: number): Ordered {
  const attr = `${list}__${index}`;
  if (!isObject(raw)) throw new ValidationError('Invalid data. Expected a dictionary.', attr);
  const idAttr = `${attr}__id`;
  const series = seriesModel(
    raw,
    () => parseProperties(jsonValue(raw.properties, `${attr}__properties`), `${attr}__properties`, HOGQL),
    () => (list === 'events' ? { event: eventId(raw.id, idAttr) } : { id: actionId(raw.id, idAttr) }),
    { attr, idAttr, list, index },
  );
  return { series, requestedOrder: integerValue(raw.order, `${attr}__order`) };
}

/**
 * A series of the model, from either front end: its fields as sent (checked here), then its filters
 * and its event or action, parsed by the caller under its own names (in this order, which decides
 * the error a request with several faults gets); `attr` names the series in errors.
 */
export function seriesModel(
  raw: {
    name?: unknown;
    custom_name?: unknown;
    math?: unknown;
    math_property?: unknown;
    math_property_type?: unknown;
    math_hogql?: unknown;
    math_group_type_index?: unknown;
  },
  parseFilters: () => { group: PropertyGroup; echo: unknown[] },
  parseTarget: () => { event: string | null } | { id: number },
  where: { attr: string; idAttr: string; list: 'events' | 'actions'; index: number },
): SeriesModel {
  const { attr } = where;
  const math = parseMath(raw.math, `${attr}__math`);
  const mathHogql = math === 'hogql' ? parseMathHogql(raw.math_hogql, `${attr}__math_hogql`) : null;
  const mathProperty = optionalString(raw.math_property, `${attr}__math_property`);
  if ((PROPERTY_MATHS as readonly string[]).includes(math) && !mathProperty) {
    throw new ValidationError(`Math "${math}" needs a math_property.`, `${attr}__math_property`, 'required');
  }
  // Read by unique_group and the actor maths only (PostHog ignores it on the others).
  const mathGroup =
    math === 'unique_group' || ACTOR_MATHS.has(math)
      ? groupTypeIndexOf(raw.math_group_type_index, `${attr}__math_group_type_index`)
      : null;
  if (math === 'unique_group' && mathGroup === null)
    throw new ValidationError(
      'Math "unique_group" needs a math_group_type_index.',
      `${attr}__math_group_type_index`,
      'required',
    );
  const properties = parseFilters();
  const target = parseTarget();
  const common = {
    name: optionalString(raw.name, `${attr}__name`),
    custom_name: optionalString(raw.custom_name, `${attr}__custom_name`),
    math,
    math_property: mathProperty,
    math_property_type: parseMathPropertyType(raw.math_property_type, `${attr}__math_property_type`),
    math_hogql: mathHogql,
    math_group_type_index: mathGroup,
    properties: properties.group,
    attr,
    idAttr: where.idAttr,
    echo: { list: where.list, index: where.index, properties: properties.echo },
  };
  return 'event' in target
    ? { kind: 'EventsNode', ...target, ...common }
    : { kind: 'ActionsNode', ...target, ...common };
}

function eventId(raw: unknown, attr: string): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === 'string' || typeof raw === 'number') return String(raw);
  throw new ValidationError('Not a valid string.', attr);
}

function actionId(raw: unknown, attr: string): number {
  const id = integerValue(raw, attr);
  if (id === null) throw new ValidationError('This field is required.', attr, 'required');
  return id;
}

/** `math: "hogql"`: an aggregate expression computed per bucket (`avg(toFloat(properties.price))`). */
function parseMathHogql(raw: unknown, attr: string): Expr {
  if (blank(raw)) throw new ValidationError('Math "hogql" needs a math_hogql expression.', attr, 'required');
  return parseTrendExpr(raw, attr, 'aggregate');
}

function parseMath(raw: unknown, attr: string): SeriesMath {
  if (blank(raw)) return 'total';
  const math = textOf(raw);
  // Own keys only: `constructor` or `isPrototypeOf` are not entries of the table (they are Object.prototype's).
  if (Object.hasOwn(UNSUPPORTED_MATHS, math)) throw new ValidationError(UNSUPPORTED_MATHS[math]!, attr);
  if (!KNOWN_MATHS.has(math)) throw new ValidationError(`"${math}" is not a valid choice.`, attr, 'invalid_choice');
  return math as SeriesMath;
}

function parseMathPropertyType(raw: unknown, attr: string): SeriesModel['math_property_type'] {
  if (blank(raw) || raw === 'event_properties') return 'event_properties';
  if (raw === 'person_properties') return 'person_properties';
  throw new ValidationError(`"${textOf(raw)}" is not a valid choice.`, attr, 'invalid_choice');
}

/**
 * Series order: PostHog's Filter.entities (and filter_to_query's `_entities`) sorts actions + events
 * (in that order) by `order`, reading 0 or none as -1 (`entity.order if entity.order else -1`); the
 * sort is stable, so without any `order` it is actions then events in list order.
 */
function orderSeries(entities: Ordered[]): SeriesModel[] {
  const key = (e: Ordered) => e.requestedOrder || -1;
  return entities
    .map((e, position) => ({ e, position }))
    .sort((a, b) => key(a.e) - key(b.e) || a.position - b.position)
    .map(({ e }) => e.series);
}

/** Echoed on every row, so an unknown display is kept short. */
export const MAX_DISPLAY_LENGTH = 100;

/** Any display string: the legacy endpoint answers one it does not know as a time series (ActionsLineGraph). */
export function parseDisplay(raw: unknown, attr: string): Display {
  const display = optionalString(raw, attr);
  if (display === null) return 'ActionsLineGraph';
  if (display.length > MAX_DISPLAY_LENGTH)
    throw new ValidationError(`display is longer than ${MAX_DISPLAY_LENGTH} characters.`, attr);
  return display;
}

/** `minute` is accepted and answered hourly, as the legacy endpoint did. */
export function parseInterval(raw: unknown, attr: string): Interval {
  if (blank(raw)) return 'day';
  if (raw === 'minute') return 'hour';
  if (raw === 'hour' || raw === 'day' || raw === 'week' || raw === 'month') return raw;
  throw new ValidationError(`"${textOf(raw)}" is not a valid choice.`, attr, 'invalid_choice');
}

/** A `date_from` (`allowAll`: `all` is one) or `date_to`: null when absent, else trimmed and checked. */
export function parseDate(raw: unknown, attr: string, allowAll: boolean): string | null {
  const value = optionalString(raw, attr);
  if (value === null) return null;
  const expr = parseDateExpression(value);
  if (!expr) reachOrInvalid(value, attr);
  if (expr.kind === 'all' && !allowAll) throw new ValidationError(`"${value}" is not a valid date.`, attr);
  if (expr.kind === 'relative') checkRelativeReach(value, expr.n, expr.unit, attr);
  if (expr.kind === 'absolute') checkEarliestYear(value, expr.date.year, attr);
  return value.trim();
}

/** A relative date too far back for any instant is refused as reaching too far; anything else as not a date. */
function reachOrInvalid(value: string, attr: string): never {
  const rel = relativeParts(value);
  if (rel) checkRelativeReach(value, rel.n, rel.unit, attr);
  throw new ValidationError(`"${value}" is not a valid date.`, attr);
}

/** `compare_to`: a relative offset into the past (`-1w`, `-1y`), or null. */
export function parseCompareTo(raw: unknown, attr: string): string | null {
  const value = optionalString(raw, attr);
  if (value === null) return null;
  const expr = parseDateExpression(value);
  const rel = relativeParts(value);
  if (!expr && rel) checkRelativeReach(value, rel.n, rel.unit, attr);
  if (expr?.kind !== 'relative' || expr.position !== null || expr.n < 1 || !value.trim().startsWith('-')) {
    throw new ValidationError(`"${value}" is not a relative date like -1w or -1y.`, attr);
  }
  checkRelativeReach(value, expr.n, expr.unit, attr);
  return value.trim();
}

const BREAKDOWN_TYPES = new Set(['event', 'person', 'session', 'hogql', 'group', 'cohort']);

/** The caller's names of the breakdown's fields. */
export interface BreakdownAttrs {
  breakdown: string;
  breakdown_type: string;
  breakdown_limit: string;
  breakdown_hide_other_aggregation: string;
  breakdown_group_type_index: string;
}

const LEGACY_BREAKDOWN_ATTRS: BreakdownAttrs = {
  breakdown_group_type_index: 'breakdown_group_type_index',
  breakdown: 'breakdown',
  breakdown_type: 'breakdown_type',
  breakdown_limit: 'breakdown_limit',
  breakdown_hide_other_aggregation: 'breakdown_hide_other_aggregation',
};

/**
 * A breakdown as either front end sends it, checked and resolved to where its value is read. Null
 * without one; BoldNumber and CalendarHeatmap answer one value per series: a requested breakdown is
 * still checked, then dropped.
 */
export function breakdownModel(raw: BreakdownInput, display: Display, attrs: BreakdownAttrs): BreakdownModel | null {
  const breakdown = parseBreakdown(raw, display, attrs);
  return UNBROKEN_DISPLAYS.has(display) ? null : breakdown;
}

/** A breakdown's fields as either front end holds them. */
export interface BreakdownInput {
  type: unknown;
  breakdown: unknown;
  limit: unknown;
  hideOther: unknown;
  /** `breakdown_group_type_index`, read for `type: "group"`. */
  groupTypeIndex?: unknown;
}

function parseBreakdown(raw: BreakdownInput, display: Display, attrs: BreakdownAttrs): BreakdownModel | null {
  const type = blank(raw.type) ? 'event' : textOf(raw.type);
  if (!BREAKDOWN_TYPES.has(type))
    throw new ValidationError(`"${type}" is not a valid choice.`, attrs.breakdown_type, 'invalid_choice');
  const limitDefault = display === 'WorldMap' ? WORLD_MAP_BREAKDOWN_LIMIT : DEFAULT_BREAKDOWN_LIMIT;
  const limit = integerValue(raw.limit, attrs.breakdown_limit) ?? limitDefault;
  if (limit < 1) throw new ValidationError('Ensure this value is greater than or equal to 1.', attrs.breakdown_limit);
  checkBreakdownLimit(limit, attrs.breakdown_limit);
  const common = {
    breakdown_limit: limit,
    breakdown_hide_other_aggregation: booleanValue(raw.hideOther, attrs.breakdown_hide_other_aggregation),
  };
  if (type === 'cohort') return { ...cohortBreakdownModel(raw.breakdown, attrs.breakdown), ...common };
  const breakdown = breakdownKey(raw.breakdown, attrs.breakdown);
  if (breakdown === null) {
    // The UI sends WorldMap with a country breakdown; without one we add it, as the map needs it.
    if (display !== 'WorldMap') return null;
    const country = '$geoip_country_code';
    return { breakdown_type: 'event', breakdown: country, source: 'event', property: country, expr: null, ...common };
  }
  if (type === 'group') {
    const index = groupTypeIndexOf(raw.groupTypeIndex, attrs.breakdown_group_type_index);
    if (index === null)
      throw new ValidationError(
        'Breakdown by group needs a breakdown_group_type_index.',
        attrs.breakdown_group_type_index,
        'required',
      );
    return {
      breakdown_type: 'group',
      breakdown,
      source: 'group',
      property: breakdown,
      group_type_index: index,
      expr: null,
      ...common,
    };
  }
  const target = breakdownTarget(type, breakdown, attrs.breakdown);
  return { ...target, breakdown, ...(target.expr ? { attr: attrs.breakdown } : {}), ...common };
}

/** Where a breakdown's value is read: a session breakdown is its duration, a hogql one its expression. */
function breakdownTarget(
  type: string,
  breakdown: string,
  attr: string,
): Pick<BreakdownModel, 'breakdown_type' | 'source' | 'property' | 'expr'> {
  if (type === 'session') {
    if (breakdown !== '$session_duration')
      throw new ValidationError('Session breakdowns support $session_duration only.', attr);
    return { breakdown_type: 'session', source: 'session', property: breakdown, expr: null };
  }
  if (type === 'hogql') return { breakdown_type: 'hogql', ...hogqlBreakdown(breakdown, attr) };
  return {
    breakdown_type: type as 'event' | 'person',
    source: type as 'event' | 'person',
    property: breakdown,
    expr: null,
  };
}

function breakdownKey(raw: unknown, attr: string): string | null {
  let value = raw;
  if (typeof value === 'string' && /^\s*[[{]/.test(value)) value = jsonValue(value, attr);
  else if (typeof value === 'string' && /^\s*".*"\s*$/.test(value)) value = tryJson(value);
  if (Array.isArray(value)) {
    if (value.length > 1) throw new ValidationError('Breaking down by several properties is not supported.', attr);
    value = value[0];
  }
  if (blank(value)) return null;
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  throw new ValidationError('Not a valid string.', attr);
}

/**
 * A HogQL breakdown: any expression over an event (PostHog's `breakdown_type: "hogql"`). One that only
 * reads a top-level property is that property's breakdown (the same values, read without evaluating).
 */
function hogqlBreakdown(expression: string, attr: string): Pick<BreakdownModel, 'source' | 'property' | 'expr'> {
  const expr = parseTrendExpr(expression, attr, 'value');
  const plain = unalias(expr);
  if (plain.kind === 'field' && plain.chain.length === 2 && plain.chain[0] === 'properties')
    return { source: 'event', property: plain.chain[1]!, expr: null };
  if (
    plain.kind === 'field' &&
    plain.chain.length === 3 &&
    plain.chain[0] === 'person' &&
    plain.chain[1] === 'properties'
  )
    return { source: 'person', property: plain.chain[2]!, expr: null };
  return { source: 'hogql', property: expression, expr };
}
