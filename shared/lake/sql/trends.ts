/**
 * A trend (the typed model, shared/trends/model.ts) as one SQL query over the lake, per dialect:
 * per series, per breakdown value and per interval bucket (local wall-clock start), its value.
 * Property filters become HogQL expressions (the same AST a `hogql` filter brings) and are printed
 * by expr.ts; the project predicate is printed here, outside every input's parentheses, so that no
 * filter can widen it. What the lake cannot answer exactly is refused (LakeSqlUnsupported): rolling
 * active users, percentiles (Athena has approximate ones only), person properties, actions, cohorts.
 * A property read as a number (numeric filters, sum/avg/min/max) follows the trend engine's
 * coercion (properties.ts toNumber: the dialect's toNumber), not HogQL's toFloat.
 */
import type { Expr } from '../../hogql/ast.ts';
import type { BreakdownModel, SeriesModel, TrendsModel } from '../../trends/model.ts';
import { propertyText as valueText, toNumber } from '../../trends/properties.ts';
import {
  type DateRange,
  type HogQLPropertyFilter,
  isHogQLFilter,
  type PropertyFilter,
  type PropertyGroup,
  type ProjectSettings,
} from '../../trends/types.ts';
import { hiddenRowsSql, type LakeHidden } from '../hidden.ts';
import {
  ATHENA,
  type Dialect,
  DUCKDB,
  identifier,
  LakeSqlUnsupported,
  offsetSpans,
  oneStatement,
  stringLiteral,
} from './dialect.ts';
import { printLakeExpr } from './expr.ts';

export interface LakeTrend {
  projectId: number;
  model: TrendsModel;
  /** The resolved range (shared/trends resolveDateRange): UTC instants, the project's zone and week start. */
  range: DateRange;
  project: ProjectSettings;
  /**
   * The UTC days (day partitions) to read, when only some of the range's are the lake's: Athena then
   * prunes to them rather than scanning the whole range. Absent: every day of the range.
   */
  days?: readonly string[];
  /** Deleted events the lake's files still hold: left out (shared/lake/hidden.ts). */
  hidden?: LakeHidden;
}

/** Where the events are read from: Athena's Glue table, or DuckDB over the current files of the range's days. */
export type LakeSource =
  | { dialect: 'athena'; database: string; table: string }
  | { dialect: 'duckdb'; files: string[] };

const prop = (key: string): Expr => ({ kind: 'field', chain: ['properties', key] });
const personProp = (key: string): Expr => ({ kind: 'field', chain: ['person', 'properties', key] });

/**
 * Where a filter's person properties come from. A HogQLQuery reads them as PostHog's persons-on-events
 * do (the lake's `person_properties`: as they were when the day was written); a routed trend must equal
 * the in-process engine, which reads the person's current properties, so it takes event filters only.
 */
export interface FilterOptions {
  personProperties?: boolean;
}
const str = (value: string): Expr => ({ kind: 'constant', value });
const num = (value: number): Expr => ({ kind: 'constant', value });
const isNull = (e: Expr): Expr => ({ kind: 'compare', op: 'eq', left: e, right: { kind: 'constant', value: null } });
const notNull = (e: Expr): Expr => ({
  kind: 'compare',
  op: 'notEq',
  left: e,
  right: { kind: 'constant', value: null },
});
const FALSE: Expr = { kind: 'constant', value: false };
const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);
/**
 * The numeric operand of a property filter, marked so that this printer reads it as the trend engine
 * does (dialect toNumber); printed elsewhere (printLakeExpr) it stays HogQL's toFloat. Marked by
 * identity: no HogQL text can build one.
 */
const engineNumbers = new WeakSet<Expr>();
const toFloat = (e: Expr): Expr => {
  const call: Expr = { kind: 'call', name: 'toFloat', args: [e] };
  engineNumbers.add(call);
  return call;
};

const NUMERIC: Record<string, 'gt' | 'gtEq' | 'lt' | 'ltEq'> = {
  gt: 'gt',
  gte: 'gtEq',
  min: 'gtEq',
  lt: 'lt',
  lte: 'ltEq',
  max: 'ltEq',
};

/**
 * One event-property filter as a HogQL expression over the property's text (the lake keeps
 * non-string values as their JSON text, as shared/trends/properties.ts propertyText reads them).
 */
export function filterExpr(f: PropertyFilter, options: FilterOptions = {}): Expr {
  const type = f.type ?? 'event';
  if (type !== 'event' && !(type === 'person' && options.personProperties))
    throw new LakeSqlUnsupported(`a ${f.type} property filter`);
  const p = type === 'person' ? personProp(f.key) : prop(f.key);
  const op = f.operator ?? 'exact';
  const texts = listOf(f.value).map((v) => str(valueText(v)));
  if (op === 'exact' || op === 'is_not') {
    if (!texts.length) return op === 'exact' ? FALSE : { kind: 'constant', value: true };
    const inList: Expr = { kind: 'compare', op: 'in', left: p, right: { kind: 'tuple', items: texts } };
    return op === 'exact' ? inList : { kind: 'or', exprs: [isNull(p), { kind: 'not', expr: inList }] };
  }
  if (op === 'icontains' || op === 'not_icontains') {
    const found: Expr = {
      kind: 'or',
      exprs: texts.map((t) => ({
        kind: 'compare',
        op: 'gt',
        left: { kind: 'call', name: 'positionCaseInsensitive', args: [p, t] },
        right: num(0),
      })),
    };
    return op === 'icontains'
      ? { kind: 'and', exprs: [notNull(p), found] }
      : { kind: 'or', exprs: [isNull(p), { kind: 'not', expr: found }] };
  }
  if (op === 'regex' || op === 'not_regex') {
    const found: Expr = { kind: 'or', exprs: texts.map((t) => ({ kind: 'compare', op: 'regex', left: p, right: t })) };
    return op === 'regex'
      ? { kind: 'and', exprs: [notNull(p), found] }
      : { kind: 'or', exprs: [isNull(p), { kind: 'not', expr: found }] };
  }
  if (Object.hasOwn(NUMERIC, op)) {
    const v = toNumber(f.value);
    if (v === null) return FALSE;
    return { kind: 'compare', op: NUMERIC[op]!, left: toFloat(p), right: num(v) };
  }
  if (op === 'between' || op === 'not_between') {
    const [min, max] = Array.isArray(f.value) ? f.value.map(toNumber) : [null, null];
    if (min === null || max === null || min === undefined || max === undefined || min > max) return FALSE;
    const between: Expr = { kind: 'between', expr: toFloat(p), low: num(min), high: num(max), negated: false };
    return op === 'between' ? between : { kind: 'and', exprs: [notNull(toFloat(p)), { kind: 'not', expr: between }] };
  }
  if (op === 'is_set') return notNull(p);
  if (op === 'is_not_set') return isNull(p);
  throw new LakeSqlUnsupported(`the property operator ${op}`);
}

export function groupExpr(group: PropertyGroup, options: FilterOptions = {}): Expr {
  const exprs = group.values.map((v): Expr => {
    if ('values' in v) return groupExpr(v, options);
    if (isHogQLFilter(v as PropertyFilter | HogQLPropertyFilter)) return (v as HogQLPropertyFilter).expr;
    return filterExpr(v as PropertyFilter, options);
  });
  return { kind: group.type === 'OR' ? 'or' : 'and', exprs };
}

/**
 * A bucket's value. sum/min/max/avg read the property as the engine does (NULL where it is not a
 * number, skipped); a bucket without numbers is NULL here and 0 in the engine, which the reader maps.
 * avg is sum/count as the engine divides (exact per bucket: a bucket comes wholly from one source).
 */
function aggregate(s: SeriesModel, d: Dialect): string {
  if (s.math === 'total') return 'count(*)';
  // Exact distinct counts only: an approximate function would change the numbers.
  if (s.math === 'dau') return `count(DISTINCT coalesce(${identifier('person_id')}, ${identifier('distinct_id')}))`;
  if (s.math === 'sum' || s.math === 'min' || s.math === 'max' || s.math === 'avg') {
    if (s.math_property === null || s.math_property_type !== 'event_properties')
      throw new LakeSqlUnsupported(`the math ${s.math} of a person property`);
    const n = d.toNumber(printLakeExpr(prop(s.math_property), d));
    return s.math === 'avg' ? `(sum(${n}) / count(${n}))` : `${s.math}(${n})`;
  }
  throw new LakeSqlUnsupported(`the math ${s.math}`);
}

const COMPARE_SQL: Partial<Record<string, string>> = { gt: '>', gtEq: '>=', lt: '<', ltEq: '<=' };

/**
 * The filters' SQL (groupExpr / filterExpr): printLakeExpr, except around the marked numeric operands
 * (engineNumbers). Printing property filters with printLakeExpr alone gives HogQL's toFloat instead.
 */
export function printFilter(e: Expr, d: Dialect): string {
  const number = (x: Expr) =>
    x.kind === 'call' && engineNumbers.has(x) ? d.toNumber(printLakeExpr(x.args[0]!, d)) : null;
  if (e.kind === 'and' || e.kind === 'or') {
    if (!e.exprs.length) return e.kind === 'and' ? 'TRUE' : 'FALSE';
    return `(${e.exprs.map((x) => printFilter(x, d)).join(e.kind === 'and' ? ' AND ' : ' OR ')})`;
  }
  if (e.kind === 'not') return `(NOT ${printFilter(e.expr, d)})`;
  if (e.kind === 'between') {
    const n = number(e.expr);
    if (n !== null)
      return `(${n} ${e.negated ? 'NOT ' : ''}BETWEEN ${printLakeExpr(e.low, d)} AND ${printLakeExpr(e.high, d)})`;
  }
  if (e.kind === 'compare') {
    const n = number(e.left);
    if (n !== null && e.op === 'notEq' && e.right.kind === 'constant' && e.right.value === null)
      return `(${n} IS NOT NULL)`;
    const op = COMPARE_SQL[e.op];
    if (n !== null && op) return `(${n} ${op} ${printLakeExpr(e.right, d)})`;
  }
  return printLakeExpr(e, d);
}

/** At most this many day ranges in the partition predicate: past it the closest ranges are joined (more read, same answer). */
export const DAY_RANGES = 32;

/**
 * The days as few predicates on the day partition: consecutive days as one BETWEEN, at most
 * DAY_RANGES of them. Joining two ranges reads the days between too, which is exact: rows of a day
 * that is not the lake's fall only in buckets the caller takes from the other source.
 */
export function dayPredicate(days: readonly string[]): string {
  const sorted = [...new Set(days)].sort();
  if (!sorted.length) throw new LakeSqlUnsupported('a range without lake days');
  for (const day of sorted) if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new LakeSqlUnsupported(`the day ${day}`);
  const ordinal = (day: string) => Date.parse(`${day}T00:00:00Z`) / 86_400_000;
  const ranges: [string, string][] = [];
  for (const day of sorted) {
    const last = ranges.at(-1);
    if (last && ordinal(day) === ordinal(last[1]) + 1) last[1] = day;
    else ranges.push([day, day]);
  }
  while (ranges.length > DAY_RANGES) {
    let best = 1;
    for (let i = 2; i < ranges.length; i += 1)
      if (
        ordinal(ranges[i]![0]) - ordinal(ranges[i - 1]![1]) <
        ordinal(ranges[best]![0]) - ordinal(ranges[best - 1]![1])
      )
        best = i;
    ranges[best - 1]![1] = ranges[best]![1];
    ranges.splice(best, 1);
  }
  const column = identifier('day');
  const terms = ranges.map(([a, b]) => (a === b ? `${column} = '${a}'` : `${column} BETWEEN '${a}' AND '${b}'`));
  return terms.length === 1 ? terms[0]! : `(${terms.join(' OR ')})`;
}

function breakdownSql(b: BreakdownModel | null, d: Dialect): string {
  if (!b) return 'CAST(NULL AS varchar)';
  if (b.source === 'event') return printLakeExpr(prop(b.property), d);
  if (b.source === 'hogql' && b.expr) return `CAST(${printLakeExpr(b.expr, d)} AS varchar)`;
  throw new LakeSqlUnsupported(`a ${b.breakdown_type} breakdown`);
}

export function sourceSql(source: LakeSource): string {
  if (source.dialect === 'athena') return `${identifier(source.database)}.${identifier(source.table)}`;
  if (!source.files.length) throw new LakeSqlUnsupported('a range without lake files');
  const files = source.files.map(stringLiteral).join(', ');
  // The partition columns come from the path (events/project_id=<p>/day=<d>/), typed as Glue's.
  // By name: a day written before a column was added lacks it, and reads it as NULL (as Athena reads Parquet).
  return `read_parquet([${files}], hive_partitioning = true, hive_types = {'project_id': BIGINT, 'day': VARCHAR}, union_by_name = true)`;
}

const utcDay = (at: Date) => at.toISOString().slice(0, 10);
const DAY_MS = 86_400_000;

/**
 * What the day partitions read already say, so that neither engine works it out from `timestamp` row
 * by row (the compactor puts an event in the partition of its timestamp's UTC day: shared/domain/lake.ts).
 * A bound of the range on a UTC midnight, with no partition read past it, holds for every row read;
 * a range whose zone is UTC throughout (offset 0) has its day, week and month buckets in the day
 * column, which is one value per file (DuckDB) or per partition (Athena, which then need not scan
 * `timestamp` at all: fewer bytes billed).
 */
function partitionFacts(q: LakeTrend, first: string, last: string) {
  const { range } = q;
  const span = offsetSpans(range.timezone, range.from, range.to);
  return {
    lowerBound: !(range.from.getTime() % DAY_MS === 0 && first >= utcDay(range.from)),
    upperBound: !((range.to.getTime() + 1) % DAY_MS === 0 && last <= utcDay(range.to)),
    utc: span.length === 1 && span[0]!.offset === 0,
  };
}

/** The trend's SQL: columns series (0-based), breakdown (text or NULL), bucket (local start), value, events (the rows counted). */
export function printTrendSql(q: LakeTrend, source: LakeSource): string {
  const d = source.dialect === 'athena' ? ATHENA : DUCKDB;
  const { model, range } = q;
  if (!Number.isSafeInteger(q.projectId) || q.projectId < 0) throw new LakeSqlUnsupported('the project id');
  if (model.compareFilter.compare) throw new LakeSqlUnsupported('compare');
  const shared: Expr[] = [groupExpr(model.properties)];
  if (model.filterTestAccounts) shared.push(...q.project.test_account_filters.map((f) => filterExpr(f)));
  const days = q.days ? [...q.days].sort() : [utcDay(range.from), utcDay(range.to)];
  const facts = partitionFacts(q, days[0]!, days.at(-1)!);
  const bucket =
    model.interval !== 'hour' && facts.utc
      ? d.dayBucket(model.interval, identifier('day'), range.week_start_day)
      : d.truncate(
          model.interval,
          d.localTime(identifier('timestamp'), range.timezone, range.from, range.to),
          range.week_start_day,
        );
  const breakdown = breakdownSql(model.breakdownFilter, d);
  const selects = model.series.map((s, i) => {
    if (s.kind !== 'EventsNode') throw new LakeSqlUnsupported('an actions series');
    const filters = [...shared, groupExpr(s.properties)].filter((e) => !(e.kind === 'and' && !e.exprs.length));
    const where = [
      // First and outside every input's parentheses: nothing below can widen it.
      `${identifier('project_id')} = ${q.projectId}`,
      q.days ? dayPredicate(q.days) : `${identifier('day')} BETWEEN '${days[0]}' AND '${days[1]}'`,
      ...[hiddenRowsSql(q.hidden, d)].filter((sql) => sql !== null),
      ...(facts.lowerBound ? [`${identifier('timestamp')} >= ${d.timestamp(range.from)}`] : []),
      ...(facts.upperBound ? [`${identifier('timestamp')} <= ${d.timestamp(range.to)}`] : []),
      ...(s.event === null ? [] : [`${identifier('event')} = ${stringLiteral(s.event)}`]),
      ...(filters.length ? [`(${printFilter({ kind: 'and', exprs: filters }, d)})`] : []),
    ];
    return [
      // `events` beside the value: a breakdown ranks its values by event count, which adds up across sources.
      `SELECT ${i} AS series, ${breakdown} AS breakdown, ${bucket} AS bucket, ${aggregate(s, d)} AS value, count(*) AS events`,
      `FROM ${sourceSql(source)}`,
      `WHERE ${where.join('\n  AND ')}`,
      'GROUP BY 1, 2, 3',
    ].join('\n');
  });
  return oneStatement(`${selects.join('\nUNION ALL\n')}\nORDER BY 1, 2, 3`);
}
