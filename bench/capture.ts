/**
 * Capture throughput (events/s through POST /batch with 500-event payloads, N concurrent clients)
 * beside raw BatchWriteItem of the same items into the same DynamoDB Local in the same run, then
 * ingestion lag: time from capture's 200 to the event being counted by the stream worker.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { eventItem } from '#shared/db/events.ts';
import { keys } from '#shared/db/keys.ts';
import { toStoredEvent } from '#shared/domain/capture.ts';
import { startChildStack, type ChildStack } from './lib/local-stack.ts';
import { fixed, heading, table } from './lib/format.ts';
import { percentile } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';

const BATCH_SIZE = 500;
const intEnv = (name: string, fallback: number) => Number(process.env[name] || fallback);

function payload(batchIndex: number) {
  const now = Date.now();
  return Array.from({ length: BATCH_SIZE }, (_, i) => ({
    event: i % 5 === 0 ? 'signed up' : '$pageview',
    distinct_id: `user-${(batchIndex * 7 + i) % 200}`,
    uuid: randomUUID(),
    timestamp: new Date(now - i * 1000).toISOString(),
    properties: {
      $current_url: `https://example.com/page/${i % 40}`,
      $browser: i % 2 ? 'Chrome' : 'Firefox',
      amount: i % 13,
      $session_id: `s-${i % 50}`,
    },
  }));
}

async function inLanes(count: number, lanes: number, fn: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) await fn(next++);
    }),
  );
  return performance.now() - started;
}

async function captureThroughput(stack: ChildStack, batches: number, concurrency: number, errors: string[]) {
  const bodies = Array.from({ length: batches }, (_, i) =>
    JSON.stringify({ api_key: stack.info.project_token, batch: payload(i), sent_at: new Date().toISOString() }),
  );
  let accepted = 0;
  const ms = await inLanes(batches, concurrency, async (i) => {
    const res = await fetch(`${stack.info.base_url}/batch/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bodies[i],
    });
    const body = (await res.json()) as { accepted?: number };
    if (res.status !== 200) errors.push(`capture batch ${i}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    accepted += body.accepted ?? 0;
  });
  return { ms, events: accepted };
}

/** The baseline: the same items, written with plain BatchWriteItem calls (25 items each), same client concurrency. */
async function rawBatchWrite(stack: ChildStack, batches: number, concurrency: number) {
  const client = new DynamoDBClient({
    endpoint: stack.info.dynamodb_endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const insertedAt = new Date().toISOString();
  // A project id no organization has, so the baseline's items do not mix with the captured ones.
  const projectId = 987_654_321;
  // Same items, but under a key prefix the stream worker ignores: the baseline measures writing alone.
  const requests = Array.from({ length: batches }, (_, b) =>
    payload(b).map((e) => {
      const item = eventItem(toStoredEvent(e, projectId, insertedAt));
      return marshall({ ...item, pk: `BENCHRAW#${String(item.pk)}` }, { removeUndefinedValues: true });
    }),
  );
  const ms = await inLanes(batches, concurrency, async (b) => {
    const items = requests[b]!;
    const chunks = Array.from({ length: Math.ceil(items.length / 25) }, (_, c) => items.slice(c * 25, c * 25 + 25));
    // Same fan-out as capture's storage step: up to 8 BatchWriteItem calls in flight per payload.
    await inLanes(chunks.length, 8, async (c) => {
      let pending = chunks[c]!.map((Item) => ({ PutRequest: { Item } }));
      while (pending.length) {
        const out = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [stack.info.table_name]: pending } }),
        );
        pending = (out.UnprocessedItems?.[stack.info.table_name] ?? []) as typeof pending;
      }
    });
  });
  client.destroy();
  return { ms, events: batches * BATCH_SIZE };
}

/** Capture one event at a time and wait for its count marker: the worker has then done persons and rollups. */
async function ingestionLag(stack: ChildStack, samples: number, timeoutMs = 30_000): Promise<number[]> {
  const client = new DynamoDBClient({
    endpoint: stack.info.dynamodb_endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const lags: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    const uuid = randomUUID();
    const res = await fetch(`${stack.info.base_url}/capture/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        api_key: stack.info.project_token,
        event: 'lag probe',
        distinct_id: `probe-${i % 10}`,
        uuid,
        properties: { $set: { probe: i } },
      }),
    });
    await res.arrayBuffer();
    const acknowledged = performance.now();
    const Key = marshall(keys.eventCounted(stack.info.project_id, uuid));
    for (;;) {
      const out = await client.send(new GetItemCommand({ TableName: stack.info.table_name, Key }));
      if (out.Item) break;
      if (performance.now() - acknowledged > timeoutMs)
        throw new Error(`event ${uuid} not ingested within ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 5));
    }
    lags.push(performance.now() - acknowledged);
  }
  client.destroy();
  return lags;
}

export const captureBenchmark: Benchmark = {
  name: 'capture',
  title: 'Capture throughput vs raw BatchWriteItem, and ingestion lag (local stack)',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const batches = intEnv('BENCH_CAPTURE_BATCHES', 40);
    const concurrency = intEnv('BENCH_CAPTURE_CONCURRENCY', 8);
    const samples = intEnv('BENCH_LAG_SAMPLES', 50);
    const errors: string[] = [];
    const stack = await startChildStack();
    try {
      console.log(
        `local stack up in ${fixed(stack.startupMs / 1000)} s; ${batches} payloads x ${BATCH_SIZE} events, ${concurrency} concurrent clients`,
      );
      await captureThroughput(stack, 2, concurrency, errors); // warm-up: module load, connections
      const raw = await rawBatchWrite(stack, batches, concurrency);
      const captured = await captureThroughput(stack, batches, concurrency, errors);
      const rawRate = (raw.events / raw.ms) * 1000;
      const captureRate = (captured.events / captured.ms) * 1000;
      const ratio = captureRate / rawRate;
      console.log(
        `\n${table(
          ['path', 'events', 'seconds', 'events/s'],
          [
            ['raw BatchWriteItem', String(raw.events), fixed(raw.ms / 1000, 2), fixed(rawRate, 0)],
            ['POST /batch (capture)', String(captured.events), fixed(captured.ms / 1000, 2), fixed(captureRate, 0)],
          ],
        )}\nratio capture / raw: ${fixed(ratio, 2)} (target >= 0.5)`,
      );
      // The worker ingests behind capture: time until the whole backlog is counted (one probe queued behind it).
      const [drainMs] = await ingestionLag(stack, 1, 900_000);
      const backlogDone = captured.ms + drainMs!;
      const workerRate = (captured.events / backlogDone) * 1000;
      console.log(
        `stream worker: ${captured.events} events counted ${fixed(backlogDone / 1000, 1)} s after the first capture (${fixed(workerRate, 0)} events/s)`,
      );
      const lags = await ingestionLag(stack, samples);
      const p50 = percentile(lags, 50);
      const p95 = percentile(lags, 95);
      console.log(
        `ingestion lag over ${samples} single events on an idle stack: p50 ${fixed(p50)} ms, p95 ${fixed(p95)} ms (target p95 <= 2000 ms)`,
      );
      const rows: SummaryRow[] = [
        {
          benchmark: 'capture',
          metric: 'raw BatchWriteItem',
          value: `${fixed(rawRate, 0)} events/s`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'capture',
          metric: `POST /batch x${BATCH_SIZE} @${concurrency}`,
          value: `${fixed(captureRate, 0)} events/s`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'capture',
          metric: 'capture / raw',
          value: fixed(ratio, 2),
          target: '>= 0.5',
          status: ratio >= 0.5 ? 'pass' : 'OVER TARGET',
        },
        {
          benchmark: 'capture',
          metric: 'stream worker (persons + rollups)',
          value: `${fixed(workerRate, 0)} events/s`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'capture',
          metric: 'ingestion lag p50 / p95',
          value: `${fixed(p50)} / ${fixed(p95)} ms`,
          target: 'p95 <= 2000 ms',
          status: p95 <= 2000 ? 'pass' : 'OVER TARGET',
        },
      ];
      return { rows, errors };
    } finally {
      await stack.stop();
    }
  },
};
