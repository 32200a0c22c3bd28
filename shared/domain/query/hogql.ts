/**
 * HogQLQuery (PostHog's SQL): one SELECT over the project's events, answered by the lake engine
 * (DuckDB over the lake's files locally, Athena deployed) and shaped as PostHog's HogQLQueryResponse
 * (`results` as rows, `columns`, `types` as [name, ClickHouse type] pairs, `hasMore`, `limit`, `offset`).
 *
 * The statement is parsed (shared/hogql/select.ts) and printed (shared/lake/sql/select.ts) with the
 * project predicate and the project's own files put in by the printer: nothing of the text can name
 * another project, a file, a table function or a setting. It reads the lake as it stands: each UTC day
 * as its last compaction wrote it. Events captured since (today's newest, late arrivals) are not in the
 * answer; `lake_pending_events` says how many the day counters hold beyond the lake's files.
 */
import { now as clockNow } from '../../clock.ts';
import { firstEventAt } from '../../db/projects.ts';
import { readDayCounters } from '../../db/segments.ts';
import { ServiceUnavailable, ValidationError } from '../../errors.ts';
import type { Expr } from '../../hogql/ast.ts';
import { checkIntervals } from '../../hogql/intervals.ts';
import { integerNotExact } from '../../hogql/limits.ts';
import { printHogQL } from '../../hogql/print.ts';
import { mapExpr, parseSelectStatement, type SelectStatement } from '../../hogql/select.ts';
import { type LakeEngine, LakeQueryFailed, type LakeRow, lakeEngine } from '../../lake/engine.ts';
import { utcDayOf, utcDaysBetween } from '../../lake/route.ts';
import { LakeSqlUnsupported } from '../../lake/sql/dialect.ts';
import { decodeCell, type LakeSelect, type PrintedSelect, printSelectSql } from '../../lake/sql/select.ts';
import { filterExpr, groupExpr, type LakeSource } from '../../lake/sql/trends.ts';
import { DEFAULT_HOGQL_LIMIT, type HogQLQuery, MAX_HOGQL_LIMIT } from '../../schemas/query/hogql.ts';
import { dateContext, instantInRange, OUT_OF_RANGE_HINT } from '../../trends/dates.ts';
import { parseProperties } from '../../trends/properties.ts';
import { localDateOf } from '../../trends/tz.ts';
import type { ProjectSettings } from '../../trends/types.ts';
import { lakeDayUris } from '../lake.ts';
import { lakeHidden, MAX_HIDDEN_CHARACTERS, MAX_LAKE_HIDES } from '../lake-hides.ts';
import { projectSettings } from '../projects.ts';
import { checkAnswerBytes, parseInstant } from './events-shape.ts';
import type { RunContext } from './runner.ts';

/** Where a 400 about the statement points (the query's `query` text). */
const ATTR = 'query';
/** UTC days one statement reads at most (as a trend's day reads, access pattern #57). */
export const MAX_HOGQL_DAYS = 3_700;

const DAY_MS = 86_400_000;
const constant = (value: string | number | boolean | null): Expr => ({ kind: 'constant', value });
const toDateTime = (t: number): Expr => ({
  kind: 'call',
  name: 'toDateTime',
  args: [constant(new Date(t).toISOString())],
});
const compareTime = (op: 'gtEq' | 'lt', t: number): Expr => ({
  kind: 'compare',
  op,
  left: { kind: 'field', chain: ['timestamp'] },
  right: toDateTime(t),
});

/** A date of `filters.dateRange` as PostHog's replace_filters reads it: ISO (zone-less in the project's zone) or relative. */
function instant(raw: string, settings: ProjectSettings, now: Date, attr: string): number {
  const t = parseInstant(raw, dateContext(settings, now));
  if (t === null || !Number.isFinite(t)) throw new ValidationError(`"${raw.slice(0, 100)}" is not a date.`, attr);
  return t;
}

/** `{filters}` reads person filters from the lake's person properties, as PostHog's SQL does on events. */
const PERSONS_ON_EVENTS = { personProperties: true };

/**
 * `{filters}`, `{filters.dateRange.from|to}`, `{variables.<code_name>}` and `{<name>}` (the query's
 * `values`), as PostHog expands them: filters into event-property, date and test-account conditions.
 */
export function placeholders(query: HogQLQuery, settings: ProjectSettings, now: Date) {
  const filters = query.filters ?? null;
  const range = filters?.dateRange ?? null;
  const from =
    range?.date_from && range.date_from !== 'all'
      ? instant(range.date_from, settings, now, 'query__filters__dateRange__date_from')
      : null;
  const to = range?.date_to ? instant(range.date_to, settings, now, 'query__filters__dateRange__date_to') : null;
  const properties =
    filters?.properties === undefined || filters.properties === null
      ? null
      : parseProperties(filters.properties, 'query__filters__properties').group;
  return (path: string[]): Expr => {
    const name = path.join('.');
    if (name === 'filters') {
      const exprs: Expr[] = [];
      if (properties) exprs.push(lakeExpr(() => groupExpr(properties, PERSONS_ON_EVENTS)));
      if (to !== null) exprs.push(compareTime('lt', to));
      if (from !== null) exprs.push(compareTime('gtEq', from));
      if (filters?.filterTestAccounts)
        exprs.push(...settings.test_account_filters.map((f) => lakeExpr(() => filterExpr(f, PERSONS_ON_EVENTS))));
      if (!exprs.length) return constant(true);
      return exprs.length === 1 ? (exprs[0] as Expr) : { kind: 'and', exprs };
    }
    if (name === 'filters.dateRange.from' || name === 'filters.dateRange.to') {
      const t = name.endsWith('from') ? from : to;
      if (t === null)
        throw new ValidationError(`HogQLQuery: {${name}} is used but the query's filters set no such date.`, ATTR);
      return toDateTime(t);
    }
    if (path[0] === 'variables' && path.length === 2) {
      const variable = Object.values(query.variables ?? {}).find((v) => v.code_name === path[1]);
      if (!variable || variable.value === undefined)
        throw new ValidationError(`HogQLQuery: the variable ${path[1]} has no value in the query's "variables".`, ATTR);
      return exactConstant(variable.value, name);
    }
    const values = query.values ?? {};
    if (path.length === 1 && Object.hasOwn(values, name)) return exactConstant(values[name] ?? null, name);
    throw new ValidationError(`HogQLQuery: the placeholder {${name.slice(0, 100)}} has no value.`, ATTR);
  };
}

/** A placeholder's value; a JSON integer past 2^53 was rounded when the body was read, so it is refused (send it as a string). */
function exactConstant(value: string | number | boolean | null, name: string): Expr {
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value))
    throw integerNotExact(`the value of {${name.slice(0, 100)}}`, ATTR, ' Send it as a string.');
  return constant(value);
}

const INTERVAL_MS: Record<string, number> = {
  toIntervalSecond: 1_000,
  toIntervalMinute: 60_000,
  toIntervalHour: 3_600_000,
  toIntervalDay: DAY_MS,
  toIntervalWeek: 7 * DAY_MS,
};
const INTERVAL_MONTHS: Record<string, number> = { toIntervalMonth: 1, toIntervalQuarter: 3, toIntervalYear: 12 };

/** `now()`, `now() - INTERVAL 7 DAY`, ...: the instant, or null for anything else (months on the UTC calendar). */
function nowInstant(e: Expr, now: number): number | null {
  if (e.kind === 'call' && e.name === 'now' && !e.args.length && !e.params) return now;
  if (e.kind !== 'arithmetic' || (e.op !== '+' && e.op !== '-')) return null;
  const base = nowInstant(e.left, now);
  const step = e.right;
  if (base === null || step.kind !== 'call' || step.args.length !== 1) return null;
  const n = step.args[0]?.kind === 'constant' ? step.args[0].value : null;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) return null;
  const sign = e.op === '-' ? -1 : 1;
  if (Object.hasOwn(INTERVAL_MS, step.name)) return base + sign * n * (INTERVAL_MS[step.name] as number);
  if (!Object.hasOwn(INTERVAL_MONTHS, step.name)) return null;
  const d = new Date(base);
  d.setUTCMonth(d.getUTCMonth() + sign * n * (INTERVAL_MONTHS[step.name] as number));
  return d.getTime();
}

/**
 * The statement with `now()` (and `now() ± INTERVAL n unit`) as the one instant of the request, and
 * `today()` as its date in the project's zone: the clock's, not each engine's.
 */
export function foldNow(statement: SelectStatement, now: number, timezone = 'UTC'): SelectStatement {
  const { year, month, day } = localDateOf(now, timezone);
  const today: Expr = {
    kind: 'call',
    name: 'toDate',
    args: [constant(`${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`)],
  };
  const fold = (e: Expr) => {
    // Each interval within its cap first, so a huge one is a 400 naming it rather than a folded NULL.
    checkIntervals(e, ATTR);
    return mapExpr(e, (node) => {
      if (node.kind === 'call' && node.name === 'today' && !node.args.length && !node.params) return today;
      const t = nowInstant(node, now);
      if (t === null) return undefined;
      if (!instantInRange(t))
        throw new ValidationError(
          `HogQLQuery: ${printHogQL(node).slice(0, 100)} is out of range: ${OUT_OF_RANGE_HINT}.`,
          ATTR,
        );
      return toDateTime(t);
    });
  };
  return {
    ...statement,
    columns: statement.columns.map((c) => ({ ...c, expr: fold(c.expr) })),
    where: statement.where && fold(statement.where),
    groupBy: statement.groupBy.map(fold),
    having: statement.having && fold(statement.having),
    orderBy: statement.orderBy.map((o) => ({ ...o, expr: fold(o.expr) })),
  };
}

/** A filter the lake cannot print (a person or cohort filter) is a 400 naming it, not a 500. */
function lakeExpr(build: () => Expr): Expr {
  try {
    return build();
  } catch (error) {
    throw refused(error);
  }
}

function refused(error: unknown): unknown {
  if (error instanceof LakeSqlUnsupported)
    return new ValidationError(`HogQLQuery: ${error.construct} is not supported on the lake engine.`, ATTR);
  return error;
}

/** Top-level `timestamp` bounds of WHERE (through ANDs only): the days no row outside of can match. */
export function timeBounds(where: Expr | null, settings: ProjectSettings): { from: number; to: number } {
  const bounds = { from: -Infinity, to: Infinity };
  const conjuncts: Expr[] = where ? [where] : [];
  for (let e = conjuncts.pop(); e !== undefined; e = conjuncts.pop()) {
    if (e.kind === 'and') conjuncts.push(...e.exprs);
    if (e.kind !== 'compare') continue;
    const flip = e.right.kind === 'field';
    const [field, value] = flip ? [e.right, e.left] : [e.left, e.right];
    if (field.kind !== 'field' || field.chain.length !== 1 || field.chain[0] !== 'timestamp') continue;
    const text =
      value.kind === 'constant'
        ? value.value
        : value.kind === 'call' &&
            (value.name === 'toDateTime' || value.name === 'toDate') &&
            value.args.length === 1 &&
            value.args[0]?.kind === 'constant'
          ? value.args[0].value
          : null;
    if (typeof text !== 'string') continue;
    const t = parseInstant(text, dateContext(settings, new Date(0)));
    if (t === null || !Number.isFinite(t)) continue;
    const op = flip ? ({ gt: 'lt', gtEq: 'ltEq', lt: 'gt', ltEq: 'gtEq' } as Record<string, string>)[e.op] : e.op;
    if (op === 'gt' || op === 'gtEq' || op === 'eq') bounds.from = Math.max(bounds.from, t);
    if (op === 'lt' || op === 'ltEq' || op === 'eq') bounds.to = Math.min(bounds.to, t);
  }
  return bounds;
}

/**
 * The UTC days a statement reads: from the project's first event (or the WHERE's lower bound) to
 * tomorrow (or its upper bound); a 400 past MAX_HOGQL_DAYS.
 */
export function daysToRead(
  firstEventAt: number | undefined,
  bounds: { from: number; to: number },
  now: number,
): string[] {
  const from = Math.max(firstEventAt ?? now, bounds.from);
  const to = Math.min(now + DAY_MS, bounds.to);
  if (from > to) return [];
  if (Math.floor(to / DAY_MS) - Math.floor(from / DAY_MS) + 1 > MAX_HOGQL_DAYS)
    throw new ValidationError(
      `HogQLQuery reads at most ${MAX_HOGQL_DAYS} days of events: bound timestamp in WHERE (or {filters} with a dateRange).`,
      ATTR,
    );
  return utcDaysBetween(from, to);
}

/** The row cap the text asks for, PostHog's default and ceiling applied (a larger LIMIT is lowered, as PostHog does). */
export function limitOf(statement: SelectStatement): number {
  return Math.min(statement.limit ?? DEFAULT_HOGQL_LIMIT, MAX_HOGQL_LIMIT);
}

/** Rows asked of the engine: one past the page says whether more follow; `LIMIT 0` asks for none, so no page follows it. */
export const rowsToFetch = (limit: number): number => (limit === 0 ? 0 : limit + 1);

/** An engine's complaint about the statement itself (types, casts, a bad argument): the caller's 400, not our 5xx. */
const DUCKDB_QUERY_ERROR =
  /^(Binder|Conversion|Out of Range|Invalid Input|Parser|Not implemented|Catalog|Invalid Type|Type Mismatch) Error/;
const ATHENA_QUERY_ERROR =
  /(SYNTAX_ERROR|TYPE_MISMATCH|INVALID_CAST_ARGUMENT|INVALID_FUNCTION_ARGUMENT|FUNCTION_NOT_FOUND|DIVISION_BY_ZERO|NUMERIC_VALUE_OUT_OF_RANGE|NOT_SUPPORTED|COLUMN_NOT_FOUND|MISSING_GROUP_BY)/;

function engineError(error: unknown, engine: LakeEngine): unknown {
  const message = error instanceof Error ? error.message : String(error);
  const userFault =
    engine.name === 'duckdb'
      ? !(error instanceof LakeQueryFailed) && DUCKDB_QUERY_ERROR.test(message)
      : error instanceof LakeQueryFailed && ATHENA_QUERY_ERROR.test(message);
  if (!userFault) return error;
  // The engine's first line, with no file path of ours in it.
  const detail = (message.split('\n')[0] ?? '').replace(/'[^']*\.parquet'/g, "'<file>'").slice(0, 300);
  return new ValidationError(`HogQLQuery: the engine refused the query: ${detail}`, ATTR);
}

/** The statement's SQL, or a 400 naming what the lake cannot print. */
export function printStatement(q: LakeSelect, source: LakeSource): PrintedSelect {
  try {
    return printSelectSql(q, source);
  } catch (error) {
    throw refused(error);
  }
}

/** Runs printed SQL for the project (the engine reaches its data only); the engine's complaints about the statement are 400s. */
export function runStatement(
  engine: LakeEngine,
  projectId: number,
  sql: string,
  check: () => void,
  deadline: number,
): Promise<LakeRow[]> {
  return engine.run(projectId, sql, check, deadline).catch((error: unknown) => {
    throw engineError(error, engine);
  });
}

export async function runHogQLQuery(
  context: RunContext,
  query: HogQLQuery,
  engine: LakeEngine | undefined = lakeEngine(),
): Promise<Record<string, unknown>> {
  const { projectId } = context;
  const settings = projectSettings(context.project);
  const now = clockNow();
  const statement = foldNow(
    parseSelectStatement(query.query, ATTR, placeholders(query, settings, now)),
    now.getTime(),
    settings.timezone,
  );
  const limit = limitOf(statement);
  const offset = statement.offset ?? 0;
  if (!engine)
    throw new ServiceUnavailable('HogQLQuery is answered by the lake engine, which this stage does not run.');

  const days = daysToRead(
    (await firstEventAt(projectId))?.getTime(),
    timeBounds(statement.where, settings),
    now.getTime(),
  );
  const span = days.length
    ? { from: days[0] as string, to: days.at(-1) as string }
    : { from: utcDayOf(now.getTime()), to: utcDayOf(now.getTime()) };
  const [files, counters, hidden] = await Promise.all([
    engine.name === 'duckdb' ? lakeDayUris(projectId, days) : Promise.resolve([]),
    readDayCounters(projectId, days, null),
    lakeHidden(projectId),
  ]);
  context.check();
  // Past the caps the lake cannot leave out what was deleted: nothing is served until its days are rewritten.
  if (!hidden)
    throw new ServiceUnavailable(
      `HogQLQuery: the lake is rewriting this project's days after more recent person deletions and property removals than one query leaves out (${MAX_LAKE_HIDES}, or ${MAX_HIDDEN_CHARACTERS / 1024} KiB of ids); ask again in a few minutes.`,
    );
  // Printed even when there is nothing to read, so an unsupported statement is a 400 whatever the data.
  const printed = printStatement(
    {
      projectId,
      statement,
      timezone: settings.timezone,
      weekStart: settings.week_start_day,
      days: span,
      limit: rowsToFetch(limit),
      offset,
      hidden,
    },
    engine.source(files.length ? files : ['/']),
  );
  const rows =
    engine.name === 'duckdb' && !files.length
      ? []
      : await runStatement(engine, projectId, printed.sql, context.check, context.deadline);
  const names = printed.columns.map((_, i) => `c${i}`);
  const results = rows
    .slice(0, limit)
    .map((row) => names.map((n, i) => decodeCell(printed.types[i] as string, row[n] ?? null, settings.timezone)));
  let pending = 0;
  for (const day of counters.values())
    for (const counter of day.values()) pending += Math.max(0, counter.tally.count - (counter.lake?.tally.count ?? 0));
  const body = {
    results,
    columns: printed.columns,
    types: printed.columns.map((name, i) => [name, printed.types[i]]),
    hasMore: rows.length > limit,
    limit,
    offset,
    query: query.query,
    query_engine: engine.name,
    // Events the day counters hold that the lake's files do not (yet): captured since their day's last compaction.
    lake_pending_events: pending,
  };
  checkAnswerBytes(Buffer.byteLength(JSON.stringify(body)));
  return body;
}
