/**
 * Property filters (posthog/models/property/util.py, posthog/hogql/property.py): validation at
 * parse time, then compiled into predicates over events.
 */
import { textOf, ValidationError } from '#shared/errors.ts';
import type { Expr } from '#shared/hogql/ast.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '#shared/json.ts';
import { compileRegex } from '#shared/regex.ts';
import {
  COHORT_FILTER_TYPES,
  type CohortSets,
  cohortFilterEcho,
  isCohortFilter,
  isMember,
  parseCohortFilter,
} from './cohort-filters.ts';
import { type DateContext, parseDateExpression, resolveExpression } from './dates.ts';
import { type GroupLookup, groupColumn, groupKeyText, groupTypeIndexOf, NO_GROUPS } from './groups.ts';
import { endOfLocalDay, fromLocal } from './tz.ts';
import {
  type HogQLPropertyFilter,
  isHogQLFilter,
  type PropertyFilter,
  type PropertyGroup,
  type TrendEvent,
} from './types.ts';

export { compileRegex, MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM } from '#shared/regex.ts';

export const OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
  'is_date_exact',
  'between',
  'not_between',
  'min',
  'max',
] as const;
export type Operator = (typeof OPERATORS)[number];

const NUMERIC_OPERATORS = new Set<string>(['gt', 'gte', 'lt', 'lte', 'min', 'max']);
const RANGE_OPERATORS = new Set<string>(['between', 'not_between']);
const DATE_OPERATORS = new Set<string>(['is_date_before', 'is_date_after', 'is_date_exact']);
const REGEX_OPERATORS = new Set<string>(['regex', 'not_regex']);
const VALUELESS_OPERATORS = new Set<string>(['is_set', 'is_not_set']);

const UNSUPPORTED_TYPES: Record<string, string> = {
  cohort: 'Cohort filters are not supported here.',
  'precalculated-cohort': 'Cohort filters are not supported here.',
  'static-cohort': 'Cohort filters are not supported here.',
  group: 'Group filters are not supported here.',
  element: 'Element (autocapture) filters are not supported.',
  session: 'Session filters are not supported.',
  hogql: 'HogQL filters are not supported.',
};

/** Where filters are read: `hogql` when the reader evaluates `{"type": "hogql", "key": <expression>}` filters (trends). */
export interface FilterOptions {
  /**
   * Parses a `{"type": "hogql", "key": <expression>}` filter's expression (trends: hogql.ts HOGQL);
   * without it such filters are a 400. Passed in, so this file does not import the HogQL library.
   */
  hogql?: (text: string, attr: string) => Expr;
  /** Whether the reader evaluates `{"type": "group", "group_type_index": n}` filters (trends); else they are a 400. */
  groups?: boolean;
  /** Cohort filters (`type: "cohort"`) are read (trends: the engine tests them against loaded members); otherwise a 400. */
  cohorts?: boolean;
}

export const EMPTY_GROUP: PropertyGroup = { type: 'AND', values: [] };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function isGroup(v: PropertyFilter | HogQLPropertyFilter | PropertyGroup): v is PropertyGroup {
  return Array.isArray((v as PropertyGroup).values) && !('key' in v);
}

/**
 * Properties as the request may send them: a list (AND), a group `{type, values}`, PostHog's old
 * dict form `{"$browser": "Chrome", "$current_url__icontains": "x"}`, or any of these as a JSON
 * string (GET). Returns the normalized group and the form to echo back.
 */
export function parseProperties(
  raw: unknown,
  attr: string,
  options: FilterOptions = {},
): { group: PropertyGroup; echo: unknown[] } {
  let value = raw;
  if (value === undefined || value === null || value === '') return { group: EMPTY_GROUP, echo: [] };
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw new ValidationError('Properties must be a JSON list or property group.', attr);
    }
  }
  refuseDeepNesting(value, attr);
  if (Array.isArray(value)) {
    const values = value.map((item, i) => parseItem(item, `${attr}__${i}`, options));
    return { group: { type: 'AND', values }, echo: values.map(echoOf) };
  }
  if (isObject(value) && Array.isArray(value.values)) {
    const group = parseGroup(value, attr, options);
    return { group, echo: [echoOf(group)] };
  }
  if (isObject(value)) {
    const values = Object.entries(value).map(([k, v]) => legacyDictFilter(k, v, `${attr}__${k}`));
    return { group: { type: 'AND', values }, echo: values };
  }
  throw new ValidationError('Properties must be a list or a property group.', attr);
}

/** Groups are parsed and compiled recursively: their depth is bounded, whatever route or stored record they came from. */
export function refuseDeepNesting(value: unknown, attr: string): void {
  if (nestedDeeperThan(value))
    throw new ValidationError(`Properties may not nest deeper than ${MAX_JSON_DEPTH} levels.`, attr);
}

function legacyDictFilter(key: string, value: unknown, attr: string): PropertyFilter {
  const sep = key.lastIndexOf('__');
  const suffix = sep > 0 ? key.slice(sep + 2) : '';
  const filter = (OPERATORS as readonly string[]).includes(suffix)
    ? { key: key.slice(0, sep), value, operator: suffix }
    : { key, value };
  return parseFilter(filter, attr);
}

type Item = PropertyFilter | HogQLPropertyFilter | PropertyGroup;

function parseItem(item: unknown, attr: string, options: FilterOptions): Item {
  if (!isObject(item)) throw new ValidationError('Each property filter must be an object.', attr);
  return Array.isArray(item.values) && item.key === undefined
    ? parseGroup(item, attr, options)
    : parseFilter(item, attr, options);
}

function parseGroup(raw: Record<string, unknown>, attr: string, options: FilterOptions): PropertyGroup {
  const type = raw.type === undefined ? 'AND' : textOf(raw.type).toUpperCase();
  if (type !== 'AND' && type !== 'OR')
    throw new ValidationError(`"${textOf(raw.type)}" is not a valid choice.`, `${attr}__type`);
  const values = (raw.values as unknown[]).map((item, i) => parseItem(item, `${attr}__values__${i}`, options));
  return { type, values };
}

/** Filters as echoed back: a hogql filter as sent (`{key, type: "hogql", value: null}`), without its parsed expression. */
export function echoOf(item: Item): PropertyFilter | PropertyGroup {
  if (isGroup(item)) return echoGroup(item);
  if (isCohortFilter(item)) return cohortFilterEcho(item);
  return isHogQLFilter(item) ? { key: item.key, type: 'hogql', value: null } : item;
}

export const echoGroup = (group: PropertyGroup): PropertyGroup => ({ ...group, values: group.values.map(echoOf) });

export function parseFilter(raw: Record<string, unknown>, attr: string): PropertyFilter;
export function parseFilter(
  raw: Record<string, unknown>,
  attr: string,
  options: FilterOptions,
): PropertyFilter | HogQLPropertyFilter;
export function parseFilter(
  raw: Record<string, unknown>,
  attr: string,
  options: FilterOptions = {},
): PropertyFilter | HogQLPropertyFilter {
  if (typeof raw.key !== 'string' || raw.key === '')
    throw new ValidationError('This field is required.', `${attr}__key`, 'required');
  const type = raw.type === undefined || raw.type === null ? 'event' : textOf(raw.type);
  // PostHog's HogQLPropertyFilter: the key is a boolean expression; value and operator are not read.
  if (type === 'hogql' && options.hogql)
    return {
      type: 'hogql',
      key: raw.key,
      expr: options.hogql(raw.key, `${attr}__key`),
      attr: `${attr}__key`,
    };
  if (options.cohorts && COHORT_FILTER_TYPES.has(type)) return parseCohortFilter(raw, attr);
  const group = type === 'group' && options.groups ? groupIndexOf(raw, attr) : null;
  if (group === null && Object.hasOwn(UNSUPPORTED_TYPES, type))
    throw new ValidationError(UNSUPPORTED_TYPES[type]!, `${attr}__type`);
  if (type !== 'event' && type !== 'person' && group === null)
    throw new ValidationError(`"${type}" is not a valid choice.`, `${attr}__type`);
  const operator = raw.operator === undefined || raw.operator === null ? 'exact' : textOf(raw.operator);
  if (!(OPERATORS as readonly string[]).includes(operator))
    throw new ValidationError(`"${operator}" is not a valid operator.`, `${attr}__operator`);
  const filter: PropertyFilter = {
    key: raw.key,
    ...(raw.value === undefined ? {} : { value: raw.value }),
    operator,
    type,
    ...(group === null ? {} : { group_type_index: group }),
  };
  validateValue(filter, `${attr}__value`);
  return filter;
}

/** A group filter's `group_type_index` (0-4), required. */
function groupIndexOf(raw: Record<string, unknown>, attr: string): number {
  const index = groupTypeIndexOf(raw.group_type_index, `${attr}__group_type_index`);
  if (index === null)
    throw new ValidationError('Group filters need a group_type_index.', `${attr}__group_type_index`, 'required');
  return index;
}

function validateValue(f: PropertyFilter, attr: string): void {
  const op = f.operator!;
  if (VALUELESS_OPERATORS.has(op)) return;
  if (f.value === undefined || f.value === null) throw new ValidationError('This field is required.', attr, 'required');
  if (NUMERIC_OPERATORS.has(op) && toNumber(f.value) === null)
    throw new ValidationError(`"${textOf(f.value)}" is not a number.`, attr);
  if (RANGE_OPERATORS.has(op) && !rangeOf(f.value))
    throw new ValidationError('Between filters need a [min, max] pair of numbers with min <= max.', attr);
  if (DATE_OPERATORS.has(op) && !isDateValue(f.value))
    throw new ValidationError(`"${textOf(f.value)}" is not a valid date.`, attr);
  if (REGEX_OPERATORS.has(op)) for (const v of listOf(f.value)) compileRegex(textOf(v), attr);
}

/** PostHog's toFloat64OrNull: numbers and numeric strings; booleans, blanks and the rest are null. */
export function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string') return null;
  const s = v.trim();
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : null;
}

function rangeOf(v: unknown): [number, number] | null {
  if (!Array.isArray(v) || v.length !== 2) return null;
  const [min, max] = [toNumber(v[0]), toNumber(v[1])];
  return min === null || max === null || min > max ? null : [min, max];
}

function isDateValue(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  const expr = parseDateExpression(v);
  return expr !== null && expr.kind !== 'all';
}

const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** How a property value reads as text (ClickHouse JSON extraction: numbers and booleans print as JSON). */
export function propertyText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v) ?? String(v);
}

/** Equality that follows the property's type: a numeric property equals '1' and 1, a string one compares text. */
function equalsTyped(prop: unknown, value: unknown): boolean {
  if (typeof prop === 'number') return toNumber(value) === prop;
  if (typeof prop === 'boolean')
    return value === prop || (typeof value === 'string' && value.toLowerCase() === String(prop));
  if (typeof prop === 'string')
    return typeof value === 'string'
      ? value === prop
      : (typeof value === 'number' || typeof value === 'boolean') && String(value) === prop;
  return propertyText(prop) === (typeof value === 'string' ? value : JSON.stringify(value));
}

export type EventPredicate = (e: TrendEvent) => boolean;

/** What a group's predicate reads beyond the event itself, loaded by the caller. */
export interface FilterLookups {
  /** Group filters read the event's `$group_N` group through it (none: a group filter finds no properties). */
  groups?: GroupLookup;
  /** Cohort filters' members: an event passes when its `person_id` is (not) one of them. */
  cohorts?: CohortSets;
}

/** A group as a predicate over event objects. */
export function compileGroup(group: PropertyGroup, ctx: DateContext, lookups: FilterLookups = {}): EventPredicate {
  const { groups, cohorts } = lookups;
  const parts = group.values.map((v) =>
    isGroup(v)
      ? compileGroup(v, ctx, lookups)
      : isCohortFilter(v) && cohorts?.has(v.value)
        ? cohortPredicate(cohorts.get(v.value)!.members, v.operator !== 'not_in')
        : isHogQLFilter(v) || isCohortFilter(v)
          ? hogqlNotEvaluated()
          : compileFilter(v, ctx, groups),
  );
  if (!parts.length) return () => true;
  return group.type === 'OR' ? (e) => parts.some((p) => p(e)) : (e) => parts.every((p) => p(e));
}

const cohortPredicate =
  (members: ReadonlySet<number>, inside: boolean): EventPredicate =>
  (e) =>
    isMember(members, e.person_id) === inside;

export function compileFilters(filters: PropertyFilter[], ctx: DateContext): EventPredicate {
  return compileGroup({ type: 'AND', values: filters }, ctx);
}

const isMissing = (v: unknown) => v === undefined || v === null;

/**
 * A property of an event or person: own keys only, so `constructor`, `toString` or `__proto__` read as
 * absent unless the properties really hold them (properties are parsed JSON, with Object.prototype).
 */
export function propertyOf(properties: Record<string, unknown> | null | undefined, key: string): unknown {
  return properties && Object.hasOwn(properties, key) ? properties[key] : undefined;
}

/** Distinct primitive values whose test result a compiled filter remembers (property values repeat a lot). */
const MEMO_LIMIT = 4096;

/** HogQL and cohort filters are evaluated on columns only (columnar/masks.ts): readers of event objects refuse them (400) before one gets here. */
export function hogqlNotEvaluated(): never {
  throw new Error('hogql and cohort property filters are evaluated by the columnar engine only');
}

export function compileFilter(f: PropertyFilter, ctx: DateContext, groups: GroupLookup = NO_GROUPS): EventPredicate {
  const key = f.key;
  const index = f.type === 'group' ? f.group_type_index : undefined;
  const read: (e: TrendEvent) => unknown =
    index !== undefined
      ? (e) => {
          const group = groupKeyText(propertyOf(e.properties, groupColumn(index)));
          return propertyOf(group === null ? undefined : groups(index, group), key);
        }
      : f.type === 'person'
        ? (e) => propertyOf(e.person_properties, key)
        : (e) => propertyOf(e.properties, key);
  const test = valueTest(f, ctx);
  const memo = new Map<unknown, boolean>();
  return (e) => {
    const p = read(e);
    if (typeof p === 'object' && p !== null) return test(p);
    let result = memo.get(p);
    if (result === undefined) {
      result = test(p);
      if (memo.size < MEMO_LIMIT) memo.set(p, result);
    }
    return result;
  };
}

/** The test one filter applies to a property value (missing = undefined or null). */
export function valueTest(f: PropertyFilter, ctx: DateContext): (prop: unknown) => boolean {
  const values = listOf(f.value);
  const texts = values.map((v) => propertyText(v).toLowerCase());
  const operator = f.operator ?? 'exact';
  switch (operator) {
    case 'exact':
      return (p) => !isMissing(p) && values.some((v) => equalsTyped(p, v));
    case 'is_not':
      // PostHog: an event lacking the property counts as "not equal".
      return (p) => isMissing(p) || !values.some((v) => equalsTyped(p, v));
    case 'icontains':
      return (p) => !isMissing(p) && texts.some((t) => propertyText(p).toLowerCase().includes(t));
    case 'not_icontains':
      return (p) => isMissing(p) || !texts.some((t) => propertyText(p).toLowerCase().includes(t));
    case 'regex': {
      const res = values.map((v) => compileRegex(textOf(v), null));
      return (p) => !isMissing(p) && res.some((r) => r.test(propertyText(p)));
    }
    case 'not_regex': {
      const res = values.map((v) => compileRegex(textOf(v), null));
      return (p) => isMissing(p) || !res.some((r) => r.test(propertyText(p)));
    }
    case 'gt':
      return numeric(f.value, (p, v) => p > v);
    case 'gte':
    case 'min':
      return numeric(f.value, (p, v) => p >= v);
    case 'lt':
      return numeric(f.value, (p, v) => p < v);
    case 'lte':
    case 'max':
      return numeric(f.value, (p, v) => p <= v);
    case 'between':
    case 'not_between': {
      const [min, max] = rangeOf(f.value) ?? [NaN, NaN];
      const inside = operator === 'between';
      return (p) => {
        const n = toNumber(p);
        return n !== null && (n >= min && n <= max) === inside;
      };
    }
    case 'is_set':
      return (p) => !isMissing(p);
    case 'is_not_set':
      return isMissing;
    case 'is_date_before':
    case 'is_date_after':
    case 'is_date_exact':
      return dateTest(operator, textOf(f.value), ctx);
    default:
      return () => false;
  }
}

function numeric(value: unknown, cmp: (p: number, v: number) => boolean): (prop: unknown) => boolean {
  const v = toNumber(value);
  return (p) => {
    const n = toNumber(p);
    return n !== null && v !== null && cmp(n, v);
  };
}

/**
 * Date operators. A date-only value covers its whole local day: `before` = before its start,
 * `after` = after its end, `exact` = within it; a datetime value compares instants (`exact` to the
 * second). Naive property dates are read in the project time zone, numbers as unix seconds.
 */
function dateTest(operator: string, value: string, ctx: DateContext): (prop: unknown) => boolean {
  const expr = parseDateExpression(value)!;
  const point = resolveExpression(expr, ctx, undefined);
  const wholeDay = point.precision === 'day';
  const start = point.t;
  const end = wholeDay ? endOfLocalDay(start, ctx.tz) : start;
  return (p) => {
    const t = propertyInstant(p, ctx);
    if (t === null) return false;
    if (operator === 'is_date_before') return t < start;
    if (operator === 'is_date_after') return t > end;
    return wholeDay ? t >= start && t <= end : Math.floor(t / 1000) === Math.floor(start / 1000);
  };
}

function propertyInstant(p: unknown, ctx: DateContext): number | null {
  const n = toNumber(p);
  if (n !== null) return n < 1e11 ? n * 1000 : n;
  if (typeof p !== 'string') return null;
  const expr = parseDateExpression(p);
  if (expr?.kind !== 'absolute') return null;
  if (!expr.time) return fromLocal(expr.date, ctx.tz);
  return resolveExpression(expr, ctx, undefined).t;
}

/** Every filter of a group, flattened (for rules like "no property filters anywhere"). */
export function hasFilters(group: PropertyGroup): boolean {
  return group.values.some((v) => (isGroup(v) ? hasFilters(v) : true));
}
