/**
 * What the DuckDB sandbox costs a lake query (shared/lake/engine.ts): the same statements over the
 * same Parquet files, (a) on a connection of one unsandboxed instance (the engine before the
 * sandbox), (b) through the engine, whose sandbox for the project is already open, and (c) on a
 * sandbox opened for the query and closed after it (the per-query alternative). Rounds alternate
 * the order so machine load weighs on all three alike.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { duckdbEngine, openDuckdbSandbox } from '#shared/lake/engine.ts';
import { dataKey } from '#shared/lake/layout.ts';
import { type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';
import { fixed, heading, table } from './lib/format.ts';
import type { Benchmark, BenchResult } from './lib/types.ts';

const PROJECT = 7;
const EVENTS_PER_DAY = 100_000;
const DAYS = 3;
const RUNS = 40;

function writeLake(root: string): string[] {
  const names = ['$pageview', '$autocapture', 'signed up', 'purchase'];
  const browsers = ['Chrome', 'Safari', 'Firefox', 'Edge'];
  return Array.from({ length: DAYS }, (_, d) => {
    const day = `2024-03-0${d + 1}`;
    const events: LakeEvent[] = Array.from({ length: EVENTS_PER_DAY }, (_, i) => ({
      uuid: `0190f100-0000-7000-8000-${String(d * EVENTS_PER_DAY + i).padStart(12, '0')}`,
      event: names[i % names.length]!,
      timestamp: new Date(Date.parse(`${day}T00:00:00Z`) + Math.floor((i * 86_400_000) / EVENTS_PER_DAY)).toISOString(),
      distinct_id: `u${i % 2_000}`,
      person_id: null,
      properties: { $browser: browsers[i % browsers.length], amount: i % 100 },
    }));
    const path = join(root, dataKey(PROJECT, day, 'bench', 0));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, lakeFiles(events)[0]!);
    return path;
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

export const sandboxBenchmark: Benchmark = {
  name: 'sandbox',
  title: 'DuckDB sandbox per project: a lake query unsandboxed, on an open sandbox, on a sandbox per query',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const root = mkdtempSync(join(tmpdir(), 'bench-sandbox-'));
    const errors: string[] = [];
    try {
      const files = writeLake(root);
      const list = files.map((f) => `'${f}'`).join(', ');
      const queries = {
        'SELECT 1': 'SELECT 1 AS one',
        'trend (300k events)': `SELECT "event", date_trunc('day', "timestamp") AS d, count(*) AS n, count(DISTINCT "distinct_id") AS u FROM read_parquet([${list}]) WHERE "project_id" = ${PROJECT} AND "browser" IN ('Chrome', 'Safari') GROUP BY 1, 2 ORDER BY 1, 2`,
      };
      const { DuckDBInstance } = await import('@duckdb/node-api');
      const open = await DuckDBInstance.create(':memory:', {
        autoinstall_known_extensions: 'false',
        autoload_known_extensions: 'false',
      });
      const engine = duckdbEngine(root);
      const ways = {
        unsandboxed: async (sql: string) => {
          const connection = await open.connect();
          try {
            return (await connection.runAndReadAll(sql)).getRowObjectsJson().length;
          } finally {
            connection.closeSync();
          }
        },
        'open sandbox (the engine)': async (sql: string) =>
          (await engine.run(PROJECT, sql, () => {}, Date.now() + 60_000)).length,
        'sandbox per query': async (sql: string) => {
          const sandbox = await openDuckdbSandbox(root, PROJECT);
          const connection = await sandbox.connect();
          try {
            return (await (await connection.prepare(sql)).runAndReadAll()).getRowObjectsJson().length;
          } finally {
            connection.closeSync();
            sandbox.closeSync();
          }
        },
      };
      const rows: string[][] = [];
      for (const [label, sql] of Object.entries(queries)) {
        const ms = Object.fromEntries(Object.keys(ways).map((w) => [w, [] as number[]]));
        const counts = new Set<number>();
        for (const run of Object.values(ways)) counts.add(await run(sql)); // warm-up
        for (let round = 0; round < RUNS; round++) {
          const order = Object.entries(ways);
          if (round % 2) order.reverse();
          for (const [way, run] of order) {
            const started = performance.now();
            counts.add(await run(sql));
            ms[way]!.push(performance.now() - started);
          }
        }
        if (counts.size !== 1) errors.push(`${label}: the three ways gave different row counts (${[...counts]})`);
        rows.push([label, ...Object.keys(ways).map((w) => fixed(median(ms[w]!), 2))]);
      }
      open.closeSync();
      table([`query (median ms of ${RUNS})`, ...Object.keys(ways)], rows);
      return {
        rows: rows.flatMap(([label, ...values]) =>
          Object.keys(ways).map((way, i) => ({
            benchmark: 'sandbox',
            metric: `${label}, ${way} (median ms)`,
            value: values[i]!,
            target: '-',
            status: 'info' as const,
          })),
        ),
        errors,
      };
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
};
