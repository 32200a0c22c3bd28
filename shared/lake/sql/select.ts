/**
 * A HogQLQuery statement (shared/hogql/select.ts) printed as one SQL query over the lake, per
 * dialect. The statement's expressions go through printLakeExpr (expr.ts) with this file's own nodes
 * added through the dialect's `extend`: exact aggregates, time buckets in the project's zone, and
 * text compared with a time field (`timestamp`, `created_at`, `person.created_at`) read as an
 * instant. The source and the project predicate are the caller's, printed here outside every input's
 * parentheses; nothing of the text names a table, a file, a column outside the lake's events or a setting.
 */
import { asDateArithmetic } from '../../hogql/analysis.ts';
import type { Expr } from '../../hogql/ast.ts';
import { UNITS } from '../../hogql/functions/dates.ts';
import { printHogQL } from '../../hogql/print.ts';
import type { SelectStatement } from '../../hogql/select.ts';
import { parseDateExpression, resolveExpression } from '../../trends/dates.ts';
import { fromWallClock, offsetAt } from '../../trends/tz.ts';
import { hiddenRowsSql, type LakeHidden, personColumnSql, personPropertySql } from '../hidden.ts';
import { PROPERTY_COLUMNS } from '../rows.ts';
import {
  ATHENA,
  type Dialect,
  DUCKDB,
  identifier,
  LakeSqlUnsupported,
  numberLiteral,
  oneStatement,
  stringLiteral,
  zone,
} from './dialect.ts';
import { printLakeExpr } from './expr.ts';
import { type LakeSource, sourceSql } from './trends.ts';

export interface LakeSelect {
  projectId: number;
  statement: SelectStatement;
  /** The project's zone and week start: time buckets and zone-less date texts are read in them. */
  timezone: string;
  weekStart: 0 | 1;
  /** The UTC days read (inclusive): the partition predicate, and DuckDB's zone offsets. */
  days: { from: string; to: string };
  /** Rows asked of the engine (the caller's limit + 1, for hasMore) and skipped. */
  limit: number;
  offset: number;
  /** What the lake's files hold but must not serve (deleted events, deleted or changed persons). */
  hidden?: LakeHidden;
}

export interface PrintedSelect {
  sql: string;
  /** Output column names (PostHog's: the alias, else the expression's HogQL). */
  columns: string[];
  /** Each column's ClickHouse type, as PostHog's `types` names it. */
  types: string[];
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const TIME_UNITS: Record<string, 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year'> = {
  toStartOfHour: 'hour',
  toStartOfDay: 'day',
  toStartOfWeek: 'week',
  toMonday: 'week',
  toStartOfMonth: 'month',
  toStartOfQuarter: 'quarter',
  toStartOfYear: 'year',
};
/** Buckets of a day or longer are ClickHouse Dates; hours and days DateTimes in the zone. */
const DATE_BUCKETS = new Set(['toStartOfWeek', 'toMonday', 'toStartOfMonth', 'toStartOfQuarter', 'toStartOfYear']);
const SUB_DAY = new Set(['second', 'minute', 'hour']);
const TIMESTAMP = "DateTime64(6, 'UTC')";
const INSTANT_OPS = new Set(['eq', 'notEq', 'lt', 'ltEq', 'gt', 'gtEq']);

const isTimestamp = (e: Expr) => e.kind === 'field' && e.chain.length === 1 && e.chain[0] === 'timestamp';
/** Fields whose values are instants: a text compared with one is read as an instant. */
const TIME_FIELDS = new Set(['timestamp', 'created_at', 'person.created_at']);
const isTimeField = (e: Expr) => e.kind === 'field' && TIME_FIELDS.has(e.chain.join('.'));
const isText = (e: Expr): e is { kind: 'constant'; value: string } =>
  e.kind === 'constant' && typeof e.value === 'string';

/** A date text as PostHog reads it against a DateTime: ISO, zone-less ones in the project's zone. */
function instantOf(text: string, tz: string): Date {
  const expr = parseDateExpression(text.trim());
  if (expr?.kind !== 'absolute') throw new LakeSqlUnsupported(`the date text '${text.slice(0, 40)}'`);
  return new Date(resolveExpression(expr, { tz, now: 0, weekStartDay: 0 }, undefined).t);
}

const WEEK_MODES = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
const COMPARE_SQL: Record<string, string> = { eq: '=', notEq: '<>', lt: '<', ltEq: '<=', gt: '>', gtEq: '>=' };

/** How a type's values are time: instants (naive UTC in the SQL), Dates, or wall-clock times in the zone (buckets). */
function timeKind(type: string): 'instant' | 'date' | 'wall' | null {
  if (type === TIMESTAMP) return 'instant';
  if (type === 'Date') return 'date';
  return type.startsWith('DateTime(') ? 'wall' : null;
}

/** A unit argument (`'day'`, `'d'`, `'DAY'`...): the unit, as the HogQL evaluator names it. */
function unitOf(e: Expr, fn: string): string {
  const unit = isText(e) && Object.hasOwn(UNITS, e.value.toLowerCase()) ? UNITS[e.value.toLowerCase()] : undefined;
  if (!unit) throw new LakeSqlUnsupported(`${fn} with the unit ${printHogQL(e).slice(0, 40)}`);
  return unit;
}

/**
 * All of an event's properties as JSON text (PostHog's `properties`): the lake's JSON of the rest with
 * the properties that have a column of their own put back, as JSON strings (the column keeps text).
 */
function allProperties(d: Dialect): string {
  const pairs = Object.entries(PROPERTY_COLUMNS);
  if (d.name === 'duckdb') {
    // A NULL member of the patch removes the key: properties the event does not have stay absent.
    const members = pairs.map(([key, column]) => `${stringLiteral(key)}, ${identifier(column)}`).join(', ');
    return `CAST(json_merge_patch(${identifier('properties')}, json_object(${members})) AS varchar)`;
  }
  const keys = pairs.map(([key]) => stringLiteral(key)).join(', ');
  const values = pairs.map(([, column]) => `CAST(${identifier(column)} AS json)`).join(', ');
  return (
    `json_format(CAST(map_concat(CAST(json_parse(${identifier('properties')}) AS map(varchar, json)), ` +
    `map_filter(MAP(ARRAY[${keys}], ARRAY[${values}]), (k, v) -> v IS NOT NULL)) AS json))`
  );
}

/** Event fields the statement's printer reads beyond expr.ts's columns (what `*` expands to, `person.id`, `person.properties.x`). */
function statementField(chain: readonly (string | number)[], d: Dialect, hidden?: LakeHidden): string | undefined {
  const name = chain.join('.');
  switch (name) {
    case 'properties':
      return allProperties(d);
    // PostHog's elements_chain column: the `$elements_chain` property as captured, '' without one.
    case 'elements_chain':
      return `coalesce(${d.jsonText('$elements_chain')}, '')`;
    case '$window_id':
      return d.jsonText('$window_id');
    case 'person_id':
    case 'person.id':
      return personColumnSql(identifier('person_id'), hidden);
    case 'person.created_at':
      return personColumnSql(identifier('person_created_at'), hidden);
    case 'created_at':
      return identifier('created_at');
    default:
      // PostHog's person properties on events: as the person had them when the event's day was written to the lake.
      if (chain.length === 3 && chain[0] === 'person' && chain[1] === 'properties' && typeof chain[2] === 'string')
        return personPropertySql(chain[2], d.jsonText(chain[2], 'person_properties'), hidden);
      return undefined;
  }
}

function dialectFor(base: Dialect, q: LakeSelect): Dialect {
  if (!DAY.test(q.days.from) || !DAY.test(q.days.to)) throw new LakeSqlUnsupported('the days read');
  const from = new Date(`${q.days.from}T00:00:00.000Z`);
  const to = new Date(`${q.days.to}T23:59:59.999Z`);
  const d: Dialect = { ...base };
  const p = (e: Expr) => printLakeExpr(e, d);
  const one = (e: Extract<Expr, { kind: 'call' }>) => {
    if (e.args.length !== 1 || e.params?.length)
      throw new LakeSqlUnsupported(`${e.name} with ${e.args.length} arguments`);
    return e.args[0] as Expr;
  };
  const instant = (text: string) => base.timestamp(instantOf(text, q.timezone));
  const tz = zone(q.timezone);
  const utc = q.timezone === 'UTC';
  const kindOf = (e: Expr) => timeKind(typeOf(e, q.timezone));
  /** An instant as the zone's wall clock: the range read bounds the event's own timestamp only. */
  const localTime = (e: Expr) =>
    isTimestamp(e) ? base.localTime(p(e), q.timezone, from, to) : base.localTime(p(e), q.timezone);
  /** A time value as a naive wall-clock timestamp in the project's zone. */
  const wall = (e: Expr): string => {
    const kind = kindOf(e);
    if (kind === 'date') return `CAST(${p(e)} AS timestamp)`;
    if (kind === 'wall') return p(e);
    const local = localTime(e);
    // Trino's local time keeps its zone: cast to the naive wall clock, as DuckDB's is.
    return base.name === 'athena' ? `CAST(${local} AS timestamp)` : local;
  };
  /** A Date (SQL date) as the instant its midnight is in the project's zone (naive UTC). */
  const midnight = (e: Expr): string => {
    if (e.kind === 'call' && e.name === 'toDate' && e.args.length === 1 && isText(e.args[0] as Expr)) {
      const text = (e.args[0] as { value: string }).value;
      if (DAY.test(text)) return instant(text);
    }
    const local = `CAST(${p(e)} AS timestamp)`;
    if (utc) return local;
    return base.name === 'athena'
      ? `CAST(at_timezone(with_timezone(${local}, ${tz}), 'UTC') AS timestamp)`
      : `timezone('UTC', timezone(${tz}, ${local}))`;
  };
  /**
   * `x` plus `n` units (sign -1 subtracts), as ClickHouse adds to a value in the project's zone: an
   * instant moves by seconds, minutes and hours as such, by days and longer on the zone's wall clock
   * (a day across a DST change keeps the local time); a Date stays a Date; a bucket (a local wall
   * time) stays one.
   */
  const add = (x: Expr, unit: string, nExpr: Expr, sign: 1 | -1): string => {
    const kind = kindOf(x);
    if (!kind) throw new LakeSqlUnsupported(`date arithmetic on ${printHogQL(x).slice(0, 60)}`);
    if (nExpr.kind !== 'constant' || typeof nExpr.value !== 'number' || !Number.isSafeInteger(nExpr.value))
      throw new LakeSqlUnsupported('an interval whose amount is not an integer constant');
    if (kind === 'date' && SUB_DAY.has(unit)) throw new LakeSqlUnsupported(`adding ${unit}s to a Date`);
    const n = sign * nExpr.value;
    const zoned = kind === 'instant' && !SUB_DAY.has(unit) && !utc;
    if (base.name === 'athena') {
      if (zoned)
        return `CAST(at_timezone(date_add('${unit}', ${numberLiteral(n)}, at_timezone(with_timezone(${p(x)}, 'UTC'), ${tz})), 'UTC') AS timestamp)`;
      return `date_add('${unit}', ${numberLiteral(n)}, ${p(x)})`;
    }
    // In parentheses: DuckDB's grammar reads only a 32-bit integer after INTERVAL, an expression after `(`.
    const interval = `INTERVAL (${n}) ${unit.toUpperCase()}`;
    if (kind === 'date') return `CAST(${p(x)} + ${interval} AS date)`;
    // ICU's conversions here only (a value, not a scan's bucket): a wall time it adds to is exact at DST changes.
    if (zoned) return `timezone('UTC', timezone(${tz}, timezone(${tz}, timezone('UTC', ${p(x)})) + ${interval}))`;
    return `(${p(x)} + ${interval})`;
  };
  d.extend = (e) => {
    if (e.kind === 'field') return statementField(e.chain, base, q.hidden);
    if (e.kind === 'call') {
      switch (e.name) {
        case 'count':
          if (e.params?.length || e.args.length > 1) throw new LakeSqlUnsupported('count with more than one argument');
          if (!e.args.length) return 'count(*)';
          return `count(${e.distinct ? 'DISTINCT ' : ''}${p(e.args[0] as Expr)})`;
        case 'uniq':
        case 'uniqExact':
          // Exact: Athena's approx_distinct would change the numbers.
          return `count(DISTINCT ${p(one(e))})`;
        case 'sum':
        case 'avg':
        case 'min':
        case 'max':
          return `${e.name}(${e.distinct ? 'DISTINCT ' : ''}${p(one(e))})`;
        case 'toStartOfHour':
        case 'toStartOfDay':
        case 'toStartOfWeek':
        case 'toMonday':
        case 'toStartOfMonth':
        case 'toStartOfQuarter':
        case 'toStartOfYear': {
          if (e.distinct || e.params?.length) throw new LakeSqlUnsupported(`the function ${e.name}`);
          const [arg, mode] = e.args;
          if (!arg || e.args.length > 2 || (mode && e.name !== 'toStartOfWeek'))
            throw new LakeSqlUnsupported(`${e.name} with ${e.args.length} arguments`);
          // ClickHouse's week modes: even ones start on Sunday, odd ones on Monday; toMonday is mode 1.
          let weekStart: 0 | 1 = e.name === 'toMonday' ? 1 : 0;
          if (mode) {
            if (mode.kind !== 'constant' || typeof mode.value !== 'number' || !WEEK_MODES.has(mode.value))
              throw new LakeSqlUnsupported('toStartOfWeek with a mode other than an integer from 0 to 9');
            weekStart = (mode.value % 2) as 0 | 1;
          }
          const unit = TIME_UNITS[e.name] as NonNullable<(typeof TIME_UNITS)[string]>;
          // A Date or a bucket is already on the zone's calendar; anything else is read as an instant.
          const kind = kindOf(arg);
          const local = kind === 'date' || kind === 'wall' ? wall(arg) : localTime(arg);
          const bucket = base.truncate(unit, local, weekStart);
          return DATE_BUCKETS.has(e.name) ? `CAST(${bucket} AS date)` : bucket;
        }
        case 'toDate': {
          const arg = one(e);
          // A date text (today() folded, or written) is that day, as ClickHouse's toDate reads it.
          if (isText(arg) && DAY.test(arg.value)) return `DATE '${arg.value}'`;
          return `CAST(${localTime(arg)} AS date)`;
        }
        case 'dateAdd':
        case 'dateSub': {
          if (e.args.length !== 3 || e.distinct || e.params?.length)
            throw new LakeSqlUnsupported(`${e.name} with ${e.args.length} arguments`);
          const [unit, n, x] = e.args as [Expr, Expr, Expr];
          return add(x, unitOf(unit, e.name), n, e.name === 'dateSub' ? -1 : 1);
        }
        case 'dateDiff': {
          if (e.args.length !== 3 || e.distinct || e.params?.length)
            throw new LakeSqlUnsupported(`dateDiff with ${e.args.length} arguments`);
          const [unitArg, a, b] = e.args as [Expr, Expr, Expr];
          const unit = unitOf(unitArg, 'dateDiff');
          // Seconds between instants; longer units count the boundaries crossed on the zone's calendar (ClickHouse's rule; Trino's date_diff alone counts whole units).
          if (unit === 'second' && kindOf(a) === 'instant' && kindOf(b) === 'instant')
            return `date_diff('second', ${p(a)}, ${p(b)})`;
          return `date_diff('${unit}', date_trunc('${unit}', ${wall(a)}), date_trunc('${unit}', ${wall(b)}))`;
        }
        case 'toDateTime': {
          const arg = one(e);
          if (isText(arg)) return instant(arg.value);
          return undefined;
        }
        default:
          return undefined;
      }
    }
    // `timestamp + INTERVAL 1 DAY`, `INTERVAL 1 HOUR + timestamp`, `today() - INTERVAL 7 DAY`.
    if (e.kind === 'arithmetic' && (e.op === '+' || e.op === '-')) {
      const dated = asDateArithmetic(e);
      if (dated) return p(dated);
    }
    // An instant against a Date: the Date's midnight in the project's zone (ClickHouse reads the Date in the DateTime's zone).
    if (e.kind === 'compare' && INSTANT_OPS.has(e.op)) {
      const [l, r] = [kindOf(e.left), kindOf(e.right)];
      if (l === 'instant' && r === 'date') return `(${p(e.left)} ${COMPARE_SQL[e.op]} ${midnight(e.right)})`;
      if (l === 'date' && r === 'instant') return `(${midnight(e.left)} ${COMPARE_SQL[e.op]} ${p(e.right)})`;
    }
    // `timestamp > '2024-01-01'`: the text as an instant (Trino compares no timestamp with a varchar).
    if (e.kind === 'compare' && INSTANT_OPS.has(e.op)) {
      if (isTimeField(e.left) && isText(e.right))
        return printLakeExpr({ ...e, right: { kind: 'call', name: 'toDateTime', args: [e.right] } }, d);
      if (isTimeField(e.right) && isText(e.left))
        return printLakeExpr({ ...e, left: { kind: 'call', name: 'toDateTime', args: [e.left] } }, d);
    }
    if (e.kind === 'between' && isTimeField(e.expr) && (isText(e.low) || isText(e.high))) {
      const wrap = (x: Expr): Expr => (isText(x) ? { kind: 'call', name: 'toDateTime', args: [x] } : x);
      return printLakeExpr({ ...e, low: wrap(e.low), high: wrap(e.high) }, d);
    }
    return undefined;
  };
  return d;
}

/** The ClickHouse type PostHog would report for a column (what the cells are decoded as). */
export function typeOf(e: Expr, tz: string): string {
  switch (e.kind) {
    case 'constant':
      if (e.value === null) return 'Nullable(Nothing)';
      if (typeof e.value === 'boolean') return 'Bool';
      if (typeof e.value === 'string') return 'String';
      return Number.isInteger(e.value) ? 'Int64' : 'Float64';
    case 'field': {
      const [head] = e.chain;
      if (isTimeField(e)) return TIMESTAMP;
      if (e.chain.length === 1 && (head === 'uuid' || head === 'person_id')) return 'UUID';
      if (e.chain.length === 2 && head === 'person' && e.chain[1] === 'id') return 'UUID';
      const always = ['event', 'distinct_id', 'properties', 'elements_chain'];
      return e.chain.length === 1 && always.includes(head as string) ? 'String' : 'Nullable(String)';
    }
    case 'not':
    case 'and':
    case 'or':
    case 'compare':
    case 'between':
      return 'Bool';
    case 'arithmetic': {
      // A time value plus or minus an interval keeps its type.
      const dated = asDateArithmetic(e);
      if (dated) return typeOf(dated, tz);
      if (e.op === '/') return 'Float64';
      const [l, r] = [typeOf(e.left, tz), typeOf(e.right, tz)];
      return l === 'Int64' || l === 'UInt64' ? (r === 'Int64' || r === 'UInt64' ? 'Int64' : 'Float64') : 'Float64';
    }
    case 'negate':
      return typeOf(e.expr, tz);
    case 'call':
      switch (e.name) {
        case 'count':
        case 'uniq':
        case 'uniqExact':
        case 'length':
          return 'UInt64';
        case 'sum':
        case 'avg':
        case 'toFloat':
        case 'toFloat64OrNull':
          return 'Float64';
        case 'min':
        case 'max':
          return e.args[0] ? typeOf(e.args[0], tz) : 'Float64';
        case 'toStartOfHour':
        case 'toStartOfDay':
          return `DateTime('${tz}')`;
        case 'toStartOfWeek':
        case 'toMonday':
        case 'toStartOfMonth':
        case 'toStartOfQuarter':
        case 'toStartOfYear':
        case 'toDate':
        case 'today':
          return 'Date';
        case 'dateAdd':
        case 'dateSub':
          return e.args[2] ? typeOf(e.args[2], tz) : 'String';
        case 'dateDiff':
          return 'Int64';
        case 'toDateTime':
          return TIMESTAMP;
        case 'isNull':
        case 'isNotNull':
          return 'Bool';
        case 'positionCaseInsensitive':
          return 'UInt64';
        case 'coalesce':
        case 'if': {
          const arg = e.name === 'if' ? e.args[1] : e.args.find((a) => !(a.kind === 'constant' && a.value === null));
          return arg ? typeOf(arg, tz) : 'String';
        }
        default:
          return 'String';
      }
    default:
      return 'String';
  }
}

const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, '0');

function offsetText(offsetMs: number): string {
  if (offsetMs === 0) return 'Z';
  const minutes = Math.round(Math.abs(offsetMs) / 60_000);
  return `${offsetMs < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
}

/** An engine's naive timestamp text (`2024-01-02 03:04:05[.678]`) as epoch ms of that wall clock. */
function wallMs(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?/.exec(text);
  if (!m) return null;
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, ms);
}

/** ISO text of an instant in the project's zone, with its offset (PostHog shows DateTimes in the project's zone). */
function isoIn(t: number, tz: string): string {
  const offset = offsetAt(t, tz);
  return new Date(t + offset).toISOString().replace('Z', offsetText(offset));
}

/** One cell of an engine's text row as JSON, by its column's type. */
export function decodeCell(type: string, text: string | null, tz: string): unknown {
  if (text === null) return null;
  if (type === 'UInt64' || type === 'Int64') {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : text;
  }
  if (type === 'Float64') {
    const n = Number(text);
    return Number.isFinite(n) ? n : text;
  }
  if (type === 'Bool') return text === 'true' || text === '1';
  if (type === TIMESTAMP) {
    const w = wallMs(text);
    return w === null ? text : isoIn(w, tz);
  }
  if (type.startsWith('DateTime(')) {
    // A local wall clock (the bucket's start in the zone): the instant it names, shown with its offset.
    const w = wallMs(text);
    return w === null ? text : isoIn(fromWallClock(w, tz), tz);
  }
  if (type === 'Date') return text.slice(0, 10);
  return text;
}

/** The statement's SQL, its output names and types. Columns are named c0..cN in the SQL (no input names a column). */
export function printSelectSql(q: LakeSelect, source: LakeSource): PrintedSelect {
  if (!Number.isSafeInteger(q.projectId) || q.projectId < 0) throw new LakeSqlUnsupported('the project id');
  const base = source.dialect === 'athena' ? ATHENA : DUCKDB;
  const d = dialectFor(base, q);
  const s = q.statement;
  const p = (e: Expr) => printLakeExpr(e, d);
  const select = s.columns.map((c, i) => `${p(c.expr)} AS ${identifier(`c${i}`)}`);
  const where = [
    // First and outside every input's parentheses: nothing below can widen it.
    `${identifier('project_id')} = ${q.projectId}`,
    `${identifier('day')} BETWEEN '${q.days.from}' AND '${q.days.to}'`,
    ...[hiddenRowsSql(q.hidden, base)].filter((sql) => sql !== null),
    ...(s.where ? [`(${p(s.where)})`] : []),
  ];
  for (const n of [q.limit, q.offset])
    if (!Number.isSafeInteger(n) || n < 0) throw new LakeSqlUnsupported('a LIMIT or OFFSET other than a whole number');
  const { limit, offset } = q;
  const lines = [
    `SELECT ${s.distinct ? 'DISTINCT ' : ''}${select.join(', ')}`,
    `FROM ${sourceSql(source)}`,
    `WHERE ${where.join('\n  AND ')}`,
    ...(s.groupBy.length ? [`GROUP BY ${s.groupBy.map(p).join(', ')}`] : []),
    ...(s.having ? [`HAVING ${p(s.having)}`] : []),
    ...(s.orderBy.length ? [`ORDER BY ${s.orderBy.map((o) => `${p(o.expr)} ${o.direction}`).join(', ')}`] : []),
    // Trino wants OFFSET before LIMIT; DuckDB reads either order.
    ...(offset ? [`OFFSET ${offset}`] : []),
    `LIMIT ${limit}`,
  ];
  return {
    sql: oneStatement(lines.join('\n')),
    columns: s.columns.map((c) => c.name),
    types: s.columns.map((c) => typeOf(c.expr, q.timezone)),
  };
}
