/**
 * Closed-loop HTTP load: `concurrency` workers share a fixed request budget; each sends its next
 * request as soon as the previous response body has been read. Global fetch (undici's default
 * agent keeps connections alive, so each worker reuses one socket).
 */
import { percentile } from './stats.ts';

export interface LoadRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadResult {
  requests: number;
  concurrency: number;
  /** Per-request latency (ms) of every completed request, including non-200 ones. */
  latencies: number[];
  wallMs: number;
  ok: number;
  /** Status code (or 'network') -> count, for everything that was not the expected status. */
  failures: Map<string, number>;
  firstFailure?: string;
  p50: number;
  p99: number;
  throughput: number;
}

const REQUEST_TIMEOUT_MS = 15_000;

export async function runLoad(
  make: (i: number) => LoadRequest,
  options: { requests: number; concurrency: number; expectStatus?: number },
): Promise<LoadResult> {
  const expect = options.expectStatus ?? 200;
  const latencies: number[] = [];
  const failures = new Map<string, number>();
  let firstFailure: string | undefined;
  let ok = 0;
  let next = 0;
  const fail = (key: string, detail: string) => {
    failures.set(key, (failures.get(key) ?? 0) + 1);
    firstFailure ??= detail;
  };

  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= options.requests) return;
      const req = make(i);
      const t0 = performance.now();
      try {
        const res = await fetch(req.url, {
          method: req.method ?? 'GET',
          headers: req.headers,
          body: req.body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.text();
        latencies.push(performance.now() - t0);
        if (res.status === expect) ok++;
        else fail(String(res.status), `${req.method ?? 'GET'} ${req.url} -> ${res.status} ${text.slice(0, 300)}`);
      } catch (error) {
        latencies.push(performance.now() - t0);
        fail(
          'network',
          `${req.method ?? 'GET'} ${req.url} -> ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  };

  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const wallMs = performance.now() - started;
  return {
    requests: options.requests,
    concurrency: options.concurrency,
    latencies,
    wallMs,
    ok,
    failures,
    firstFailure,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    throughput: (latencies.length / wallMs) * 1000,
  };
}

export function describeFailures(result: LoadResult): string {
  return [...result.failures].map(([k, n]) => `${n}× ${k}`).join(', ');
}
