/** Knobs for bench runs, overridable through the environment (defaults are the documented settings). */

function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

export const settings = {
  /** Cold imports per bundle (fresh node process each); the median is reported. */
  importRuns: () => intFromEnv('BENCH_IMPORT_RUNS', 5),
  /** Concurrent clients for the API latency benchmark. */
  concurrency: () => intFromEnv('BENCH_CONCURRENCY', 16),
  /** Warm-up requests per operation (not measured). */
  warmupRequests: () => intFromEnv('BENCH_WARMUP', 200),
  /** Measured requests per operation. */
  requests: () => intFromEnv('BENCH_REQUESTS', 2000),
};
