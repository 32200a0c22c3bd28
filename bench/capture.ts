/**
 * Capture throughput (events/s through POST /batch with 500-event payloads, N concurrent clients)
 * beside raw BatchWriteItem of the same items into the same DynamoDB Local in the same run, then
 * ingestion lag: time from capture's 200 to the event being counted by the stream worker; then large
 * uuid-less batches (2k, 20k, 60k events = 20 MB): answer time, and time until every event is counted.
 * Knobs: BENCH_CAPTURE_BATCHES (40; 0 skips throughput and lag), BENCH_CAPTURE_LARGE (sizes,
 * "2000,20000,60000"; empty skips them), BENCH_CAPTURE_LARGE_RUNS (3 sends of each),
 * BENCH_CAPTURE_COUNT_TIMEOUT_S (1800: how long the first send of each is waited for until counted).
 * Then write amplification (bench/capture-units.ts): DynamoDB units, SQS messages and S3 requests per
 * event of six shapes (the issue's four, a new person, a project with a cohort), end to end, in dollars per
 * million events; BENCH_UNITS_EVENTS (1000 per shape; 0 skips).
 */
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { eventItem } from '#shared/db/events.ts';
import { keys } from '#shared/db/keys.ts';
import { toStoredEvent } from '#shared/domain/capture.ts';
import { writeUnitRows } from './capture-units.ts';
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

/** A uuid-less batch of `count` events (~330 bytes each: 60,000 make a 19.7 MB body, under the 20 MiB cap), all in one UTC hour. */
function largeBody(token: string, count: number, name: string): string {
  return JSON.stringify({
    api_key: token,
    batch: Array.from({ length: count }, (_, i) => ({
      event: name,
      distinct_id: `large-${i % 200}`,
      timestamp: new Date(Date.UTC(2024, 4, 1, 10, 0, 0, i)).toISOString(),
      properties: {
        $current_url: `https://example.com/products/${i % 400}/details?ref=newsletter`,
        $browser: i % 2 ? 'Chrome' : 'Firefox',
        $os: i % 3 ? 'Mac OS X' : 'Windows',
        $session_id: `0190a1b2-c3d4-7e5f-8a9b-${String(i % 997).padStart(12, '0')}`,
        amount: i % 13,
        plan: i % 4 ? 'free' : 'paid',
        $lib: 'posthog-node',
      },
    })),
  });
}

/** The event's count in its hour, read from its rollup item (what an unfiltered trend sums). */
async function countedEvents(client: DynamoDBClient, stack: ChildStack, name: string): Promise<number> {
  const out = await client.send(
    new GetItemCommand({
      TableName: stack.info.table_name,
      Key: marshall(keys.rollup(stack.info.project_id, name, '2024-05-01T10')),
    }),
  );
  return Number(out.Item?.count?.N ?? 0);
}

/** The event's items in the table (its eventsByDay entries, every shard): what the worker has stored. */
async function storedEvents(client: DynamoDBClient, stack: ChildStack, name: string): Promise<number> {
  let total = 0;
  for (let shard = 0; shard < TABLE_SCHEMA.eventDayShards; shard += 1) {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out = await client.send(
        new QueryCommand({
          TableName: stack.info.table_name,
          IndexName: TABLE_SCHEMA.indexes.eventsByDay.name,
          KeyConditionExpression: 'day_pk = :p AND begins_with(day_sk, :s)',
          ExpressionAttributeValues: marshall({
            ':p': keys.eventsByDay(stack.info.project_id, '2024-05-01', shard).day_pk,
            ':s': keys.eventsByDayPrefix(name),
          }),
          Select: 'COUNT',
          ExclusiveStartKey: start,
        }),
      );
      total += out.Count ?? 0;
      start = out.LastEvaluatedKey;
    } while (start);
  }
  return total;
}

/**
 * Polls until the table holds every event (stored) and the rollups count every event (counted), or
 * `timeoutMs` passes: then the counted time is missing and `counted` says how far the ingest got.
 */
async function untilStoredAndCounted(
  client: DynamoDBClient,
  stack: ChildStack,
  name: string,
  count: number,
  sent: number,
  timeoutMs: number,
): Promise<{ storedMs?: number; countedMs?: number; counted: number }> {
  let storedMs: number | undefined;
  let counted = 0;
  for (;;) {
    if (storedMs === undefined) {
      const stored = await storedEvents(client, stack, name);
      if (stored > count) throw new Error(`${name}: ${stored} stored, ${count} sent`);
      if (stored === count) storedMs = performance.now() - sent;
    }
    counted = await countedEvents(client, stack, name);
    if (counted > count) throw new Error(`${name}: ${counted} counted, ${count} sent`);
    if (counted === count) return { storedMs, countedMs: performance.now() - sent, counted };
    if (performance.now() - sent > timeoutMs) return { storedMs, counted };
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Waits until the capture_batches queue is empty (every staged message stored), at most `timeoutMs`; false past it. */
async function queueDrained(stack: ChildStack, timeoutMs: number): Promise<boolean> {
  const started = performance.now();
  const sqs = new SQSClient({
    endpoint: stack.info.sqs_endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    for (;;) {
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: stack.info.queues.capture_batches,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      if (
        Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible) ===
        0
      )
        return true;
      if (performance.now() - started > timeoutMs) return false;
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    sqs.destroy();
  }
}

interface LargeBatchFigures {
  count: number;
  mb: number;
  answersMs: number[];
  storedMs?: number;
  countedMs?: number;
  /** Events counted when the wait ended (all of them unless it timed out). */
  counted: number;
}

/**
 * One uuid-less batch per size: its answer time, and the time from sending it until the rollups count
 * every event (staged -> store_capture_batches -> stream -> ingest). Then `runs - 1` resends of the same
 * body, each on an idle stack, for more answer times: capture does the same work for them (decode,
 * validate, derive uuids, stage), and the worker finding every uuid stored is checked (the count stays).
 */
async function largeBatches(
  stack: ChildStack,
  sizes: number[],
  runs: number,
  countTimeoutMs: number,
  errors: string[],
) {
  const client = new DynamoDBClient({
    endpoint: stack.info.dynamodb_endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const figures: LargeBatchFigures[] = [];
  try {
    for (const count of sizes) {
      const name = `large batch ${count} ${randomUUID().slice(0, 8)}`;
      const body = largeBody(stack.info.project_token, count, name);
      const answersMs: number[] = [];
      let progress: Awaited<ReturnType<typeof untilStoredAndCounted>> = { counted: 0 };
      let drained = false;
      for (let run = 0; run < runs; run += 1) {
        const sent = performance.now();
        const res = await fetch(`${stack.info.base_url}/batch/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const answer = (await res.json()) as { queued?: number; accepted?: number };
        answersMs.push(performance.now() - sent);
        if (res.status !== 200) errors.push(`large batch ${count} run ${run}: HTTP ${res.status}`);
        if (run === 0 && res.status !== 200) break; // nothing to count: the error is reported
        if (run === 0) progress = await untilStoredAndCounted(client, stack, name, count, sent, countTimeoutMs);
        // Each send on a stack whose worker has caught up, when it does within the wait; else (a slow
        // DynamoDB Local) the next send is measured beside the worker, and the resend check is skipped.
        drained = await queueDrained(stack, countTimeoutMs);
        const after =
          run === 0
            ? `; all stored after ${progress.storedMs === undefined ? '-' : fixed(progress.storedMs / 1000, 1)} s, ${
                progress.countedMs === undefined
                  ? `${progress.counted} counted after ${fixed(countTimeoutMs / 1000, 0)} s`
                  : `all counted after ${fixed(progress.countedMs / 1000, 1)} s`
              }`
            : '';
        console.log(
          `  ${count} events, run ${run + 1}: HTTP ${res.status} in ${fixed(answersMs.at(-1)!)} ms (accepted ${answer.accepted ?? 0}, queued ${answer.queued ?? 0})${after}`,
        );
      }
      // Resends must store nothing: the table still holds exactly one item per event.
      const stored = drained ? await storedEvents(client, stack, name) : count;
      if (stored !== count) errors.push(`large batch ${count}: ${stored} stored after ${runs} sends`);
      if (!drained) console.log(`  (${count}: the worker had not caught up; resends not checked for doubles)`);
      figures.push({ count, mb: Buffer.byteLength(body) / 1e6, answersMs, ...progress });
    }
  } finally {
    client.destroy();
  }
  return figures;
}

/** The body the issue names (20 MB) must be answered within this at the median. */
const LARGE_ANSWER_TARGET_MS = 3_000;

const seconds = (ms: number | undefined) => (ms === undefined ? '-' : fixed(ms / 1000, 1));

async function largeBatchRows(stack: ChildStack, sizes: number[], runs: number, errors: string[]) {
  const countTimeoutMs = intEnv('BENCH_CAPTURE_COUNT_TIMEOUT_S', 1_800) * 1000;
  console.log(
    `\nlarge uuid-less batches (${sizes.join(', ')} events), ${runs} sends each (the first waited for until stored and counted, at most ${countTimeoutMs / 1000} s):`,
  );
  const figures = await largeBatches(stack, sizes, runs, countTimeoutMs, errors);
  const countedCell = (f: LargeBatchFigures) =>
    f.countedMs === undefined
      ? `${f.counted} of ${f.count} at ${countTimeoutMs / 1000} s`
      : `${seconds(f.countedMs)} s`;
  console.log(
    `\n${table(
      ['events', 'body MB', 'answer p50 ms', 'answer max ms', 'all stored after s', 'all counted after'],
      figures.map((f) => [
        String(f.count),
        fixed(f.mb, 1),
        fixed(percentile(f.answersMs, 50)),
        fixed(Math.max(...f.answersMs)),
        seconds(f.storedMs),
        countedCell(f),
      ]),
    )}`,
  );
  return figures.flatMap((f): SummaryRow[] => {
    const p50 = percentile(f.answersMs, 50);
    const largest = f.count === Math.max(...sizes);
    return [
      {
        benchmark: 'capture',
        metric: `POST /batch ${f.count} events (${fixed(f.mb, 1)} MB) answer p50`,
        value: `${fixed(p50)} ms`,
        target: largest ? `<= ${LARGE_ANSWER_TARGET_MS} ms` : '-',
        status: largest ? (p50 <= LARGE_ANSWER_TARGET_MS ? 'pass' : 'OVER TARGET') : 'info',
      },
      {
        benchmark: 'capture',
        metric: `${f.count} events stored / counted`,
        value: `${seconds(f.storedMs)} s / ${countedCell(f)}`,
        target: '-',
        status: 'info',
      },
    ];
  });
}

async function throughputAndLag(
  stack: ChildStack,
  batches: number,
  concurrency: number,
  samples: number,
  errors: string[],
): Promise<SummaryRow[]> {
  console.log(`${batches} payloads x ${BATCH_SIZE} events, ${concurrency} concurrent clients`);
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
  return rows;
}

export const captureBenchmark: Benchmark = {
  name: 'capture',
  title: 'Capture throughput vs raw BatchWriteItem, and ingestion lag (local stack)',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const batches = intEnv('BENCH_CAPTURE_BATCHES', 40);
    const concurrency = intEnv('BENCH_CAPTURE_CONCURRENCY', 8);
    const samples = intEnv('BENCH_LAG_SAMPLES', 50);
    const largeSizes = (process.env.BENCH_CAPTURE_LARGE ?? '2000,20000,60000').split(',').filter(Boolean).map(Number);
    const largeRuns = intEnv('BENCH_CAPTURE_LARGE_RUNS', 3);
    const unitEvents = intEnv('BENCH_UNITS_EVENTS', 1000);
    const errors: string[] = [];
    const rows: SummaryRow[] = [];
    if (batches > 0 || largeSizes.length) {
      const stack = await startChildStack();
      try {
        console.log(`local stack up in ${fixed(stack.startupMs / 1000)} s`);
        if (batches > 0) rows.push(...(await throughputAndLag(stack, batches, concurrency, samples, errors)));
        if (largeSizes.length) rows.push(...(await largeBatchRows(stack, largeSizes, largeRuns, errors)));
      } finally {
        await stack.stop();
      }
    }
    if (unitEvents > 0) {
      console.log(`\nwrite amplification: ${unitEvents} events per shape, metered end to end (in-process local stack)`);
      rows.push(...(await writeUnitRows(unitEvents, errors)));
    }
    return { rows, errors };
  },
};
