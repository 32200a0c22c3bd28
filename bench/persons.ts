/**
 * Persons list at scale: 100k persons in one project (seeded straight into the local stack's table
 * with BatchWriteItem: the list is what is measured, not ingestion), then p50/p99 of the first page,
 * the page at offset 50,000 (bare offset, and through the cursor a `next` link carries), and lookups
 * by e-mail and by distinct id.
 */
import { BatchWriteItemCommand, DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { keys } from '#shared/db/keys.ts';
import { personItems } from '#shared/db/persons.ts';
import { startChildStack, type ChildStack } from './lib/local-stack.ts';
import { fixed, heading, table } from './lib/format.ts';
import { percentile } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';

const intEnv = (name: string, fallback: number) => Number(process.env[name] || fallback);

async function seed(stack: ChildStack, count: number): Promise<void> {
  const client = new DynamoDBClient({
    endpoint: stack.info.dynamodb_endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const projectId = stack.info.project_id;
  const base = Date.parse('2024-01-01T00:00:00Z');
  const items = function* () {
    for (let i = 1; i <= count; i += 1) {
      yield* personItems({
        id: 1_000_000 + i,
        uuid: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
        project_id: projectId,
        properties: { email: `person${i}@example.com`, plan: i % 3 ? 'free' : 'pro', n: i },
        distinct_ids: [`seed-${i}`],
        created_at: new Date(base + i * 1000).toISOString(),
        is_identified: true,
        version: 1,
      });
    }
  };
  const batch: Record<string, unknown>[] = [];
  const inFlight = new Set<Promise<void>>();
  const write = async (chunk: Record<string, unknown>[]) => {
    let pending = chunk.map((Item) => ({ PutRequest: { Item: marshall(Item, { removeUndefinedValues: true }) } }));
    while (pending.length) {
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [stack.info.table_name]: pending } }));
      pending = (out.UnprocessedItems?.[stack.info.table_name] ?? []) as typeof pending;
    }
  };
  for (const item of items()) {
    batch.push(item);
    if (batch.length === 25) {
      const p = write(batch.splice(0)).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= 16) await Promise.race(inFlight);
    }
  }
  if (batch.length) await write(batch);
  await Promise.all(inFlight);
  await client.send(
    new UpdateItemCommand({
      TableName: stack.info.table_name,
      Key: marshall(keys.personCount(projectId)),
      UpdateExpression: 'ADD #c :n',
      ExpressionAttributeNames: { '#c': 'count' },
      ExpressionAttributeValues: marshall({ ':n': count }),
    }),
  );
  client.destroy();
}

async function measure(
  url: (i: number) => string,
  key: string,
  requests: number,
  concurrency: number,
  check: (body: any) => void,
) {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        const started = performance.now();
        const res = await fetch(url(i), { headers: { authorization: `Bearer ${key}` } });
        const body = await res.json();
        latencies.push(performance.now() - started);
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
        check(body);
      }
    }),
  );
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length };
}

export const personsBenchmark: Benchmark = {
  name: 'persons',
  title: 'Persons list and lookups with 100k persons in a project (local stack)',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const count = intEnv('BENCH_PERSONS', 100_000);
    const requests = intEnv('BENCH_PERSONS_REQUESTS', 200);
    const concurrency = intEnv('BENCH_PERSONS_CONCURRENCY', 4);
    const stack = await startChildStack();
    try {
      const seedStarted = performance.now();
      await seed(stack, count);
      console.log(
        `seeded ${count} persons in ${fixed((performance.now() - seedStarted) / 1000)} s; ${requests} requests per case at ${concurrency} concurrent clients`,
      );
      const base = `${stack.info.base_url}/api/environments/${stack.info.project_id}/persons/`;
      const key = stack.info.personal_api_key;
      const deep = Math.floor(count / 2);
      const first = await fetch(`${base}?limit=100&offset=${deep - 100}`, {
        headers: { authorization: `Bearer ${key}` },
      }).then((r) => r.json() as Promise<{ next: string }>);
      const cursorUrl = first.next;
      const expectPage = (offset: number) => (body: any) => {
        if (body.count !== count || body.results.length !== 100)
          throw new Error(`bad page at ${offset}: count ${body.count}, ${body.results.length} results`);
      };
      const cases = [
        {
          name: 'first page (limit 100)',
          run: () => measure(() => `${base}?limit=100`, key, requests, concurrency, expectPage(0)),
        },
        {
          name: `offset ${deep} (bare offset)`,
          run: () =>
            measure(
              () => `${base}?limit=100&offset=${deep}`,
              key,
              Math.max(20, requests / 10),
              concurrency,
              expectPage(deep),
            ),
        },
        {
          name: `offset ${deep} (cursor from next)`,
          run: () => measure(() => cursorUrl, key, requests, concurrency, expectPage(deep)),
        },
        {
          name: 'lookup by email',
          run: () =>
            measure(
              (i) => `${base}?email=person${(i * 7919) % count || 1}@example.com`,
              key,
              requests,
              concurrency,
              (b) => {
                if (b.count !== 1) throw new Error('email lookup missed');
              },
            ),
        },
        {
          name: 'lookup by distinct_id',
          run: () =>
            measure(
              (i) => `${base}?distinct_id=seed-${(i * 7919) % count || 1}`,
              key,
              requests,
              concurrency,
              (b) => {
                if (b.count !== 1) throw new Error('distinct_id lookup missed');
              },
            ),
        },
      ];
      const measured: { name: string; p50: number; p99: number; n: number }[] = [];
      for (const c of cases) measured.push({ name: c.name, ...(await c.run()) });
      console.log(
        `\n${table(
          ['case', 'requests', 'p50 ms', 'p99 ms'],
          measured.map((m) => [m.name, String(m.n), fixed(m.p50), fixed(m.p99)]),
        )}`,
      );
      const rows: SummaryRow[] = measured.map((m) => ({
        benchmark: 'persons',
        metric: `${m.name} p50 / p99`,
        value: `${fixed(m.p50)} / ${fixed(m.p99)} ms`,
        target: '-',
        status: 'info',
      }));
      return { rows, errors: [] };
    } finally {
      await stack.stop();
    }
  },
};
