/**
 * `npm run bench -- lake`: the Parquet lake on this machine. The engine benchmark's synthetic events
 * (bench/engine.ts `generate`: 30 days, 2,000 distinct ids, the trends property mix) are written day
 * by day with the compactor's writer (shared/lake/rows.ts, one file per (project, day) under the lake
 * layout; each day's events handed over as the compactor reads them: asTheCompactorReadsThem) while the same events become the columnar engine's segments; then DuckDB answers trends
 * printed by shared/lake/sql/trends.ts over those files:
 *   (a) filtered + breakdown: $pageview, $browser in (Chrome, Firefox, Safari), breakdown $os, by day, 30 days;
 *   (b) dau of $pageview by day, 30 days;
 *   (c) sum of a numeric property (`amount`, JSON) of $pageview by day, 30 days: the text read as the
 *       engine reads a number (the dialect's toNumber), no target of the issue's;
 *   (q) (a) written as a HogQLQuery statement (its parser and printer), for the cost of that path.
 * Every cell of DuckDB's trend answers must equal the columnar engine's on the same events (a mismatch is an error).
 * BENCH_LAKE_EVENTS (default 10,000,000) events are written once; BENCH_LAKE_COPIES (default 1; a list,
 * e.g. `1,10`) reads them as that many copies of each day's files in turn, so `1,10` measures 10M and
 * 100M events in one run without writing 100M (counts and sums scale by the copies, distinct counts do
 * not; the comparison with the engine scales them so).
 * BENCH_LAKE_RUNS (default 5, after one warm-up). Also: the write rate (events/s, encoding + writing the
 * files; generation not counted) and, for Athena's cost model, the compressed bytes per event of the
 * columns each query reads.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { shardOf } from '#shared/db/events.ts';
import { keys } from '#shared/db/keys.ts';
import { dataKey } from '#shared/lake/layout.ts';
import { LAKE_COLUMNS, type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';
import { parseSelectStatement } from '#shared/hogql/select.ts';
import { printSelectSql } from '#shared/lake/sql/select.ts';
import { printTrendSql } from '#shared/lake/sql/trends.ts';
import {
  BREAKDOWN_NULL_VALUE,
  parseTrendRequest,
  type ProjectSettings,
  resolveDateRange,
  type TrendResponse,
} from '#shared/trends/index.ts';
import { generate, runColumnar } from './engine.ts';
import { fixed, heading, table } from './lib/format.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';
import { duckdb, FILTER_BROWSERS } from './trends.ts';

const DAYS = 30;
const NOW = Date.parse('2026-01-31T12:00:00Z');
const PROJECT_ID = 1;
const PROJECT: ProjectSettings = { timezone: 'UTC', week_start_day: 0, test_account_filters: [] };

/** Issue 25's targets at 10M events. */
const TARGET_BREAKDOWN_MS = 250;
const TARGET_BREAKDOWN_100M_MS = 2_500;
const TARGET_DAU_MS = 1_000;
const TARGET_WRITE_PER_S = 200_000;

function intEnv(name: string, fallback: number): number {
  const n = Number(process.env[name] || fallback);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer`);
  return n;
}

const QUERIES = [
  {
    id: 'a',
    title: 'filtered + breakdown ($pageview, $browser in 3, by $os, day)',
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ key: '$browser', operator: 'exact', value: FILTER_BROWSERS }],
      breakdown: '$os',
      date_from: '2026-01-01',
      date_to: '2026-01-30T23:59:59',
      breakdown_limit: 25,
    },
    target: TARGET_BREAKDOWN_MS,
    target100M: TARGET_BREAKDOWN_100M_MS,
  },
  {
    id: 'b',
    title: 'dau ($pageview, day)',
    request: {
      events: [{ id: '$pageview', math: 'dau' }],
      date_from: '2026-01-01',
      date_to: '2026-01-30T23:59:59',
    },
    target: TARGET_DAU_MS,
    target100M: null,
  },
  {
    id: 'c',
    title: 'sum of amount ($pageview, day)',
    request: {
      events: [{ id: '$pageview', math: 'sum', math_property: 'amount' }],
      date_from: '2026-01-01',
      date_to: '2026-01-30T23:59:59',
    },
    target: null,
    target100M: null,
  },
] as const;

/**
 * The day's events as the compactor hands them to the lake writer (shared/domain/event-segments.ts
 * compactDay): parsed from the store's JSON (fresh objects and flat strings, where the generator's are
 * concatenations no parse gives) and in the order it reads them, shard by shard (shardOf), each
 * shard by the eventsByDay sort key (event name, then time). Not timed: the store does this work.
 */
export function asTheCompactorReadsThem(events: readonly LakeEvent[]): LakeEvent[] {
  const sortKey = (e: LakeEvent) => keys.eventsByDaySk(e.event, e.timestamp, e.uuid);
  const stored = events
    .map((e) => ({ e, shard: shardOf(e.uuid), key: sortKey(e) }))
    .sort((a, b) => a.shard - b.shard || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ e }) => e);
  return JSON.parse(JSON.stringify(stored)) as LakeEvent[];
}

/** Day by day (no 10M objects at once): the engine benchmark's events, each day's files encoded and written (timed). */
export function writeLake(root: string, count: number) {
  const files: { path: string; day: string; part: number }[] = [];
  let writeMs = 0;
  // CPU time (user + system) of this process: what a Lambda is billed for, and what other load on the machine disturbs least.
  let cpuMs = 0;
  let bytes = 0;
  let serial = 0;
  const data = generate(count, 25, (rows) => {
    if (!rows.length) return;
    const events = asTheCompactorReadsThem(
      rows.map(({ event, row }) => ({
        uuid: `0190f000-0000-7000-8000-${String(serial++).padStart(12, '0')}`,
        event,
        timestamp: new Date(row.t).toISOString(),
        distinct_id: row.distinct_id,
        // The engine's persons are one per distinct id, so the lake's coalesce(person_id, distinct_id) counts alike.
        person_id: null,
        properties: row.properties,
      })),
    );
    const day = new Date(rows[0]!.row.t).toISOString().slice(0, 10);
    const began = performance.now();
    const cpuBegan = process.cpuUsage();
    lakeFiles(events).forEach((body, part) => {
      const path = join(root, dataKey(PROJECT_ID, day, 'bench', part));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      files.push({ path, day, part });
      bytes += body.byteLength;
    });
    writeMs += performance.now() - began;
    const cpu = process.cpuUsage(cpuBegan);
    cpuMs += (cpu.user + cpu.system) / 1000;
  });
  return { data, files, writeMs, cpuMs, bytes };
}

/** Copy `copy` of every written file, beside it in its day (not timed: it stands for more events written at the measured rate). */
function copyLake(root: string, files: readonly { path: string; day: string; part: number }[], copy: number): string[] {
  return files.map(({ path, day, part }) => {
    const to = join(root, dataKey(PROJECT_ID, day, `copy${copy}`, part));
    copyFileSync(path, to);
    return to;
  });
}

/** (breakdown, day) -> value, from DuckDB's rows and from the engine's response, for one series. */
const cellKey = (breakdown: unknown, day: string) =>
  `${breakdown === null || breakdown === undefined || breakdown === BREAKDOWN_NULL_VALUE ? '∅' : String(breakdown)}|${day}`;

function duckCells(rows: Record<string, unknown>[]): Map<string, number> {
  return new Map(rows.map((r) => [cellKey(r.breakdown, String(r.bucket).slice(0, 10)), Number(r.value)]));
}

function engineCells(response: TrendResponse, scale: number): Map<string, number> {
  const cells = new Map<string, number>();
  for (const series of response.result)
    series.days.forEach((day, i) => {
      const value = series.data[i] ?? 0;
      if (value) cells.set(cellKey(series.breakdown_value, day.slice(0, 10)), value * scale);
    });
  return cells;
}

/** The cells where the two answers differ (at most 5 named). */
function differences(lake: Map<string, number>, engine: Map<string, number>): string[] {
  const keys = new Set([...lake.keys(), ...engine.keys()]);
  // Sums of cents differ in the last bits with the order of addition: equal within 1e-9 of their size.
  const same = (a: number, b: number) => a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
  return [...keys]
    .filter((k) => !same(lake.get(k) ?? 0, engine.get(k) ?? 0))
    .slice(0, 5)
    .map((k) => `${k}: lake ${lake.get(k) ?? 0}, engine ${engine.get(k) ?? 0}`);
}

export const lakeBenchmark: Benchmark = {
  name: 'lake',
  title: 'Parquet lake: write rate, DuckDB trends over the files (filtered breakdown, dau), bytes per event',
  async run(): Promise<BenchResult> {
    const written = intEnv('BENCH_LAKE_EVENTS', 10_000_000);
    const copiesList = (process.env.BENCH_LAKE_COPIES || '1').split(',').map((c) => {
      const n = Number(c);
      if (!Number.isInteger(n) || n <= 0) throw new Error('BENCH_LAKE_COPIES must be positive integers, e.g. 1,10');
      return n;
    });
    const runs = intEnv('BENCH_LAKE_RUNS', 5);
    const errors: string[] = [];
    const rows: SummaryRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'bench-lake-'));
    try {
      heading(
        `lake: ${written.toLocaleString('en')} events written over ${DAYS} days, read as ${copiesList.join(', ')} copies`,
      );
      const { data, files: originals, writeMs, cpuMs, bytes } = writeLake(root, written);
      const rate = written / (writeMs / 1000);
      const cpuRate = written / (cpuMs / 1000);
      console.log(
        `wrote ${originals.length} files, ${fixed(bytes / 2 ** 20)} MB (${fixed(bytes / written, 2)} bytes/event) in ${fixed(writeMs / 1000, 2)} s: ${Math.round(rate).toLocaleString('en')} events/s (one thread), ${Math.round(cpuRate).toLocaleString('en')} events per CPU-second`,
      );
      rows.push({
        benchmark: 'lake',
        metric: `write rate per CPU-second (${written.toLocaleString('en')} events)`,
        value: `${Math.round(cpuRate).toLocaleString('en')} ev/CPU-s`,
        target: `>= ${TARGET_WRITE_PER_S.toLocaleString('en')}`,
        status: cpuRate >= TARGET_WRITE_PER_S ? 'pass' : 'OVER TARGET',
      });
      rows.push({
        benchmark: 'lake',
        metric: `write rate (${written.toLocaleString('en')} events)`,
        value: `${Math.round(rate).toLocaleString('en')} ev/s`,
        target: `>= ${TARGET_WRITE_PER_S.toLocaleString('en')}`,
        status: rate >= TARGET_WRITE_PER_S ? 'pass' : 'OVER TARGET',
      });

      const { DuckDBInstance } = await duckdb();
      const connection = await (await DuckDBInstance.create(':memory:')).connect();
      const files = originals.map((f) => f.path);
      let made = 1;
      for (const copies of [...new Set(copiesList)].sort((x, y) => x - y)) {
        for (; made < copies; made += 1) files.push(...copyLake(root, originals, made));
        const count = written * copies;
        const size = `${count / 1_000_000}M`;
        const list = files.map((f) => `'${f}'`).join(', ');
        const columnBytes = new Map<string, number>(
          (
            (await (
              await connection.runAndReadAll(
                `SELECT path_in_schema AS col, sum(total_compressed_size) AS bytes FROM parquet_metadata([${list}]) GROUP BY 1`,
              )
            ).getRowObjectsJson()) as { col: string; bytes: string }[]
          ).map((r) => [r.col, Number(r.bytes)]),
        );
        const out: string[][] = [];
        for (const q of QUERIES) {
          const model = parseTrendRequest(q.request as unknown as Record<string, unknown>);
          const sql = printTrendSql(
            { projectId: PROJECT_ID, model, range: resolveDateRange(model, PROJECT, new Date(NOW)), project: PROJECT },
            { dialect: 'duckdb', files },
          );
          const answer = (await (await connection.runAndReadAll(sql)).getRowObjectsJson()) as Record<string, unknown>[];
          // Counts and sums scale with the copies; a distinct count does not.
          const math = (q.request.events[0] as { math?: string }).math ?? 'total';
          const scale = math === 'dau' ? 1 : copies;
          const mismatched = differences(
            duckCells(answer),
            engineCells(runColumnar(data, q.request, false).response, scale),
          );
          if (mismatched.length)
            errors.push(`(${q.id}) at ${size}: DuckDB and the columnar engine differ: ${mismatched.join('; ')}`);
          const times: number[] = [];
          let resultRows = 0;
          for (let i = 0; i < runs; i += 1) {
            const began = performance.now();
            resultRows = (await connection.runAndReadAll(sql)).currentRowCount;
            times.push(performance.now() - began);
          }
          const p50 = median(times);
          // The columns the printed SQL names (Athena scans those only; partition columns are free).
          const read = LAKE_COLUMNS.map((c) => c.name).filter((c) => sql.includes(`"${c}"`));
          const perEvent = read.reduce((n, c) => n + (columnBytes.get(c) ?? 0), 0) / count;
          out.push([
            q.id,
            q.title,
            fixed(p50),
            String(resultRows),
            fixed(perEvent, 2),
            mismatched.length ? 'NO' : 'yes',
          ]);
          // The issue's targets: each query's at 10M, the filtered breakdown's at 100M.
          const target = count === 10_000_000 ? q.target : count === 100_000_000 ? q.target100M : null;
          rows.push({
            benchmark: 'lake',
            metric: `(${q.id}) ${q.title} p50 at ${size}`,
            value: `${fixed(p50)} ms`,
            target: target === null ? '-' : `<= ${target} ms`,
            status: target === null ? 'info' : p50 <= target ? 'pass' : 'OVER TARGET',
          });
          rows.push({
            benchmark: 'lake',
            metric: `(${q.id}) compressed bytes/event of its columns (Athena scan) at ${size}`,
            value: fixed(perEvent, 2),
            target: '-',
            status: 'info',
          });
        }
        // (q) (a) as a HogQLQuery statement (shared/hogql/select.ts, printed by shared/lake/sql/select.ts): the same rows.
        const hogql = parseSelectStatement(
          `SELECT properties.$os AS os, toStartOfDay(timestamp) AS d, count() FROM events WHERE event = '$pageview' AND properties.$browser IN (${FILTER_BROWSERS.map((b) => `'${b}'`).join(', ')}) AND timestamp >= '2026-01-01' AND timestamp < '2026-01-31' GROUP BY os, d ORDER BY d, os LIMIT 50000`,
          'query',
        );
        const hogqlSql = printSelectSql(
          {
            projectId: PROJECT_ID,
            statement: hogql,
            timezone: 'UTC',
            weekStart: 0,
            days: { from: '2026-01-01', to: '2026-01-30' },
            limit: 50_001,
            offset: 0,
          },
          { dialect: 'duckdb', files },
        ).sql;
        await connection.runAndReadAll(hogqlSql);
        const hogqlTimes: number[] = [];
        let hogqlRows = 0;
        for (let i = 0; i < runs; i += 1) {
          const began = performance.now();
          hogqlRows = (await connection.runAndReadAll(hogqlSql)).currentRowCount;
          hogqlTimes.push(performance.now() - began);
        }
        const hogqlP50 = median(hogqlTimes);
        out.push(['q', 'HogQLQuery: (a) as SQL (GROUP BY os, day)', fixed(hogqlP50), String(hogqlRows), '-', '-']);
        rows.push({
          benchmark: 'lake',
          metric: `(q) HogQLQuery: (a) as SQL p50 at ${size}`,
          value: `${fixed(hogqlP50)} ms`,
          target: '-',
          status: 'info',
        });
        console.log(
          `\n${count.toLocaleString('en')} events (${copies} ${copies === 1 ? 'copy' : 'copies'} of the files):`,
        );
        console.log(table(['id', 'query', 'p50 ms', 'rows', 'bytes/event read', '= engine'], out));
      }
      connection.closeSync();
      return { rows, errors };
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
};
