/**
 * What EventsQuery and ActorsQuery share of HogQL (shared/hogql/): parsing a column, a filter or an
 * order with the caller's attr, the fields each query may read, turning values into JSON cells and
 * ClickHouse type names, ordering values as ClickHouse does, and keeping the top rows of an order in
 * bounded memory. No I/O.
 */
import {
  CATALOG,
  type Expr,
  HogDate,
  HogDateTime,
  HogTuple,
  type HogValue,
  checkExpr,
  fieldsOf,
  hasAggregate,
  parseExpr,
  parseOrderExpr,
  parseSelectColumn,
  type Scope,
  unalias,
} from '../../hogql/index.ts';
import { isoLocal } from '../../trends/tz.ts';

/** `events`: an EventsQuery's rows; `persons`: an ActorsQuery's (fields as shared/hogql/check.ts lists them). */
export type { Scope } from '../../hogql/index.ts';

const isAggregate = (name: string) => CATALOG.aggregate(name) !== undefined;

/**
 * ActorsQuery takes PostHog's `person.` prefix on every person field (`person.properties.email`,
 * `person.created_at`): the row is the person, so the prefix is dropped before the fields are checked.
 */
function withoutPersonPrefix(expr: Expr): Expr {
  return JSON.parse(JSON.stringify(expr), (_, v) =>
    v && typeof v === 'object' && v.kind === 'field' && v.chain?.[0] === 'person' && v.chain.length > 1
      ? { ...v, chain: v.chain.slice(1) }
      : v,
  ) as Expr;
}

/** The expression checked against the scope's fields and the function catalog (aggregates allowed: the caller places them). */
function checked(expr: Expr, scope: Scope, attr: string): Expr {
  const e = scope === 'persons' ? withoutPersonPrefix(expr) : expr;
  checkExpr(e, { scope, aggregates: 'allowed', catalog: CATALOG }, attr);
  return e;
}

/** PostHog labels a column with a trailing comment (`person_display_name -- Person`): the text before it. */
export const expressionOf = (raw: string) => raw.split('--')[0]!.trim();

/** A parsed entry: its expression (an `AS` alias taken off), whether it aggregates, and the fields it reads. */
export interface ParsedColumn {
  expr: Expr;
  alias?: string;
  aggregate: boolean;
  fields: string[][];
}

const parsed = (expr: Expr, alias?: string): ParsedColumn => ({
  expr,
  ...(alias === undefined ? {} : { alias }),
  aggregate: hasAggregate(expr, isAggregate),
  fields: fieldsOf(expr).map((chain) => [...chain]),
});

/** A select entry (`expr [AS name] [-- label]`). */
export function parseColumn(raw: string, scope: Scope, attr: string): ParsedColumn {
  const column = parseSelectColumn(raw, attr);
  // A `-- label` comment is a display label, not a name the answer's columns take (PostHog keeps the text as sent).
  const alias = column.label === undefined || isCommentLabel(raw, column.label) ? undefined : column.label;
  return parsed(checked(column.expr, scope, attr), alias);
}

/** Whether the label is the trailing `-- label` comment of the text rather than an `AS` name. */
function isCommentLabel(raw: string, label: string): boolean {
  const at = raw.lastIndexOf('--');
  return at >= 0 && raw.slice(at + 2).trim() === label;
}

/** Select columns by their `AS` name: an entry of `where` or `orderBy` may name one (ClickHouse resolves aliases). */
export type Aliases = ReadonlyMap<string, Expr>;

/** The expression with each bare field that names an alias replaced by that column's expression. */
function withAliases(expr: Expr, aliases: Aliases): Expr {
  if (aliases.size === 0) return expr;
  return JSON.parse(JSON.stringify(expr), (_, v) =>
    v && typeof v === 'object' && v.kind === 'field' && v.chain?.length === 1 && aliases.has(v.chain[0])
      ? aliases.get(v.chain[0])
      : v,
  ) as Expr;
}

/** A boolean expression (an entry of `where`). */
export function parseCondition(raw: string, scope: Scope, attr: string, aliases: Aliases = new Map()): ParsedColumn {
  return parsed(checked(withAliases(unalias(parseExpr(raw, attr)), aliases), scope, attr));
}

/** An `orderBy` entry: an expression and its direction (ASC unless said). */
export interface OrderTerm {
  expr: Expr;
  descending: boolean;
  aggregate: boolean;
  fields: string[][];
}

export function parseOrderTerm(raw: string, scope: Scope, attr: string, aliases: Aliases = new Map()): OrderTerm {
  const order = parseOrderExpr(raw, attr);
  const { expr, aggregate, fields } = parsed(checked(withAliases(unalias(order.expr), aliases), scope, attr));
  return { expr, descending: order.direction === 'DESC', aggregate, fields };
}

/** A field node reading exactly `chain`. */
export const isField = (expr: Expr, ...chain: string[]) =>
  expr.kind === 'field' && expr.chain.length === chain.length && chain.every((c, i) => expr.chain[i] === c);

/** A WHERE / HAVING result keeps the row when it is true or a non-zero number (ClickHouse's UInt8 filter); null drops it. */
export const truthy = (v: HogValue) => v === true || (typeof v === 'number' && v !== 0 && !Number.isNaN(v));

/** A property value (JSON) as HogQL reads it: scalars as they are, objects and arrays as their JSON text. */
export function jsonValue(v: unknown): HogValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v) ?? null;
}

/** `properties.a.b...`: the value at the key path (a nested key of an object value), null when absent. */
export function propertyPathValue(properties: Record<string, unknown> | undefined, path: readonly string[]): HogValue {
  let value: unknown = properties;
  for (const key of path) {
    if (typeof value === 'string' && value.startsWith('{')) {
      try {
        value = JSON.parse(value);
      } catch {
        return null;
      }
    }
    if (!value || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return null;
    value = (value as Record<string, unknown>)[key];
  }
  return jsonValue(value);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * A value as a JSON cell of an answer: DateTime as ISO 8601 in its time zone (as PostHog's answers
 * give them), Date as `YYYY-MM-DD`, tuples as arrays, NaN and infinities as null (JSON has neither).
 */
export function cellOf(v: HogValue): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (v instanceof HogDateTime) return Number.isFinite(v.ms) ? isoLocal(v.ms, v.timezone) : null;
  if (v instanceof HogDate) {
    const d = new Date(v.days * 86_400_000);
    return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  }
  if (v instanceof HogTuple) return v.items.map(cellOf);
  return (v as readonly HogValue[]).map(cellOf);
}

/** Functions whose ClickHouse result type does not depend on the values. */
const RESULT_TYPES: Record<string, string> = {
  count: 'UInt64',
  countIf: 'UInt64',
  uniq: 'UInt64',
  uniqExact: 'UInt64',
  avg: 'Float64',
  avgIf: 'Float64',
  median: 'Float64',
  quantile: 'Float64',
  toFloat: 'Float64',
  toInt: 'Int64',
  toString: 'String',
  concat: 'String',
  lower: 'String',
  upper: 'String',
  toUnixTimestamp: 'UInt32',
  length: 'UInt64',
};

/**
 * The ClickHouse type name of a column: from the function when its type is fixed, else from the
 * values answered (integers Int64, other numbers Float64, text String, DateTime64(6, '<zone>'),
 * Date, Bool, Array(...), Tuple(...)), `Nullable(...)` when a value is null.
 */
export function typeOf(expr: Expr, values: readonly HogValue[]): string {
  const fixed = expr.kind === 'call' ? RESULT_TYPES[expr.name] : undefined;
  const nullable = values.some((v) => v === null);
  if (fixed) return nullable ? `Nullable(${fixed})` : fixed;
  const base = valuesType(values.filter((v) => v !== null));
  return nullable || base === undefined ? `Nullable(${base ?? 'Nothing'})` : base;
}

function valuesType(values: readonly HogValue[]): string | undefined {
  const kinds = new Set(values.map(valueType));
  if (kinds.size === 0) return undefined;
  if (kinds.size === 1) return [...kinds][0];
  if ([...kinds].every((k) => k === 'Int64' || k === 'Float64')) return 'Float64';
  return 'String';
}

function valueType(v: HogValue): string {
  if (typeof v === 'string') return 'String';
  if (typeof v === 'boolean') return 'Bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'Int64' : 'Float64';
  if (v instanceof HogDateTime) return `DateTime64(6, '${v.timezone}')`;
  if (v instanceof HogDate) return 'Date';
  if (v instanceof HogTuple)
    return `Tuple(${v.items.map((i) => (i === null ? 'Nullable(Nothing)' : valueType(i))).join(', ')})`;
  const items = (v as readonly HogValue[]).filter((i) => i !== null);
  return `Array(${valuesType(items) ?? 'Nothing'})`;
}

const RANK_NUMBER = 0;
const RANK_TEXT = 1;
const RANK_TIME = 2;
const RANK_LIST = 3;

function rankOf(v: Exclude<HogValue, null>): number {
  if (typeof v === 'number' || typeof v === 'boolean') return RANK_NUMBER;
  if (typeof v === 'string') return RANK_TEXT;
  if (v instanceof HogDateTime || v instanceof HogDate) return RANK_TIME;
  return RANK_LIST;
}

const timeOf = (v: HogDateTime | HogDate) => (v instanceof HogDateTime ? v.ms : v.days * 86_400_000);

/**
 * ClickHouse's order of two non-null values: numbers (booleans as 0/1) by value, text by bytes,
 * dates and times by instant, arrays and tuples item by item. Values of different kinds (a
 * property holding numbers and text) order numbers first, then text, then times, then lists.
 */
export function compareValues(a: Exclude<HogValue, null>, b: Exclude<HogValue, null>): number {
  const ra = rankOf(a);
  const rb = rankOf(b);
  if (ra !== rb) return ra - rb;
  if (ra === RANK_NUMBER) {
    const x = Number(a);
    const y = Number(b);
    return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : 1) : Number.isNaN(y) ? -1 : x - y;
  }
  if (ra === RANK_TEXT) return a < b ? -1 : a > b ? 1 : 0;
  if (ra === RANK_TIME) return timeOf(a as HogDateTime | HogDate) - timeOf(b as HogDateTime | HogDate);
  const xs = a instanceof HogTuple ? a.items : (a as readonly HogValue[]);
  const ys = b instanceof HogTuple ? b.items : (b as readonly HogValue[]);
  for (let i = 0; i < Math.min(xs.length, ys.length); i += 1) {
    const c = compareNullsLast(xs[i]!, ys[i]!);
    if (c !== 0) return c;
  }
  return xs.length - ys.length;
}

function compareNullsLast(a: HogValue, b: HogValue): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  return compareValues(a, b);
}

/** Compares two rows' order keys term by term, each in its direction, nulls last either way (ClickHouse's default). */
export function compareKeys(
  descending: readonly boolean[],
): (a: readonly HogValue[], b: readonly HogValue[]) => number {
  return (a, b) => {
    for (let i = 0; i < descending.length; i += 1) {
      const x = a[i]!;
      const y = b[i]!;
      if (x === null || y === null) {
        if (x === y) continue;
        return x === null ? 1 : -1;
      }
      const c = compareValues(x, y);
      if (c !== 0) return descending[i] ? -c : c;
    }
    return 0;
  };
}

/**
 * The first `k` items of an order, in memory proportional to k whatever the number pushed: items
 * gather up to 2k, then are sorted and cut back to k (n log k work in all).
 */
export class TopK<T> {
  private items: T[] = [];
  constructor(
    private readonly k: number,
    private readonly compare: (a: T, b: T) => number,
  ) {}

  push(item: T): void {
    this.items.push(item);
    if (this.items.length >= 2 * Math.max(this.k, 1)) this.trim();
  }

  private trim(): void {
    this.items.sort(this.compare);
    this.items.length = Math.min(this.items.length, this.k);
  }

  /** The kept items, in order. */
  sorted(): T[] {
    this.trim();
    return this.items;
  }
}
