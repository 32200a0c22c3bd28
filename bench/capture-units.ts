/**
 * Write amplification (issue 37): what one captured event costs in DynamoDB request units, SQS
 * messages and S3 requests, end to end on the local stack: capture's handler (POST /batch), the
 * ingest worker (the stream poller), then one compaction pass (segments + the lake's Parquet file).
 *
 * It runs in a child process of its own (`writeUnitRows` spawns this file): a local stack in that
 * process with a request meter in front of its stand-ins (bench/lib/aws-meter.ts, startLocalStack's
 * `front`), handlers' logs off. The stream and queue pollers stay behind the meter (Lambda's side:
 * stream reads for a trigger are free; SQS is priced per message sent). The local runtime writes the
 * lake to a folder: its S3 PUTs are the files a compaction writes there (one PutObject each deployed).
 *
 * Each shape is captured with the stream worker stopped (capture's units alone), then the worker
 * starts where it stopped and drains the backlog in full 500-record batches, as the deployed event
 * source mapping delivers a busy stream (batchSize 500): the worker's units. Persons and groups
 * exist before a shape is measured (a returning visitor), except in the shape that measures a new
 * person. Units per event are priced (bench/lib/aws-prices.ts) into dollars per million events.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ROOT } from '#infra/build.ts';
import { addCounts, type Counts, emptyCounts, startMeter } from './lib/aws-meter.ts';
import { AWS_PRICES, dollarsPerMillion, type UnitsPerEvent } from './lib/aws-prices.ts';
import { fixed, table } from './lib/format.ts';
import type { SummaryRow } from './lib/types.ts';

/** Events per POST /batch (a browser SDK's flush is smaller; a server SDK's similar). */
const PER_POST = 50;
/** Concurrent capture clients: few, so that capture's time budget holds on a loaded machine (a retried store writes twice). */
const LANES = 2;
/** Quiet this long after the worker drained: its follow-up writes (day marks, cohorts, ...) are done. */
const QUIET_MS = 2_000;
/** A stream batch of the deployed event source mapping (infra/constructs/service-function.ts). */
const STREAM_BATCH = 500;
/**
 * Copies of an event item DynamoDB stores: the table's, and the eventsByDay and eventsByInsertedHour
 * indexes' (projection ALL; eventsByDistinctId holds keys only). DynamoDB Local's TableSizeBytes
 * counts the table's alone.
 */
const EVENT_ITEM_COPIES = 3;

/** The issue's targets: a plain event <= 3 write units end to end, <= $3 per million events all in. */
export const TARGET_PLAIN_WCU = 3;
export const TARGET_DOLLARS_PER_MILLION = 3;

type Event = {
  event: string;
  distinct_id: string;
  uuid: string;
  timestamp: string;
  properties: Record<string, unknown>;
};
type Shape = {
  name: string;
  event(i: number, round: number): Omit<Event, 'uuid' | 'timestamp'>;
  /** Sent in rounds of this many events, each drained before the next (a person changes once per round). */
  roundSize?: number;
};

const PERSONS = 200;
const GROUPS = 50;
const run = randomUUID().slice(0, 8);

const pageview: Shape = {
  name: '$pageview',
  event: (i) => ({
    event: '$pageview',
    distinct_id: `pv-${i % PERSONS}`,
    properties: {
      $current_url: `https://example.com/page/${i % 40}`,
      $browser: i % 2 ? 'Chrome' : 'Firefox',
      $session_id: `s-${i % 50}`,
    },
  }),
};
const newPersonPageview: Shape = {
  ...pageview,
  name: '$pageview, a new person',
  event: (i, round) => ({ ...pageview.event(i, round), distinct_id: `new-${run}-${i}` }),
};
const identify: Shape = {
  name: '$identify with $set',
  event: (i) => ({
    event: '$identify',
    distinct_id: `id-${i % PERSONS}`,
    properties: { $set: { email: `user${i % PERSONS}@example.com`, visits: i } }, // a new visits value each time
  }),
};
const groupIdentify: Shape = {
  name: '$groupidentify',
  event: (i) => ({
    event: '$groupidentify',
    distinct_id: `g-${i % GROUPS}`,
    properties: {
      $group_type: 'company',
      $group_key: `company-${i % GROUPS}`,
      $group_set: { name: `Company ${i % GROUPS}`, seats: i },
    },
  }),
};
/** With a person-property cohort (plan = paid): each event moves its person in or out of it. */
const cohortChange: Shape = {
  name: 'cohort membership change',
  roundSize: PERSONS,
  event: (i, round) => ({
    event: 'plan changed',
    distinct_id: `co-${i % PERSONS}`,
    properties: { $set: { plan: round % 2 ? 'free' : 'paid' } },
  }),
};
const pageviewWithCohort: Shape = { ...pageview, name: '$pageview, project with a cohort' };

interface ShapeFigures {
  name: string;
  events: number;
  capture: Counts;
  worker: Counts;
  /** Node CPU time of capture + worker (the handlers, the meter, the bench's client). */
  cpuMs: number;
  /** Bytes the table grew by (DynamoDB Local's TableSizeBytes: items, not index entries). */
  tableBytes: number;
}

interface Compaction {
  counts: Counts;
  events: number;
  days: number;
  /** Files the compaction wrote into the lake folder (each a PutObject deployed), and their bytes. */
  lakeFiles: number;
  lakeBytes: number;
}

export interface UnitsResult {
  shapes: ShapeFigures[];
  compaction: Compaction;
  errors: string[];
}

const at = (i: number) => new Date(Date.now() - (i % 600) * 1000).toISOString();

async function filesWrittenSince(dir: string, sinceMs: number): Promise<{ files: number; bytes: number }> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  let files = 0;
  let bytes = 0;
  for (const e of entries) {
    if (!e.isFile()) continue;
    const s = await stat(join(e.parentPath, e.name));
    if (s.mtimeMs >= sinceMs) {
      files += 1;
      bytes += s.size;
    }
  }
  return { files, bytes };
}

/** The measurement itself, in this process (the child). */
async function measure(eventsPerShape: number): Promise<UnitsResult> {
  const errors: string[] = [];
  const dataDir = await mkdtemp(join(tmpdir(), 'analytics-units-'));
  const meter = await startMeter();
  const { startLocalStack } = await import('#infra/local/stack.ts');
  const { startStreamPoller } = await import('#infra/local/stream-poller.ts');
  const { ensureDevAccess } = await import('#infra/local/dev-seed.ts');
  const { freePort } = await import('#infra/local/ports.ts');
  const { compactDueDays } = await import('#shared/domain/event-segments.ts');
  const { COMPACTION_DELAY_MS } = await import('#shared/domain/event-days.ts');
  const stack = await startLocalStack({
    dataDir,
    port: await freePort(),
    scheduler: false,
    front: (standIn, endpoint) => meter.front(standIn, endpoint),
  });
  const pollerOptions = {
    tableName: stack.tableName,
    endpoint: stack.dynamodb.endpoint,
    loadHandler: async () => (await import('#functions/workers/ingest-events.ts')).handler,
    checkpointFile: join(dataDir, 'stream-checkpoints.json'),
  };
  let poller = stack.streamPoller;
  // Behind the meter: the benchmark's own reads are not the service's.
  const table = new DynamoDBClient({
    endpoint: stack.dynamodb.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const tableBytes = async () =>
    (await table.send(new DescribeTableCommand({ TableName: stack.tableName }))).Table?.TableSizeBytes ?? 0;
  try {
    const dev = await ensureDevAccess(undefined);
    const post = async (path: string, body: unknown, auth = false) => {
      const res = await fetch(`${stack.api.baseUrl}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(auth ? { authorization: `Bearer ${dev.personal_api_key}` } : {}),
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 300) errors.push(`units: POST ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
    };
    const capture = async (events: Event[]) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: LANES }, async () => {
          while (next * PER_POST < events.length) {
            const batch = events.slice(next * PER_POST, ++next * PER_POST);
            await post('/batch/', { api_key: dev.project_token, batch, sent_at: new Date().toISOString() });
          }
        }),
      );
    };
    /** Capture with the worker stopped, then the worker from where it stopped: each one's counts. */
    const measured = async (events: Event[]) => {
      await poller.stop();
      await meter.quiet(QUIET_MS, 60_000);
      const bytesBefore = await tableBytes();
      meter.reset();
      const cpu = process.cpuUsage();
      await capture(events);
      await meter.quiet(QUIET_MS, 600_000);
      const captured = meter.counts();
      meter.reset();
      poller = await startStreamPoller(pollerOptions);
      await poller.drained();
      await meter.quiet(QUIET_MS, 600_000);
      const used = process.cpuUsage(cpu);
      return {
        capture: captured,
        worker: meter.counts(),
        cpuMs: (used.user + used.system) / 1000,
        tableBytes: (await tableBytes()) - bytesBefore,
      };
    };
    // Every event numbered once: a revisited person or group gets new property values, a new person a new id.
    let numbered = 0;
    const eventsOf = (shape: Shape, count: number, round: number): Event[] =>
      Array.from({ length: count }, () => {
        const i = numbered++;
        return { ...shape.event(i, round), uuid: randomUUID(), timestamp: at(i) };
      });
    const measureShape = async (shape: Shape): Promise<ShapeFigures> => {
      const roundSize = shape.roundSize ?? eventsPerShape;
      const rounds = Math.max(1, Math.round(eventsPerShape / roundSize));
      const f: ShapeFigures = {
        name: shape.name,
        events: 0,
        capture: emptyCounts(),
        worker: emptyCounts(),
        cpuMs: 0,
        tableBytes: 0,
      };
      for (let round = 0; round < rounds; round += 1) {
        const events = eventsOf(shape, roundSize, round);
        const m = await measured(events);
        f.events += events.length;
        f.capture = addCounts(f.capture, m.capture);
        f.worker = addCounts(f.worker, m.worker);
        f.cpuMs += m.cpuMs;
        f.tableBytes += m.tableBytes;
      }
      console.log(
        `  ${shape.name}: ${f.events} events; per event capture ${fixed(f.capture.wcu / f.events, 2)} WCU ${fixed(f.capture.rcu / f.events, 2)} RCU, worker ${fixed(f.worker.wcu / f.events, 2)} WCU ${fixed(f.worker.rcu / f.events, 2)} RCU`,
      );
      return f;
    };

    // Not counted: the project's first events (first-event time, property definitions), and every
    // person and group the shapes then revisit, once each.
    for (const shape of [pageview, identify, groupIdentify]) {
      numbered = 0; // i % PERSONS (GROUPS) from 0: each person (group) once
      await measured(eventsOf(shape, shape === groupIdentify ? GROUPS : PERSONS, 0));
    }
    const shapes: ShapeFigures[] = [];
    for (const shape of [pageview, newPersonPageview, identify, groupIdentify]) shapes.push(await measureShape(shape));
    await post(
      `/api/projects/${dev.project_id}/cohorts/`,
      {
        name: 'Paid plan',
        filters: {
          properties: { type: 'AND', values: [{ type: 'person', key: 'plan', value: 'paid', operator: 'exact' }] },
        },
      },
      true,
    );
    // The cohort's persons exist, none in it (plan free), before the counted rounds move them in and out.
    numbered = Math.ceil(numbered / PERSONS) * PERSONS; // a round's i % PERSONS runs over every person once
    await measured(eventsOf(cohortChange, PERSONS, 1));
    shapes.push(await measureShape(cohortChange));
    shapes.push(await measureShape(pageviewWithCohort));

    // One compaction pass over everything ingested (a day is due COMPACTION_DELAY_MS after its last change).
    await poller.drained();
    await meter.quiet(QUIET_MS, 60_000);
    meter.reset();
    const compactionStarted = Date.now();
    const compaction = await compactDueDays(new Date(Date.now() + COMPACTION_DELAY_MS + 60_000));
    const counts = meter.counts();
    const lake = await filesWrittenSince(join(dataDir, 'lake'), compactionStarted);
    if (compaction.compacted.some((c) => !c.complete || c.lake === false))
      errors.push(`units: compaction incomplete ${JSON.stringify(compaction.compacted)}`);
    return {
      shapes,
      compaction: {
        counts,
        events: compaction.compacted.reduce((n, c) => n + c.events, 0),
        days: compaction.compacted.length,
        lakeFiles: lake.files,
        lakeBytes: lake.bytes,
      },
      errors,
    };
  } finally {
    table.destroy();
    await poller.stop().catch(() => undefined);
    await stack.stop().catch(() => undefined);
    await meter.close();
    await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** A shape's units per event, end to end: its capture and worker, plus its share of one compaction pass. */
function unitsOf(r: ShapeFigures, compaction: Compaction): UnitsPerEvent {
  const all = addCounts(r.capture, r.worker);
  const c = compaction.counts;
  const n = Math.max(1, compaction.events);
  return {
    wcu: all.wcu / r.events,
    rcu: all.rcu / r.events,
    compactionWcu: c.wcu / n,
    compactionRcu: c.rcu / n,
    sqsMessages: all.sqsMessagesSent / r.events + c.sqsMessagesSent / n,
    s3ClassA: all.s3ClassA / r.events + (c.s3ClassA + compaction.lakeFiles) / n,
    s3ClassB: all.s3ClassB / r.events + c.s3ClassB / n,
    storageBytes: (Math.max(0, r.tableBytes) / r.events) * EVENT_ITEM_COPIES,
    lakeBytes: compaction.lakeBytes / n,
    lambdaCpuMs: r.cpuMs / r.events,
    lambdaInvocations: 1 / PER_POST + 1 / STREAM_BATCH,
  };
}

const perOp = (m: Record<string, number>, events: number) =>
  Object.entries(m)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([op, n]) => `${op} ${fixed(n / events, 2)}`)
    .join(', ') || '-';

function report({ shapes, compaction }: UnitsResult): SummaryRow[] {
  const c = compaction.counts;
  const n = Math.max(1, compaction.events);
  console.log(
    `\nper event: capture, ingest worker, and end to end (+ its share of one compaction pass over all ${compaction.events} events):\n${table(
      [
        'shape',
        'events',
        'capture WCU',
        'capture RCU',
        'worker WCU',
        'worker RCU',
        'items written',
        'table bytes',
        'SQS msgs',
        'end to end WCU',
        'end to end RCU',
        '$ / M events',
      ],
      shapes.map((r) => {
        const u = unitsOf(r, compaction);
        return [
          r.name,
          String(r.events),
          fixed(r.capture.wcu / r.events, 2),
          fixed(r.capture.rcu / r.events, 2),
          fixed(r.worker.wcu / r.events, 2),
          fixed(r.worker.rcu / r.events, 2),
          fixed(addCounts(r.capture, r.worker).itemsWritten / r.events, 2),
          fixed(r.tableBytes / r.events, 0),
          fixed(u.sqsMessages, 3),
          fixed(u.wcu + u.compactionWcu, 2),
          fixed(u.rcu + u.compactionRcu, 2),
          fixed(dollarsPerMillion(u).total, 2),
        ];
      }),
    )}`,
  );
  console.log(
    `compaction (${compaction.days} day(s), ${compaction.events} events) per event: ${fixed(c.wcu / n, 3)} WCU, ${fixed(c.rcu / n, 3)} RCU, ${fixed(compaction.lakeFiles / n, 5)} lake PUTs (${compaction.lakeFiles} files, ${fixed(compaction.lakeBytes / n, 1)} bytes/event); WCU by call: ${perOp(c.wcuByOp, n)}; RCU by call: ${perOp(c.rcuByOp, n)}`,
  );
  for (const r of shapes) {
    const d = dollarsPerMillion(unitsOf(r, compaction));
    console.log(
      [
        `  ${r.name}:`,
        `    capture WCU by call ${perOp(r.capture.wcuByOp, r.events)}; RCU ${perOp(r.capture.rcuByOp, r.events)}`,
        `    worker  WCU by call ${perOp(r.worker.wcuByOp, r.events)}; RCU ${perOp(r.worker.rcuByOp, r.events)}`,
        `    calls per event: capture ${perOp(r.capture.dynamodbCalls, r.events)}; worker ${perOp(r.worker.dynamodbCalls, r.events)}`,
        `    $ per million events: ${Object.entries(d)
          .map(([k, v]) => `${k} ${fixed(v, 3)}`)
          .join(', ')} (handler CPU ${fixed(r.cpuMs / r.events, 2)} ms/event)`,
      ].join('\n'),
    );
  }
  console.log(`prices: ${AWS_PRICES.source}; PostHog Cloud: ${AWS_PRICES.posthogCloudPerMillion}`);

  const plain = shapes[0]!;
  const plainUnits = unitsOf(plain, compaction);
  const plainWcu = plainUnits.wcu + plainUnits.compactionWcu;
  const plainDollars = dollarsPerMillion(plainUnits).total;
  return [
    ...shapes.map((r): SummaryRow => {
      const u = unitsOf(r, compaction);
      return {
        benchmark: 'capture',
        metric: `${r.name}: WCU / RCU per event end to end`,
        value: `${fixed(u.wcu + u.compactionWcu, 2)} / ${fixed(u.rcu + u.compactionRcu, 2)}`,
        target: r === plain ? `WCU <= ${TARGET_PLAIN_WCU}` : '-',
        status: r === plain ? (plainWcu <= TARGET_PLAIN_WCU ? 'pass' : 'OVER TARGET') : 'info',
      };
    }),
    {
      benchmark: 'capture',
      metric: `${plain.name}, $ per million events (all in)`,
      value: `$${fixed(plainDollars, 2)}`,
      target: `<= $${TARGET_DOLLARS_PER_MILLION}`,
      status: plainDollars <= TARGET_DOLLARS_PER_MILLION ? 'pass' : 'OVER TARGET',
    },
  ];
}

const RESULT_PREFIX = 'UNITS_RESULT ';

/** Runs the measurement in a child process (its stack, its environment, its handlers' logs off) and reports it. */
export async function writeUnitRows(eventsPerShape: number, errors: string[]): Promise<SummaryRow[]> {
  const child = spawn('npx', ['tsx', 'bench/capture-units.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      BENCH_UNITS_EVENTS: String(eventsPerShape),
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let result: UnitsResult | undefined;
  let pending = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines)
      if (line.startsWith(RESULT_PREFIX)) result = JSON.parse(line.slice(RESULT_PREFIX.length)) as UnitsResult;
      else if (!line.startsWith('{')) console.log(line);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (!result) {
    errors.push(`write units: the measurement exited (${code}) without a result:\n${stderr}`);
    return [];
  }
  errors.push(...result.errors);
  return report(result);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  measure(Number(process.env.BENCH_UNITS_EVENTS || 1000))
    .then((result) => {
      console.log(`${RESULT_PREFIX}${JSON.stringify(result)}`);
      process.exit(0);
    })
    .catch((error: unknown) => {
      console.error(error instanceof Error ? error.stack : error);
      process.exit(1);
    });
}
