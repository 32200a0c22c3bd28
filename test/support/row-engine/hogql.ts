/**
 * HogQL fields of one event object, read the plain way (the reference the columnar engine's
 * expressions.ts is checked against): every field looked up on the event each time it is read.
 */
import { toText, truth } from '#shared/hogql/convert.ts';
import { compileAggregate, compileScalar, type Expr, type FieldReader } from '#shared/hogql/index.ts';
import { HogDateTime, type HogValue } from '#shared/hogql/values.ts';
import { breakdownText } from '#shared/trends/breakdown.ts';
import type { DateContext } from '#shared/trends/dates.ts';
import { trendNumber } from '#shared/trends/columnar/hogql-math.ts';
import { compileFilter, type EventPredicate, isGroup } from '#shared/trends/properties.ts';
import { isHogQLFilter, type PropertyGroup, type TrendEvent } from '#shared/trends/types.ts';

function parseTimestamp(ts: string | number): number {
  if (typeof ts === 'number') return ts;
  return Date.parse(/(Z|[+-]\d{2}:?\d{2})$/i.test(ts) || !ts.includes('T') ? ts : `${ts}Z`);
}

/** A JSON value at a path: objects by key, arrays by 1-based integer (negative from the end); objects and arrays as JSON text. */
function jsonAt(root: Record<string, unknown> | undefined, path: readonly string[]): HogValue {
  let v: unknown = root;
  for (const step of path) {
    if (Array.isArray(v)) {
      if (!/^-?\d+$/.test(step)) return null;
      const i = Number(step);
      v = i === 0 ? undefined : v.at(i > 0 ? i - 1 : i);
    } else if (v !== null && typeof v === 'object' && Object.hasOwn(v, step)) v = (v as Record<string, unknown>)[step];
    else return null;
    if (v === undefined) return null;
  }
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  return JSON.stringify(v);
}

export function eventReader(e: TrendEvent, timezone: string): FieldReader {
  return (chain) => {
    const [head, ...rest] = chain;
    if (head === 'properties') return jsonAt(e.properties, rest);
    if (head === 'person' && rest[0] === 'properties') return jsonAt(e.person_properties, rest.slice(1));
    if (head === 'person' && rest[0] === 'id' && rest.length === 1) return e.person_id || e.distinct_id;
    if (rest.length) return null;
    switch (head) {
      case 'event':
        return e.event;
      case 'distinct_id':
        return e.distinct_id;
      case 'person_id':
        return e.person_id || e.distinct_id;
      case 'timestamp':
        return new HogDateTime(parseTimestamp(e.timestamp), timezone);
      case '$session_id':
        return jsonAt(e.properties, ['$session_id']);
      case 'elements_chain':
        return jsonAt(e.properties, ['$elements_chain']) ?? '';
      default:
        return null;
    }
  };
}

const evalContext = (ctx: DateContext) => ({ timezone: ctx.tz, now: new Date(ctx.now) });

/** A group of filters as a predicate; a hogql filter is its expression evaluated on the event (a row passes when it is true). */
export function rowGroup(group: PropertyGroup, ctx: DateContext): EventPredicate {
  const parts = group.values.map((v): EventPredicate => {
    if (isGroup(v)) return rowGroup(v, ctx);
    if (!isHogQLFilter(v)) return compileFilter(v, ctx);
    const run = compileScalar(v.expr, evalContext(ctx), 'properties');
    return (e) => truth(run(eventReader(e, ctx.tz))) === true;
  });
  if (!parts.length) return () => true;
  return group.type === 'OR' ? (e) => parts.some((p) => p(e)) : (e) => parts.every((p) => p(e));
}

/** A hogql breakdown's value of an event. */
export function rowBreakdown(expr: Expr, ctx: DateContext): (e: TrendEvent) => string {
  const run = compileScalar(expr, evalContext(ctx), 'breakdown');
  return (e) => {
    const v = run(eventReader(e, ctx.tz));
    return breakdownText(v === null || typeof v !== 'object' ? v : toText(v));
  };
}

/** math_hogql over a set of events: one accumulator fed every event; no events is 0 (an empty bucket). */
export function rowAggregate(expr: Expr, ctx: DateContext): (events: readonly { e: TrendEvent }[]) => number {
  const make = compileAggregate(expr, evalContext(ctx), 'math_hogql');
  return (events) => {
    if (!events.length) return 0;
    const acc = make();
    for (const { e } of events) acc.add(eventReader(e, ctx.tz));
    return trendNumber(acc.result());
  };
}
