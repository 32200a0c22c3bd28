/**
 * `npm run bench -- lake`: the Parquet lake on this machine. Synthetic events (the trends benchmark's
 * generator: 30 days, 2,000 distinct ids, its property mix) are written day by day with the
 * compactor's writer (shared/lake/rows.ts, one file per (project, day) under the lake layout), then
 * DuckDB answers trends printed by shared/lake/sql/trends.ts over those files:
 *   (a) filtered + breakdown: $pageview, $browser in (Chrome, Firefox, Safari), breakdown $os, by day, 30 days;
 *   (b) dau of $pageview by day, 30 days.
 * BENCH_LAKE_EVENTS (default 10,000,000), BENCH_LAKE_RUNS (default 5, after one warm-up).
 * Also: the write rate (events/s, encoding + writing the files; generation not counted) and, for
 * Athena's cost model, the compressed bytes per event of the columns each query reads.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dataKey } from '#shared/lake/layout.ts';
import { type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';
import { printTrendSql } from '#shared/lake/sql/trends.ts';
import { parseTrendRequest, type ProjectSettings, resolveDateRange } from '#shared/trends/index.ts';
import { fixed, heading, table } from './lib/format.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';
import { DISTINCT_IDS, duckdb, EVENT_MIX, FILTER_BROWSERS, prng, syntheticProperties, weighted } from './trends.ts';

const DAY = 86_400_000;
const DAYS = 30;
const NOW = Date.parse('2026-01-31T12:00:00Z');
const PROJECT_ID = 1;
const PROJECT: ProjectSettings = { timezone: 'UTC', week_start_day: 0, test_account_filters: [] };

/** Issue 25's targets at 10M events. */
const TARGET_BREAKDOWN_MS = 250;
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
    columns: ['event', 'timestamp', 'browser', 'os'],
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ key: '$browser', operator: 'exact', value: FILTER_BROWSERS }],
      breakdown: '$os',
      date_from: '2026-01-01',
      date_to: '2026-01-30T23:59:59',
      breakdown_limit: 25,
    },
    target: TARGET_BREAKDOWN_MS,
  },
  {
    id: 'b',
    title: 'dau ($pageview, day)',
    columns: ['event', 'timestamp', 'person_id', 'distinct_id'],
    request: {
      events: [{ id: '$pageview', math: 'dau' }],
      date_from: '2026-01-01',
      date_to: '2026-01-30T23:59:59',
    },
    target: TARGET_DAU_MS,
  },
] as const;

/** Day by day (no 10M objects at once): generate, then encode and write the day's files (timed). */
function writeLake(root: string, count: number): { files: string[]; writeMs: number; cpuMs: number; bytes: number } {
  const rng = prng(25);
  const start = NOW - DAYS * DAY - 12 * 3_600_000;
  const perDay = Math.ceil(count / DAYS);
  const files: string[] = [];
  let writeMs = 0;
  // CPU time (user + system) of this process: what a Lambda is billed for, and what other load on the machine disturbs least.
  let cpuMs = 0;
  let bytes = 0;
  for (let d = 0, written = 0; d < DAYS && written < count; d += 1) {
    const n = Math.min(perDay, count - written);
    const dayStart = start + d * DAY;
    const events: LakeEvent[] = new Array(n);
    for (let i = 0; i < n; i += 1) {
      const user = Math.floor(rng() * DISTINCT_IDS);
      const t = dayStart + Math.floor((i / n) * DAY);
      events[i] = {
        uuid: `0190f000-0000-7000-8000-${String(written + i).padStart(12, '0')}`,
        event: weighted(rng, EVENT_MIX),
        timestamp: new Date(t).toISOString(),
        distinct_id: `user-${user}`,
        // Half the distinct ids share a person with another one (identified users).
        person_id: user % 2 ? `0190f000-0000-7000-9000-${String(user >> 1).padStart(12, '0')}` : null,
        properties: syntheticProperties(rng, user, t),
      };
    }
    const day = new Date(dayStart).toISOString().slice(0, 10);
    const began = performance.now();
    const cpuBegan = process.cpuUsage();
    lakeFiles(events).forEach((body, i) => {
      const path = join(root, dataKey(PROJECT_ID, day, 'bench', i));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      files.push(path);
      bytes += body.byteLength;
    });
    writeMs += performance.now() - began;
    const cpu = process.cpuUsage(cpuBegan);
    cpuMs += (cpu.user + cpu.system) / 1000;
    written += n;
  }
  return { files, writeMs, cpuMs, bytes };
}

export const lakeBenchmark: Benchmark = {
  name: 'lake',
  title: 'Parquet lake: write rate, DuckDB trends over the files (filtered breakdown, dau), bytes per event',
  async run(): Promise<BenchResult> {
    const count = intEnv('BENCH_LAKE_EVENTS', 10_000_000);
    const runs = intEnv('BENCH_LAKE_RUNS', 5);
    const rows: SummaryRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'bench-lake-'));
    try {
      heading(`lake: ${count.toLocaleString('en')} events over ${DAYS} days`);
      const { files, writeMs, cpuMs, bytes } = writeLake(root, count);
      const rate = count / (writeMs / 1000);
      const cpuRate = count / (cpuMs / 1000);
      console.log(
        `wrote ${files.length} files, ${fixed(bytes / 2 ** 20)} MB (${fixed(bytes / count, 2)} bytes/event) in ${fixed(writeMs / 1000, 2)} s: ${Math.round(rate).toLocaleString('en')} events/s (one thread), ${Math.round(cpuRate).toLocaleString('en')} events per CPU-second`,
      );
      rows.push({
        benchmark: 'lake',
        metric: `write rate per CPU-second (${count.toLocaleString('en')} events)`,
        value: `${Math.round(cpuRate).toLocaleString('en')} ev/CPU-s`,
        target: `>= ${TARGET_WRITE_PER_S.toLocaleString('en')}`,
        status: cpuRate >= TARGET_WRITE_PER_S ? 'pass' : 'OVER TARGET',
      });
      rows.push({
        benchmark: 'lake',
        metric: `write rate (${count.toLocaleString('en')} events)`,
        value: `${Math.round(rate).toLocaleString('en')} ev/s`,
        target: `>= ${TARGET_WRITE_PER_S.toLocaleString('en')}`,
        status: rate >= TARGET_WRITE_PER_S ? 'pass' : 'OVER TARGET',
      });

      const { DuckDBInstance } = await duckdb();
      const connection = await (await DuckDBInstance.create(':memory:')).connect();
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
        await connection.runAndReadAll(sql);
        const times: number[] = [];
        let resultRows = 0;
        for (let i = 0; i < runs; i += 1) {
          const began = performance.now();
          resultRows = (await connection.runAndReadAll(sql)).currentRowCount;
          times.push(performance.now() - began);
        }
        const p50 = median(times);
        const perEvent = q.columns.reduce((n, c) => n + (columnBytes.get(c) ?? 0), 0) / count;
        out.push([q.id, q.title, fixed(p50), String(resultRows), fixed(perEvent, 2)]);
        rows.push({
          benchmark: 'lake',
          metric: `(${q.id}) ${q.title} p50`,
          value: `${fixed(p50)} ms`,
          target: `<= ${q.target} ms at 10M`,
          status: count > 10_000_000 ? 'info' : p50 <= q.target ? 'pass' : 'OVER TARGET',
        });
        rows.push({
          benchmark: 'lake',
          metric: `(${q.id}) compressed bytes/event of its columns (Athena scan)`,
          value: fixed(perEvent, 2),
          target: '-',
          status: 'info',
        });
      }
      console.log(table(['id', 'query', 'p50 ms', 'rows', 'bytes/event read'], out));
      connection.closeSync();
      return { rows, errors: [] };
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
};
