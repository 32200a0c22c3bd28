/**
 * Big trends answered by the lake engine (shared/lake/engine.ts: Athena deployed, DuckDB locally),
 * merged exactly with the in-process engine. Before anything is read, the day counters give the
 * range's event count; above `lakeRoutingEvents`, for a trend the lake's SQL can print, each interval
 * bucket is computed wholly from one source (shared/lake/route.ts): from the lake when every UTC day
 * it touches is closed and current there, else in-process as before. Counts and distinct counts per
 * bucket are then exact; the breakdown ranking adds event counts, which are additive across sources.
 * Anything the merge could not keep exact (a distinct-count "Other" row, more values than one pass
 * holds) falls back to the in-process answer of the whole range.
 */
import { type DayCounterReader, readDayCounters } from '../db/segments.ts';
import { personsVersion } from '../db/projects.ts';
import { config } from '../config.ts';
import { now as clockNow } from '../clock.ts';
import { logger } from '../observability.ts';
import { type LakeEngine, type LakeRow, lakeEngine } from '../lake/engine.ts';
import {
  countedEvents,
  inProcessWindow,
  isLakeCurrent,
  lakeBuckets,
  lakeDays,
  type LakeDayCounter,
  utcDayOf,
  utcDaysBetween,
} from '../lake/route.ts';
import { LakeSqlUnsupported } from '../lake/sql/dialect.ts';
import { printTrendSql } from '../lake/sql/trends.ts';
import { periodsFor } from '../trends/compute.ts';
import { rankGroups } from '../trends/columnar/rank.ts';
import { MAX_CELLS, type ReadWindow } from '../trends/limits.ts';
import type { RowValues } from '../trends/math.ts';
import type { SeriesModel, TrendsModel } from '../trends/model.ts';
import { buildResponse } from '../trends/output.ts';
import { isoLocal } from '../trends/tz.ts';
import {
  AGGREGATED_DISPLAYS,
  BREAKDOWN_NULL_VALUE,
  BREAKDOWN_OTHER_VALUE,
  type DateRange,
  type ProjectSettings,
  type TrendResponse,
} from '../trends/types.ts';
import { lakeDayUris } from './lake.ts';
import { lakeHidden } from './lake-hides.ts';

/** Which engines answered: `duckdb` or `athena` alone, or with the in-process columnar engine for the other buckets. */
export type QueryEngine = 'duckdb' | 'athena' | 'duckdb+columnar' | 'athena+columnar';

export interface LakeTrendInput {
  projectId: number;
  query: TrendsModel;
  settings: ProjectSettings;
  range: DateRange;
  read: ReadWindow | null;
  /** The event names the trend reads (null: every name). */
  names: string[] | null;
  /** The counters' read, shared with the in-process read that follows (day-counters.ts); else a Query of its own. */
  readCounters?: DayCounterReader;
}

/** The in-process engine over a window of the range (the caller's read path, without its caches). */
export type InProcess = (query: TrendsModel, window: ReadWindow) => Promise<TrendResponse>;

export interface LakeTrendAnswer {
  response: TrendResponse;
  engine: QueryEngine;
  /** Buckets from the lake and from the in-process engine. */
  buckets: { lake: number; in_process: number };
}

const PERSON_MATHS = new Set(['dau']);
/**
 * Maths whose values add up across breakdown values (Other, the empty text's row). Not min/max:
 * a value without numbers is 0 there, not absent; not avg: it needs the counts.
 */
const ADDITIVE = new Set(['total', 'sum']);

/** The trend's shape is one the lake answers exactly (the SQL printer refuses the rest by name). */
export function lakeAnswers(input: LakeTrendInput, engine: LakeEngine): boolean {
  const { query, range, settings } = input;
  const breakdown = query.breakdownFilter;
  // Aggregated displays need a whole-range distinct count; group aggregation counts groups, not persons.
  if (AGGREGATED_DISPLAYS.has(query.trendsFilter.display) || query.aggregation_group_type_index !== null) return false;
  if (query.series.some((s) => s.math_group_type_index !== null)) return false;
  // A cumulative distinct count is the persons seen so far, not a running sum of the buckets' values.
  if (query.trendsFilter.display === 'ActionsLineGraphCumulative' && query.series.some((s) => PERSON_MATHS.has(s.math)))
    return false;
  // Event-property breakdowns only: their value text is the one the printer's property test pins against the engine.
  if (breakdown && (breakdown.source !== 'event' || breakdown.expr !== null || breakdown.cohorts)) return false;
  // Two buckets with one local start (an hour repeated when clocks go back) would share a lake row.
  const starts = range.buckets.map((b) => bucketText(b.getTime(), range.timezone));
  if (new Set(starts).size !== starts.length) return false;
  try {
    printTrendSql({ projectId: input.projectId, model: query, range, project: settings }, engine.source(['/']));
    return true;
  } catch (error) {
    // Anything else the printer throws is left to the in-process path, which reports its own errors.
    if (!(error instanceof LakeSqlUnsupported)) logger.warn('lake printer failed', { error: String(error) });
    return false;
  }
}

const bucketText = (t: number, tz: string) => isoLocal(t, tz).slice(0, 19).replace('T', ' ');

/**
 * The trend from the lake and the in-process engine, or null when it stays on the in-process path:
 * no lake engine, at most `lakeRoutingEvents` events, a shape the lake cannot answer exactly, or no
 * bucket current in the lake.
 */
export async function lakeTrend(
  input: LakeTrendInput,
  inProcess: InProcess,
  check: () => void,
  deadline: number,
  /** Called once the lake has answered (the caller's timings), before the in-process part runs. */
  onLake?: () => void,
  engine: LakeEngine | undefined = lakeEngine(),
): Promise<LakeTrendAnswer | null> {
  const { projectId, query, range, read, names } = input;
  if (!engine || !read || !range.buckets.length || !lakeAnswers(input, engine)) return null;
  const days = utcDaysBetween(read.from.getTime(), read.to.getTime());
  const single = names?.length === 1 ? names[0]! : null;
  const countsPersons = query.series.some((s) => PERSON_MATHS.has(s.math));
  const [counters, version] = await Promise.all([
    (input.readCounters ?? ((d, e) => readDayCounters(projectId, d, e)))(days, single) as Promise<
      Map<string, Map<string, LakeDayCounter>>
    >,
    countsPersons ? personsVersion(projectId) : Promise.resolve(null),
  ]);
  if (countedEvents(counters, names) <= config().lakeRoutingEvents) return null;
  check();
  const rule = { today: utcDayOf(clockNow().getTime()), names, personsVersion: version };
  const current = (day: string) => isLakeCurrent(day, counters.get(day), rule);
  const starts = range.buckets.map((b) => b.getTime());
  const span = { from: range.from.getTime(), to: range.to.getTime() };
  const window = { from: read.from.getTime(), to: read.to.getTime() };
  const inLake = lakeBuckets(starts, span, window, current);
  if (!inLake.some(Boolean)) return null;

  const lakeRows = await runLake(input, engine, inLake, counters, check, deadline);
  if (!lakeRows) return null;
  onLake?.();
  const rest = inProcessWindow(starts, inLake, span, window);
  const twins = Boolean(query.breakdownFilter) && query.series.some((s) => s.math !== 'total');
  const local = rest ? await inProcess(inProcessQuery(query, range, twins), windowOf(rest)) : null;
  check();
  const merged = mergeSources(query, range, inLake, lakeRows, local, twins);
  if (!merged) return null;
  const lakeCount = inLake.filter(Boolean).length;
  return {
    response: merged,
    engine: lakeCount === inLake.length ? engine.name : (`${engine.name}+columnar` as QueryEngine),
    buckets: { lake: lakeCount, in_process: inLake.length - lakeCount },
  };
}

const DAY_MS = 86_400_000;
function windowOf(w: { from: number; to: number }): ReadWindow {
  const days = Math.floor(w.to / DAY_MS) - Math.floor(w.from / DAY_MS) + 1;
  return { from: new Date(w.from), to: new Date(w.to), days };
}

interface LakeCell {
  value: number;
  events: number;
}

/** (series, breakdown value, bucket) -> the lake's value and event count, for the buckets the lake answers. */
export type LakeCells = Map<number, Map<string, Map<number, LakeCell>>>;

async function runLake(
  input: LakeTrendInput,
  engine: LakeEngine,
  inLake: boolean[],
  counters: Map<string, Map<string, LakeDayCounter>>,
  check: () => void,
  deadline: number,
): Promise<LakeCells | null> {
  const { projectId, query, range, settings } = input;
  const cells: LakeCells = new Map();
  const starts = range.buckets.map((b) => b.getTime());
  const span = { from: range.from.getTime(), to: range.to.getTime() };
  const days = lakeDays(starts, inLake, span, (day) =>
    [...(counters.get(day)?.values() ?? [])].some((c) => c.tally.count > 0),
  );
  if (!days.length) return cells;
  const [files, hidden] = await Promise.all([
    engine.name === 'duckdb' ? lakeDayUris(projectId, days) : Promise.resolve([]),
    lakeHidden(projectId),
  ]);
  // Past the caps of what the lake can leave out (lake-hides.ts): the in-process engine answers, exact without it.
  if (!hidden) return null;
  if (engine.name === 'duckdb' && !files.length) return cells;
  // Only these days' partitions: Athena scans (and bills) what it answers, not the whole range.
  const sql = printTrendSql({ projectId, model: query, range, project: settings, days, hidden }, engine.source(files));
  return lakeCellsOf(query, range, inLake, await engine.run(projectId, sql, check, deadline));
}

/** The lake's rows of the buckets it answers, by series, breakdown value (as the engine names it) and bucket; null where only the in-process path is exact. */
export function lakeCellsOf(
  query: TrendsModel,
  range: DateRange,
  inLake: boolean[],
  rows: LakeRow[],
): LakeCells | null {
  const cells: LakeCells = new Map();
  const bucketOf = new Map(range.buckets.map((b, i) => [bucketText(b.getTime(), range.timezone), i]));
  for (const row of rows) {
    const bucket = bucketOf.get(String(row.bucket ?? '').slice(0, 19));
    if (bucket === undefined || !inLake[bucket]) continue;
    const series = Number(row.series);
    // The engine reads an empty text as no value: one row with NULL's, which only a count or a sum may add up.
    if (row.breakdown === '' && !ADDITIVE.has(query.series[series]?.math ?? '')) return null;
    const value = row.breakdown === null || row.breakdown === '' ? BREAKDOWN_NULL_VALUE : String(row.breakdown);
    const perSeries = cells.get(series) ?? new Map<string, Map<number, LakeCell>>();
    cells.set(series, perSeries);
    const perValue = perSeries.get(value) ?? new Map<number, LakeCell>();
    perSeries.set(value, perValue);
    const before = perValue.get(bucket);
    perValue.set(bucket, {
      value: Number(row.value) + (before?.value ?? 0),
      events: Number(row.events) + (before?.events ?? 0),
    });
  }
  return cells;
}

/**
 * The query the in-process engine runs for its buckets: raw values per bucket (no formula, no
 * cumulative display), every breakdown value that fits one pass (an Other row says some did not), and
 * with a breakdown over a distinct count, a `total` twin per series for the ranking's event counts.
 */
export function inProcessQuery(query: TrendsModel, range: DateRange, twins: boolean): TrendsModel {
  const series: SeriesModel[] = twins
    ? [...query.series, ...query.series.map((s) => ({ ...s, math: 'total' as const }))]
    : query.series;
  const breakdown = query.breakdownFilter;
  const limit = Math.max(1, Math.floor(MAX_CELLS / (series.length * range.buckets.length)) - 2);
  return {
    ...query,
    series,
    formula: null,
    trendsFilter: { display: 'ActionsLineGraph', formula: null },
    breakdownFilter: breakdown
      ? { ...breakdown, breakdown_limit: limit, breakdown_hide_other_aggregation: false }
      : null,
  };
}

const rowKey = (v: string | number | undefined) => (v === undefined ? BREAKDOWN_NULL_VALUE : String(v));

/** The merged answer, or null when exactness needs the in-process path (see the module's comment). */
export function mergeSources(
  query: TrendsModel,
  range: DateRange,
  inLake: boolean[],
  lake: LakeCells,
  local: TrendResponse | null,
  twins: boolean,
): TrendResponse | null {
  const n = range.buckets.length;
  const seriesCount = query.series.length;
  // In-process rows per (series, value): its values in its own buckets.
  const localRows = new Map<number, Map<string, number[]>>();
  for (const row of local?.result ?? []) {
    if (row.breakdown_value === BREAKDOWN_OTHER_VALUE) return null;
    const order = row.action?.order ?? 0;
    const perSeries = localRows.get(order) ?? new Map<string, number[]>();
    localRows.set(order, perSeries);
    perSeries.set(rowKey(row.breakdown_value), row.data);
  }
  const period = periodsFor(query, range)[0]!;
  const series = query.series.map((entity, s) => {
    const values = new Map<string, number[]>();
    const volumes = new Map<string, number>();
    const add = (value: string) => {
      if (!values.has(value)) values.set(value, new Array(n).fill(0));
      return values.get(value)!;
    };
    for (const [value, byBucket] of lake.get(s) ?? []) {
      const row = add(value);
      for (const [bucket, cell] of byBucket) {
        row[bucket] = cell.value;
        volumes.set(value, (volumes.get(value) ?? 0) + cell.events);
      }
    }
    const counts = twins ? localRows.get(s + seriesCount) : localRows.get(s);
    for (const [value, data] of localRows.get(s) ?? []) {
      const row = add(value);
      for (let i = 0; i < n; i += 1) if (!inLake[i]) row[i] = data[i] ?? 0;
    }
    for (const [value, data] of counts ?? []) {
      let events = 0;
      for (let i = 0; i < n; i += 1) if (!inLake[i]) events += data[i] ?? 0;
      volumes.set(value, (volumes.get(value) ?? 0) + events);
    }
    return { entity, values, volumes };
  });
  const breakdown = query.breakdownFilter;
  const rows = series.map(({ entity, values, volumes }) => {
    if (!breakdown) {
      const v = values.get(BREAKDOWN_NULL_VALUE) ?? new Array(n).fill(0);
      return [{ values: v, aggregated: v.reduce((a, b) => a + b, 0) }] as RowValues[];
    }
    const texts = [...values.keys()];
    // A value spelled like the Other sentinel shares Other's row in the engine: left to it.
    if (values.has(BREAKDOWN_OTHER_VALUE)) return [null];
    const ranking = rankGroups(
      Float64Array.from(texts, (t) => volumes.get(t) ?? 0),
      texts,
      breakdown,
    );
    if (!ranking) return [];
    return ranking.values.map((value): RowValues | null => {
      if (value !== BREAKDOWN_OTHER_VALUE) {
        const v = values.get(value)!;
        return { breakdown_value: value, values: v, aggregated: v.reduce((a, b) => a + b, 0) };
      }
      // Other is the math over the remaining values: a sum of theirs only where the math adds up.
      if (!ADDITIVE.has(entity.math)) return null;
      const v = new Array<number>(n).fill(0);
      texts.forEach((t, g) => {
        if (ranking.values[ranking.rowOfGroup[g]!] !== BREAKDOWN_OTHER_VALUE) return;
        const data = values.get(t)!;
        for (let i = 0; i < n; i += 1) v[i]! += data[i]!;
      });
      return { breakdown_value: value, values: v, aggregated: v.reduce((a, b) => a + b, 0) };
    });
  });
  if (rows.some((r) => r.includes(null))) return null;
  return buildResponse({ query, timezone: range.timezone, actions: new Map() }, [
    { period, series: series.map(({ entity }, s) => ({ entity, rows: rows[s] as RowValues[] })) },
  ]);
}
