/**
 * `npm run bench [-- <name> ...]`: runs the benchmarks in order (all by default) and prints a
 * summary. Exits 1 only when a benchmark errored (build failure, crash, non-200 responses);
 * a missed target is reported, not fatal.
 *
 * Adding a benchmark: write bench/<name>.ts exporting a `Benchmark`, append it to `benchmarks`.
 */
import { cpus, loadavg } from 'node:os';
import { apiLatencyBenchmark } from './api-latency.ts';
import { bundlesBenchmark } from './bundles.ts';
import { captureBenchmark } from './capture.ts';
import { personsBenchmark } from './persons.ts';
import { trendsBenchmark } from './trends.ts';
import { exportsBenchmark } from './exports.ts';
import { hostileBenchmark } from './hostile.ts';
import { engineBenchmark } from './engine.ts';
import { lakeBenchmark } from './lake.ts';
import { parquetBenchmark } from './parquet.ts';
import { consoleBenchmark } from './console.ts';
import { cohortCountBenchmark } from './cohort-count.ts';
import { sandboxBenchmark } from './sandbox.ts';
import { heading, table } from './lib/format.ts';
import type { Benchmark, SummaryRow } from './lib/types.ts';
import { preloadLibraries } from '#shared/preload.ts';

const benchmarks: Benchmark[] = [
  bundlesBenchmark,
  apiLatencyBenchmark,
  captureBenchmark,
  personsBenchmark,
  trendsBenchmark,
  exportsBenchmark,
  hostileBenchmark,
  engineBenchmark,
  lakeBenchmark,
  parquetBenchmark,
  consoleBenchmark,
  cohortCountBenchmark,
  sandboxBenchmark,
];

function usage(): string {
  return [
    'usage: npm run bench [-- <benchmark> ...]',
    '',
    'benchmarks (default: all, in this order):',
    ...benchmarks.map((b) => `  ${b.name.padEnd(10)} ${b.title}`),
    '',
    'environment: BENCH_IMPORT_RUNS (5), BENCH_CONCURRENCY (16), BENCH_WARMUP (200), BENCH_REQUESTS (2000)',
  ].join('\n');
}

/** Figures are only comparable on an otherwise idle machine: say so when it is not. */
function warnIfBusy(when: string): void {
  const [one = 0] = loadavg();
  const busy = one > 0.5 * cpus().length;
  console.log(
    `load average (1 min) ${when}: ${one.toFixed(2)}${busy ? '  ! the machine is busy: figures will be pessimistic' : ''}`,
  );
}

function select(args: string[]): Benchmark[] | undefined {
  const names = args.filter((a) => a !== '--');
  if (names.some((a) => a === '-h' || a === '--help' || a === 'help')) return undefined;
  if (!names.length) return benchmarks;
  const unknown = names.filter((n) => !benchmarks.some((b) => b.name === n));
  if (unknown.length) throw new Error(`unknown benchmark(s): ${unknown.join(', ')}\n\n${usage()}`);
  return benchmarks.filter((b) => names.includes(b.name));
}

async function main(): Promise<number> {
  const selected = select(process.argv.slice(2));
  if (!selected) {
    console.log(usage());
    return 0;
  }
  console.log(`analytics-service benchmarks: ${selected.map((b) => b.name).join(', ')}`);
  console.log(
    `machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown cpu'}), node ${process.version}, ${process.platform}-${process.arch}`,
  );
  console.log(`started ${new Date().toISOString()}`);
  warnIfBusy('at start');
  // What the HTTP and worker pipelines do before a handler runs (shared/preload.ts): benches call the code directly.
  await preloadLibraries();

  const rows: SummaryRow[] = [];
  const errors: string[] = [];
  for (const bench of selected) {
    const started = performance.now();
    if (bench !== selected[0]) warnIfBusy(`before ${bench.name}`);
    try {
      const result = await bench.run();
      rows.push(...result.rows);
      errors.push(...result.errors.map((e) => `${bench.name}: ${e}`));
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      errors.push(`${bench.name}: ${message}`);
      rows.push({ benchmark: bench.name, metric: '(benchmark failed)', value: '-', target: '-', status: 'ERROR' });
    }
    console.log(`(${bench.name} took ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }

  heading('Summary');
  console.log(
    table(
      ['benchmark', 'metric', 'measured', 'target', 'status'],
      rows.map((r) => [r.benchmark, r.metric, r.value, r.target, r.status]),
      ['l', 'l', 'r', 'r', 'l'],
    ),
  );
  const over = rows.filter((r) => r.status === 'OVER TARGET');
  console.log(
    `\n${over.length ? `${over.length} figure(s) over target (reported, not fatal)` : 'all targeted figures within target'}`,
  );
  if (errors.length) {
    console.error(`\n${errors.length} error(s):`);
    for (const e of errors) console.error(`  - ${e}`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
