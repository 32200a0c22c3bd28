/**
 * HogQL expressions where a trend takes them (a `hogql` breakdown, a `type: "hogql"` property filter,
 * `math: "hogql"` with `math_hogql`): parsed and checked once, when the request is read, naming the
 * caller's field. The columnar engine evaluates them (columnar/expressions.ts, columnar/hogql-math.ts).
 */
import { ValidationError } from '#shared/errors.ts';
import {
  CATALOG,
  type Expr,
  fieldsOf,
  type HogValue,
  KIND_NAMES,
  kindOf,
  parseExpr,
  printHogQL,
  type ValueKind,
} from '#shared/hogql/index.ts';
import type { FilterOptions } from './properties.ts';

/**
 * Where a field is read from. `null`: a field this engine has no column for (uuid, created_at, person.created_at):
 * the caller refuses those with a 400 before running (unavailableField).
 */
export type Route =
  | { dim: 'event' }
  | { dim: 'time' }
  | { dim: 'actor'; read: 'person' | 'distinct_id' | 'properties'; key: string; path: readonly string[] }
  | { dim: 'property'; key: string; path: readonly string[]; missing: HogValue };

export function routeOf(chain: readonly string[]): Route | null {
  const [head, ...rest] = chain;
  if (rest.length === 0) {
    switch (head) {
      case 'event':
        return { dim: 'event' };
      case 'timestamp':
        return { dim: 'time' };
      case 'distinct_id':
        return { dim: 'actor', read: 'distinct_id', key: '', path: [] };
      case 'person_id':
        return { dim: 'actor', read: 'person', key: '', path: [] };
      case '$session_id':
        return { dim: 'property', key: '$session_id', path: [], missing: null };
      // Captured as the `$elements_chain` property; a String column in PostHog ('' when absent).
      case 'elements_chain':
        return { dim: 'property', key: '$elements_chain', path: [], missing: '' };
    }
    return null;
  }
  if (head === 'properties') return { dim: 'property', key: rest[0]!, path: rest.slice(1), missing: null };
  if (head === 'person' && rest[0] === 'id' && rest.length === 1)
    return { dim: 'actor', read: 'person', key: '', path: [] };
  if (head === 'person' && rest[0] === 'properties' && rest.length >= 2)
    return { dim: 'actor', read: 'properties', key: rest[1]!, path: rest.slice(2) };
  return null;
}

/** The field of `chains` the trend engine cannot read (no such column in events storage), or null. */
export function unavailableField(chains: readonly (readonly string[])[]): string | null {
  const missing = chains.find((c) => routeOf(c) === null);
  return missing ? missing.join('.') : null;
}

/** The dimensions an expression reads, as event property keys (for storage's projection). */
export function propertyKeysOf(fields: readonly (readonly string[])[]): string[] {
  const keys = new Set<string>();
  for (const chain of fields) {
    const route = routeOf(chain);
    if (route?.dim === 'property') keys.add(route.key);
  }
  return [...keys];
}

/** Whether an expression reads who did the event (persons must be resolved: distinct ids joined, properties read). */
export const readsActors = (fields: readonly (readonly string[])[]): boolean =>
  fields.some((chain) => routeOf(chain)?.dim === 'actor');

/**
 * A trend's expression: a plain one (breakdowns, filters) or an aggregate per bucket (math_hogql).
 * Fields events storage does not keep for trends (`uuid`, `created_at`, `person.created_at`) are a 400 too.
 */
export function parseTrendExpr(text: unknown, attr: string, kind: 'value' | 'aggregate'): Expr {
  const expr = parseExpr(text, attr, {
    scope: 'events',
    aggregates: kind === 'aggregate' ? 'required' : 'forbidden',
    catalog: CATALOG,
  });
  const missing = unavailableField(fieldsOf(expr));
  if (missing !== null)
    throw new ValidationError(
      `HogQL field ${missing} is not available in trends: use event, timestamp, distinct_id, person_id, $session_id, elements_chain, properties.<key> or person.properties.<key>.`,
      attr,
    );
  if (kind === 'aggregate') {
    const value = kindOf(expr);
    if (!TREND_VALUE_KINDS.has(value))
      throw new ValidationError(
        `math_hogql must give a number per interval: ${printHogQL(expr).slice(0, 200)} gives ${KIND_NAMES[value]}. Aggregate a number (e.g. toUnixTimestamp(max(timestamp)), count(DISTINCT event), max(toFloat(properties.x))).`,
        attr,
      );
  }
  return expr;
}

/**
 * What a trend's value may be (columnar/hogql-math.ts trendNumber): numbers, booleans as 0/1, and
 * what the rows decide (a property's number or numeric text). A String, a date, an array or a NULL
 * would be charted as zeros: refused when the request is read.
 */
const TREND_VALUE_KINDS: ReadonlySet<ValueKind> = new Set(['number', 'boolean', 'unknown']);

/**
 * What trend filters take beyond event and person properties: HogQL expressions, `type: "group"`
 * filters and cohorts (cohort-filters.ts); a project stores its test-account filters.
 */
export const HOGQL: FilterOptions = {
  hogql: (text, attr) => parseTrendExpr(text, attr, 'value'),
  groups: true,
  cohorts: true,
};
