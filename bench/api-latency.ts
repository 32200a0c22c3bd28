/**
 * Request latency under concurrency: organization retrieve and list against the local stack
 * (`npm start` as a child process on a fresh temp DATA_DIR), N concurrent keep-alive clients.
 */
import { startChildStack, type ChildStack } from './lib/local-stack.ts';
import { describeFailures, runLoad, type LoadRequest, type LoadResult } from './lib/load.ts';
import { fixed, heading, table } from './lib/format.ts';
import { settings } from './lib/env.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';

interface Operation {
  name: string;
  request(stack: ChildStack): LoadRequest;
}

const operations: Operation[] = [
  {
    name: 'organizations_retrieve',
    request: ({ info }) => ({
      url: `${info.base_url}/api/organizations/${info.organization_id}/`,
      headers: { authorization: `Bearer ${info.personal_api_key}` },
    }),
  },
  {
    name: 'organizations_list',
    request: ({ info }) => ({
      url: `${info.base_url}/api/organizations/`,
      headers: { authorization: `Bearer ${info.personal_api_key}` },
    }),
  },
];

export const apiLatencyBenchmark: Benchmark = {
  name: 'api',
  title: 'API latency under concurrency (local stack)',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const concurrency = settings.concurrency();
    const requests = settings.requests();
    const warmup = settings.warmupRequests();
    const errors: string[] = [];
    const results: { op: Operation; result: LoadResult }[] = [];

    const stack = await startChildStack();
    try {
      console.log(
        `local stack up in ${fixed(stack.startupMs / 1000)} s at ${stack.info.base_url} (DATA_DIR ${stack.dataDir})`,
      );
      console.log(
        `per operation: ${warmup} warm-up + ${requests} measured requests, ${concurrency} concurrent clients, expect 200`,
      );
      for (const op of operations) {
        const req = op.request(stack);
        const warm = await runLoad(() => req, { requests: warmup, concurrency });
        if (warm.failures.size) {
          errors.push(`${op.name} warm-up: ${describeFailures(warm)}; first: ${warm.firstFailure}`);
        }
        const result = await runLoad(() => req, { requests, concurrency });
        if (result.failures.size) {
          errors.push(`${op.name}: ${describeFailures(result)} of ${requests}; first: ${result.firstFailure}`);
        }
        results.push({ op, result });
      }
    } finally {
      await stack.stop();
    }

    console.log(
      `\n${table(
        ['operation', 'requests', 'non-200', 'p50 ms', 'p99 ms', 'max ms', 'req/s'],
        results.map(({ op, result }) => [
          op.name,
          String(result.latencies.length),
          String(result.latencies.length - result.ok),
          fixed(result.p50),
          fixed(result.p99),
          fixed(Math.max(...result.latencies)),
          fixed(result.throughput, 0),
        ]),
      )}`,
    );
    for (const e of errors) console.log(`  ! ${e}`);

    const rows: SummaryRow[] = results.flatMap(({ op, result }): SummaryRow[] => {
      const status = result.failures.size ? 'ERROR' : 'info';
      const label = `${op.name} @${concurrency}`;
      return [
        {
          benchmark: 'api',
          metric: `${label} p50 / p99`,
          value: `${fixed(result.p50)} / ${fixed(result.p99)} ms`,
          target: '-',
          status,
        },
        {
          benchmark: 'api',
          metric: `${label} throughput`,
          value: `${fixed(result.throughput, 0)} req/s`,
          target: '-',
          status,
        },
        {
          benchmark: 'api',
          metric: `${label} non-200`,
          value: `${result.latencies.length - result.ok} / ${result.latencies.length}`,
          target: '0',
          status: result.failures.size ? 'ERROR' : 'pass',
        },
      ];
    });
    return { rows, errors };
  },
};
