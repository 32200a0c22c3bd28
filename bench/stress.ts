/**
 * `npm run stress`: 16 concurrent clients for 60 s of mixed traffic (capture, persons list, organization
 * retrieve, trend) against a fresh local stack in a child process. Fails (exit 1) on any 5xx or
 * transport error; prints p50/p99 per operation. Only ever targets 127.0.0.1; bounded in time.
 * Knobs: STRESS_SECONDS (60), STRESS_CLIENTS (16).
 */
import { randomUUID } from 'node:crypto';
import { startChildStack } from './lib/local-stack.ts';
import { fixed, heading, table } from './lib/format.ts';
import { percentile } from './lib/stats.ts';

const seconds = Number(process.env.STRESS_SECONDS || 60);
const clients = Number(process.env.STRESS_CLIENTS || 16);

interface Op {
  name: string;
  weight: number;
  request(i: number): { url: string; init: RequestInit };
}

async function main(): Promise<number> {
  heading(`stress: ${clients} clients, ${seconds} s of mixed traffic`);
  const stack = await startChildStack();
  try {
    const { info } = stack;
    const auth = { authorization: `Bearer ${info.personal_api_key}` };
    const json = { 'content-type': 'application/json' };
    const ops: Op[] = [
      {
        name: 'capture /batch (20 events)',
        weight: 4,
        request: (i) => ({
          url: `${info.base_url}/batch/`,
          init: {
            method: 'POST',
            headers: json,
            body: JSON.stringify({
              api_key: info.project_token,
              batch: Array.from({ length: 20 }, (_, j) => ({
                event: j % 3 ? '$pageview' : 'clicked',
                distinct_id: `u-${(i * 20 + j) % 500}`,
                uuid: randomUUID(),
                properties: { $browser: j % 2 ? 'Chrome' : 'Safari', $set: { plan: j % 4 ? 'free' : 'pro' } },
              })),
            }),
          },
        }),
      },
      {
        name: 'persons list',
        weight: 2,
        request: () => ({
          url: `${info.base_url}/api/environments/${info.project_id}/persons/?limit=50`,
          init: { headers: auth },
        }),
      },
      {
        name: 'organization retrieve',
        weight: 2,
        request: () => ({
          url: `${info.base_url}/api/organizations/${info.organization_id}/`,
          init: { headers: auth },
        }),
      },
      {
        name: 'trend (breakdown, refresh)',
        weight: 1,
        request: () => ({
          url: `${info.base_url}/api/environments/${info.project_id}/insights/trend/?refresh=true`,
          init: {
            method: 'POST',
            headers: { ...auth, ...json },
            body: JSON.stringify({
              events: [{ id: '$pageview', math: 'dau' }],
              breakdown: '$browser',
              date_from: '-7d',
            }),
          },
        }),
      },
      {
        name: 'trend (unfiltered, cached)',
        weight: 1,
        request: () => ({
          url: `${info.base_url}/api/environments/${info.project_id}/insights/trend/?events=${encodeURIComponent('[{"id":"$pageview"}]')}`,
          init: { headers: auth },
        }),
      },
    ];
    const wheel = ops.flatMap((op) => Array.from({ length: op.weight }, () => op));
    const latencies = new Map(ops.map((o) => [o.name, [] as number[]]));
    const statuses = new Map<string, number>();
    const failures: string[] = [];
    const deadline = Date.now() + seconds * 1000;
    let n = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (Date.now() < deadline) {
          const i = n++;
          const op = wheel[i % wheel.length]!;
          const { url, init } = op.request(i);
          const started = performance.now();
          try {
            const res = await fetch(url, init);
            await res.arrayBuffer();
            latencies.get(op.name)!.push(performance.now() - started);
            const key = `${op.name} ${res.status}`;
            statuses.set(key, (statuses.get(key) ?? 0) + 1);
            if (res.status >= 500) failures.push(`${op.name}: HTTP ${res.status}`);
          } catch (error) {
            failures.push(`${op.name}: ${(error as Error).message}`);
          }
        }
      }),
    );
    console.log(
      `\n${table(
        ['operation', 'requests', 'p50 ms', 'p99 ms', 'req/s'],
        ops.map((o) => {
          const l = latencies.get(o.name)!;
          return [
            o.name,
            String(l.length),
            fixed(percentile(l, 50)),
            fixed(percentile(l, 99)),
            fixed(l.length / seconds, 1),
          ];
        }),
      )}`,
    );
    console.log(`\nstatus counts: ${[...statuses].map(([k, v]) => `${k}: ${v}`).join('; ')}`);
    console.log(`5xx or transport failures: ${failures.length}${failures.length ? ` (first: ${failures[0]})` : ''}`);
    return failures.length ? 1 : 0;
  } finally {
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
