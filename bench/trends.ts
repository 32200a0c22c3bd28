/**
 * Trends (`POST /api/environments/:id/insights/trend?refresh=true`) on one local stack:
 *
 * 1. Unfiltered 30-day daily total of `$pageview` in two projects shaped alike, one with 10k events and
 *    one with 1M. That query is answered from hourly rollups only (never raw events), so for both
 *    sizes the bench writes the rollup items the ingest worker would have produced for that many
 *    events (per event name plus the all-events `*` rollup, counts summing to the size) and the
 *    project's first-event item; no raw events (1M through DynamoDB Local would take 30-70 min here).
 *    Every measured response must say `X-Trend-Source: rollups` and total the seeded count. The
 *    rollup builder is checked in the same run against what the stack's real ingest worker builds
 *    from a small sample of real event items (BENCH_TRENDS_CHECK, 2k) sent through the table stream.
 * 2. A filtered + breakdown trend over 100k raw events in the stack's project: persons first, then
 *    the events as `eventItem()` builds them, with one change: the base-table key is prefixed
 *    `BENCHRAW#` so the stream poller skips them (the local ingest worker manages ~150-200 events/s
 *    here: 100k would need ~10 min on top of seeding). Trends read events only through the
 *    eventsByDay index, whose keys and attributes are unchanged. Their rollups and first-event item
 *    are written by the same builder. `X-Trend-Source: events` is asserted; DuckDB (in memory, same
 *    run, the same event objects) computes the same numbers with SQL, and the per (breakdown value,
 *    UTC day) counts, per-value totals and row order must match.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { promisify } from 'node:util';
import { QueryCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
// DuckDB is the baseline of this benchmark only. Its npm package ships per-platform binaries that this
// project's registry does not all carry, which would break `npm ci`: it is installed on demand
// (`npm install --no-save @duckdb/node-api@1.5.6-r.1`) and loaded here when present.
// Typed loosely on purpose: a clone without DuckDB must still type-check.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type DuckDBConnection = any;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function duckdb(): Promise<any> {
  const name = '@duckdb/node-api';
  try {
    return await import(/* @vite-ignore */ name);
  } catch {
    throw new Error(
      'DuckDB is not installed: run `npm install --no-save @duckdb/node-api@1.5.6-r.1`, then this benchmark again.',
    );
  }
}
import { eventItem, type StoredEvent } from '#shared/db/events.ts';
import { keys } from '#shared/db/keys.ts';
import { personItems } from '#shared/db/persons.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { fingerprint } from '#shared/segments/fingerprint.ts';
import { ROOT } from '#infra/build.ts';
import { startChildStack, type ChildStack } from './lib/local-stack.ts';
import { batchWriteAll, localDynamo } from './lib/dynamo-seed.ts';
import { fixed, heading, table } from './lib/format.ts';
import { percentile } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';
import { prng } from '../test/support/prng.ts';

const execFileAsync = promisify(execFile);

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SPAN = 30 * DAY;
export const DISTINCT_IDS = 2_000;
const NULL_VALUE = '$$_posthog_breakdown_null_$$';
const OTHER_VALUE = '$$_posthog_breakdown_other_$$';
const NONE = '(none)';

const RATIO_ROLLUPS_TARGET = 1.5;
/** Issue 14: end to end at 100k compacted events, at most 3x DuckDB in memory. */
const RATIO_DUCKDB_TARGET = 3;
const END_TO_END_TARGET_MS = 2_000;

// ---------------------------------------------------------------------------------------------
// Synthetic events: one generator shapes the raw events and the rollup-only projects alike.

/** One synthetic event's properties (the same draws from `rng`, in the same order, for every benchmark that generates events). */
export function syntheticProperties(rng: () => number, user: number, t: number): Record<string, unknown> {
  const os = weighted(rng, OSES);
  return {
    $browser: weighted(rng, BROWSERS),
    ...(os === null ? {} : { $os: os }),
    $current_url: `https://example.com/${['pricing', 'docs', 'blog', 'app', 'signup'][Math.floor(rng() * 5)]}/${Math.floor(rng() * 40)}`,
    amount: Math.round(rng() * 50_000) / 100,
    $session_id: `s-${user}-${Math.floor(t / (6 * HOUR))}`,
    $lib: 'web',
  };
}

export function weighted<T>(rng: () => number, choices: readonly (readonly [T, number])[]): T {
  let r = rng();
  for (const [value, weight] of choices) {
    if ((r -= weight) < 0) return value;
  }
  return choices.at(-1)![0];
}

export const EVENT_MIX = [
  ['$pageview', 0.7],
  ['$autocapture', 0.15],
  ['$pageleave', 0.1],
  ['signed up', 0.05],
] as const;
export const BROWSERS = [
  ['Chrome', 0.45],
  ['Safari', 0.2],
  ['Firefox', 0.12],
  ['Edge', 0.1],
  ['Samsung Internet', 0.08],
  ['Opera', 0.05],
] as const;
export const OSES = [
  ['Windows', 0.35],
  ['Mac OS X', 0.2],
  ['iOS', 0.17],
  ['Android', 0.15],
  ['Linux', 0.07],
  ['Chrome OS', 0.03],
  [null, 0.03], // no $os property: the "None" breakdown row
] as const;
export const FILTER_BROWSERS = ['Chrome', 'Firefox', 'Safari'];
/** The capture bench's trick: a base-table key the stream poller's raw-event filter (pk `EVENT#…`) does not match. */
const RAW_PK_PREFIX = 'BENCHRAW#';

interface Shape {
  event: string;
  /** Epoch ms, in [now - 30 d, now - 1 s]. */
  t: number;
}

function shape(rng: () => number, nowMs: number): Shape {
  return { event: weighted(rng, EVENT_MIX), t: nowMs - SPAN + Math.floor(rng() * (SPAN - 1_000)) };
}

function rawEvents(
  count: number,
  projectId: number,
  nowMs: number,
  seed: number,
  extra: Record<string, unknown> = {},
): StoredEvent[] {
  const rng = prng(seed);
  // Ingested a while before the run: the compactor leaves the last minute's ingestion to its next pass.
  const insertedAt = new Date(nowMs - 5 * 60_000).toISOString();
  return Array.from({ length: count }, () => {
    const { event, t } = shape(rng, nowMs);
    const user = Math.floor(rng() * DISTINCT_IDS);
    const properties = { ...syntheticProperties(rng, user, t), ...extra };
    return {
      uuid: randomUUID(),
      event,
      distinct_id: `user-${user}`,
      project_id: projectId,
      properties,
      timestamp: new Date(t).toISOString(),
      inserted_at: insertedAt,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Rollups as the ingest worker builds them: per (event name, UTC hour) and per (*, UTC hour).

type RollupCounts = Map<string, { event: string | null; hour: string; count: number }>;

function addToRollups(counts: RollupCounts, hourNames: Map<number, string>, event: string, t: number): void {
  const index = Math.floor(t / HOUR);
  let hour = hourNames.get(index);
  if (hour === undefined) hourNames.set(index, (hour = new Date(index * HOUR).toISOString().slice(0, 13)));
  for (const name of [event, null]) {
    const id = `${name ?? '*'}\u0000${hour}`;
    const entry = counts.get(id);
    if (entry) entry.count += 1;
    else counts.set(id, { event: name, hour, count: 1 });
  }
}

/** Hourly rollups of `count` synthetic events (same mix and spread as the raw events), and the earliest time. */
function syntheticRollups(
  count: number,
  nowMs: number,
  seed: number,
): { counts: RollupCounts; first: number; perEvent: Map<string, number> } {
  const rng = prng(seed);
  const counts: RollupCounts = new Map();
  const hours = new Map<number, string>();
  const perEvent = new Map<string, number>();
  let first = Infinity;
  for (let i = 0; i < count; i += 1) {
    const { event, t } = shape(rng, nowMs);
    addToRollups(counts, hours, event, t);
    perEvent.set(event, (perEvent.get(event) ?? 0) + 1);
    if (t < first) first = t;
  }
  return { counts, first, perEvent };
}

function rollupsOfEvents(events: readonly StoredEvent[]): RollupCounts {
  const counts: RollupCounts = new Map();
  const hours = new Map<number, string>();
  for (const e of events) addToRollups(counts, hours, e.event, Date.parse(e.timestamp));
  return counts;
}

function rollupItems(projectId: number, counts: RollupCounts): Record<string, unknown>[] {
  return [...counts.values()].map((c) => ({
    ...keys.rollup(projectId, c.event, c.hour),
    count: c.count,
    entity: 'Rollup',
  }));
}

/** Day counters as the ingest worker keeps them: per (UTC day, event name) the count and fingerprint sum. */
function dayCountsOfEvents(
  events: readonly StoredEvent[],
): Map<string, { day: string; event: string; count: number; xsum: number }> {
  const out = new Map<string, { day: string; event: string; count: number; xsum: number }>();
  for (const e of events) {
    const day = e.timestamp.slice(0, 10);
    const id = `${e.event}|${day}`;
    const entry = out.get(id) ?? { day, event: e.event, count: 0, xsum: 0 };
    entry.count += 1;
    entry.xsum += fingerprint(e.uuid);
    out.set(id, entry);
  }
  return out;
}

function dayCountItems(projectId: number, counts: ReturnType<typeof dayCountsOfEvents>): Record<string, unknown>[] {
  return [...counts.values()].map((c) => ({
    ...keys.dayCount(projectId, c.day, c.event),
    count: c.count,
    xsum: c.xsum,
    event: c.event,
    entity: 'DayCount',
  }));
}

/** The compaction markers the ingest worker leaves on the days it changed, due at `dueAt`. */
function compactionMarkerItems(projectId: number, days: Iterable<string>, dueAt: string): Record<string, unknown>[] {
  return [...new Set(days)].map((day) => ({
    ...keys.compactionMarker(projectId, day),
    ...keys.compactionDue(dueAt, projectId, day),
    entity: 'CompactionMarker',
    project_id: projectId,
    day,
    touches: 1,
    attempts: 0,
  }));
}

/** Every item of one partition, unmarshalled, page after page (the bench reads the stack's table directly). */
async function partitionItems(client: DynamoDBClient, tableName: string, pk: string): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = [];
  let ExclusiveStartKey: Record<string, any> | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: marshall({ ':pk': pk }),
        ExclusiveStartKey,
      }),
    );
    items.push(...(page.Items ?? []).map((raw) => unmarshall(raw)));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

/** Every day counter of a project over the window, as `name|day -> count:xsum`. */
async function readAllDayCounts(
  client: DynamoDBClient,
  tableName: string,
  projectId: number,
  nowMs: number,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const month of monthsOf(nowMs))
    for (const item of await partitionItems(client, tableName, keys.dayCountPartition(projectId, month).pk))
      if (item.entity === 'DayCount' && Number(item.count))
        out.set(`${String(item.event)}|${String(item.sk).slice(-10)}`, `${Number(item.count)}:${Number(item.xsum)}`);
  return out;
}

/** Fires the compactor the way `npm run cron -- compact-events` does, against the child stack; returns its summary. */
async function runCompactor(stack: ChildStack): Promise<{ ms: number; output: string }> {
  const started = performance.now();
  const { stdout, stderr } = await execFileAsync(
    process.execPath,
    ['--import', 'tsx', 'infra/cli/cron.ts', 'compact-events'],
    {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: stack.dataDir, POWERTOOLS_LOG_LEVEL: 'ERROR' },
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const summary =
    `${stdout}${stderr}`.split('\n').find((line) => line.includes('finished in')) ??
    `${stdout}${stderr}`.trim().split('\n').at(-1) ??
    '';
  return { ms: performance.now() - started, output: summary };
}

/** What noteEventTime leaves for a project whose earliest event is at `first`. */
function firstEventItem(projectId: number, first: number): Record<string, unknown> {
  return { ...keys.firstEvent(projectId), first_at: new Date(first).toISOString(), entity: 'FirstEvent' };
}

/** Every rollup item of a project for the given names (null: the all-events rollup), as `name|hour -> count`. */
async function readAllRollups(
  client: DynamoDBClient,
  tableName: string,
  projectId: number,
  names: (string | null)[],
  months: string[],
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const name of names)
    for (const month of months)
      for (const item of await partitionItems(client, tableName, keys.rollup(projectId, name, `${month}-01T00`).pk))
        if (Number(item.count)) out.set(`${name ?? '*'}|${String(item.sk)}`, Number(item.count));
  return out;
}

function monthsOf(nowMs: number): string[] {
  const months = new Set<string>();
  for (let t = nowMs - SPAN - DAY; t <= nowMs + DAY; t += DAY) months.add(new Date(t).toISOString().slice(0, 7));
  return [...months];
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface TrendResult {
  count: number;
  data: number[];
  days: string[];
  breakdown_value?: unknown;
}

async function createProject(stack: ChildStack, name: string): Promise<number> {
  const res = await fetch(`${stack.info.base_url}/api/organizations/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.info.personal_api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  const body = (await res.json()) as { teams?: { id: number; timezone: string }[] };
  const team = body.teams?.[0];
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`creating organization '${name}': HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  if (!team) throw new Error(`organization '${name}' came back without a project`);
  if (team.timezone !== 'UTC') throw new Error(`project ${team.id} has time zone ${team.timezone}, expected UTC`);
  return team.id;
}

async function trend(
  stack: ChildStack,
  projectId: number,
  body: unknown,
): Promise<{
  ms: number;
  source: string | null;
  timing: Map<string, number>;
  /** The read phase's description: days read, and how many segments the serving container had in memory. */
  readDesc: string;
  results: TrendResult[];
}> {
  const started = performance.now();
  const res = await fetch(`${stack.info.base_url}/api/environments/${projectId}/insights/trend/?refresh=true`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.info.personal_api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { result?: TrendResult[] };
  const ms = performance.now() - started;
  if (res.status !== 200)
    throw new Error(`trend on project ${projectId}: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  const timing = new Map(
    (res.headers.get('server-timing') ?? '').split(',').flatMap((part) => {
      const m = /^\s*([\w-]+);dur=([\d.]+)/.exec(part);
      return m ? [[m[1]!, Number(m[2])] as const] : [];
    }),
  );
  const readDesc = /(?:^|,)\s*read;dur=[\d.]+;desc="([^"]*)"/.exec(res.headers.get('server-timing') ?? '')?.[1] ?? '';
  return { ms, source: res.headers.get('x-trend-source'), timing, readDesc, results: json.result ?? [] };
}

const loadNow = () => `load average (1 min) ${fixed(loadavg()[0] ?? 0, 2)}`;

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

// ---------------------------------------------------------------------------------------------
// DuckDB baseline

async function duckLoad(
  events: readonly StoredEvent[],
): Promise<{ con: DuckDBConnection; close: () => void; ms: number }> {
  const started = performance.now();
  const { DuckDBInstance, timestampValue } = await duckdb();
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  await con.run(
    'CREATE TABLE events (uuid VARCHAR, event VARCHAR, distinct_id VARCHAR, ts TIMESTAMP, browser VARCHAR, os VARCHAR, current_url VARCHAR, amount DOUBLE)',
  );
  const appender = await con.createAppender('events');
  for (const e of events) {
    const p = e.properties;
    appender.appendVarchar(e.uuid);
    appender.appendVarchar(e.event);
    appender.appendVarchar(e.distinct_id);
    appender.appendTimestamp(timestampValue(BigInt(Date.parse(e.timestamp)) * 1000n));
    for (const v of [p.$browser, p.$os, p.$current_url]) {
      if (typeof v === 'string') appender.appendVarchar(v);
      else appender.appendNull();
    }
    if (typeof p.amount === 'number') appender.appendDouble(p.amount);
    else appender.appendNull();
    appender.endRow();
  }
  appender.flushSync();
  appender.closeSync();
  return {
    con,
    close: () => {
      con.closeSync();
      instance.closeSync();
    },
    ms: performance.now() - started,
  };
}

function duckSql(from: number, to: number): string {
  const lit = (t: number) => `TIMESTAMP '${new Date(t).toISOString().replace('T', ' ').replace('Z', '')}'`;
  return `SELECT os, strftime(ts, '%Y-%m-%d') AS day, count(*) AS n
FROM events
WHERE event = '$pageview' AND browser IN (${FILTER_BROWSERS.map((b) => `'${b}'`).join(', ')})
  AND ts BETWEEN ${lit(from)} AND ${lit(to)}
GROUP BY ALL`;
}

async function duckQuery(con: DuckDBConnection, sql: string): Promise<{ ms: number; counts: Map<string, number> }> {
  const started = performance.now();
  const reader = await con.runAndReadAll(sql);
  const rows = reader.getRowObjectsJS();
  const ms = performance.now() - started;
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(`${r.os === null ? NONE : String(r.os)}|${String(r.day)}`, Number(r.n));
  return { ms, counts };
}

function compareCounts(api: Map<string, number>, duck: Map<string, number>): string[] {
  const diffs: string[] = [];
  for (const k of new Set([...api.keys(), ...duck.keys()])) {
    const a = api.get(k) ?? 0;
    const d = duck.get(k) ?? 0;
    if (a !== d) diffs.push(`${k}: api ${a}, duckdb ${d}`);
  }
  return diffs;
}

/**
 * The storage floor of the API's events path: the same eventsByDay Queries readEventsInRange makes
 * (one per UTC day x shard for the event name, 32 in flight), from the bench process, items unmarshalled.
 */
async function readRawFloor(
  client: DynamoDBClient,
  tableName: string,
  projectId: number,
  event: string,
  from: number,
  to: number,
): Promise<{ ms: number; items: number }> {
  const index = TABLE_SCHEMA.indexes.eventsByDay;
  const fromIso = new Date(from).toISOString();
  const toIso = new Date(to).toISOString();
  const queries: { day: string; shard: number }[] = [];
  for (let t = from; t <= to; t += DAY) {
    for (let shard = 0; shard < TABLE_SCHEMA.eventDayShards; shard += 1)
      queries.push({ day: new Date(t).toISOString().slice(0, 10), shard });
  }
  const started = performance.now();
  let items = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < queries.length) {
        const { day, shard } = queries[next++]!;
        let ExclusiveStartKey: Record<string, any> | undefined;
        do {
          const out = await client.send(
            new QueryCommand({
              TableName: tableName,
              IndexName: index.name,
              KeyConditionExpression: '#p = :p AND #s BETWEEN :a AND :b',
              FilterExpression: '#t BETWEEN :from AND :to',
              ExpressionAttributeNames: { '#p': index.partitionKey, '#s': index.sortKey, '#t': 'timestamp' },
              ExpressionAttributeValues: marshall({
                ':p': keys.eventsByDay(projectId, day, shard).day_pk,
                ':a': `${keys.eventsByDayPrefix(event)}${fromIso}`,
                ':b': `${keys.eventsByDayPrefix(event)}${toIso}\uffff`,
                ':from': fromIso,
                ':to': toIso,
              }),
              ExclusiveStartKey,
            }),
          );
          for (const raw of out.Items ?? []) if (unmarshall(raw).uuid) items += 1;
          ExclusiveStartKey = out.LastEvaluatedKey;
        } while (ExclusiveStartKey);
      }
    }),
  );
  return { ms: performance.now() - started, items };
}

// ---------------------------------------------------------------------------------------------

async function waitForWorker(
  client: DynamoDBClient,
  tableName: string,
  projectId: number,
  expected: number,
  months: string[],
): Promise<number> {
  const started = performance.now();
  let last = -1;
  let lastChange = performance.now();
  let lastPrint = 0;
  for (;;) {
    const counted = sum([...(await readAllRollups(client, tableName, projectId, [null], months)).values()]);
    if (counted !== last) {
      last = counted;
      lastChange = performance.now();
    }
    if (counted === expected) return performance.now() - started;
    if (counted > expected)
      throw new Error(`the ingest worker counted ${counted} events, more than the ${expected} seeded`);
    if (performance.now() - lastChange > 120_000)
      throw new Error(`the ingest worker stalled at ${counted} of ${expected} events counted`);
    if (performance.now() - lastPrint > 10_000) {
      console.log(`  waiting for the ingest worker: ${counted} / ${expected} events counted`);
      lastPrint = performance.now();
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

export const trendsBenchmark: Benchmark = {
  name: 'trends',
  title: 'Trends: rollup totals at 10k vs 1M events; filtered breakdown over 100k events vs DuckDB (local stack)',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const small = intEnv('BENCH_TRENDS_SMALL', 10_000);
    const large = intEnv('BENCH_TRENDS_LARGE', 1_000_000);
    const rawCount = intEnv('BENCH_TRENDS_RAW', 100_000);
    const rollupRequests = intEnv('BENCH_TRENDS_ROLLUP_REQUESTS', 30);
    const rawRequests = intEnv('BENCH_TRENDS_RAW_REQUESTS', 10);
    const rawPathRequests = intEnv('BENCH_TRENDS_RAW_PATH_REQUESTS', 3);
    const checkCount = intEnv('BENCH_TRENDS_CHECK', 2_000);
    const warmupRollups = 5;
    const errors: string[] = [];
    const rows: SummaryRow[] = [];
    const stack = await startChildStack({ scheduler: false });
    const client = localDynamo(stack.info.dynamodb_endpoint);
    const tableName = stack.info.table_name;
    try {
      console.log(`local stack up in ${fixed(stack.startupMs / 1000)} s at ${stack.info.base_url}`);
      const nowMs = Date.now();
      const months = monthsOf(nowMs);
      const rawProject = stack.info.project_id;
      const smallProject = await createProject(stack, 'bench trends small');
      const largeProject = await createProject(stack, 'bench trends large');
      const checkProject = await createProject(stack, 'bench trends rollup check');

      // ---- 0. the rollup builder against the real ingest worker (runs while the rest is seeded) --
      const checkEvents = rawEvents(checkCount, checkProject, nowMs, 0xc4ec, { $process_person_profile: false });
      const checkStarted = performance.now();
      await batchWriteAll(
        client,
        tableName,
        checkEvents.map((e) => eventItem(e)),
      );
      console.log(
        `rollup check: ${checkCount} events written as eventItem() items to project ${checkProject} in ${fixed((performance.now() - checkStarted) / 1000)} s; the stack's ingest worker rolls them up while the rest is seeded`,
      );

      // ---- seeding for 1: hourly rollups only, 10k and 1M events ------------------------------
      const seeded: { label: string; events: number; projectId: number; pageviews: number; items: number }[] = [];
      for (const s of [
        { label: 'small', events: small, projectId: smallProject },
        { label: 'large', events: large, projectId: largeProject },
      ]) {
        const started = performance.now();
        const { counts, first, perEvent } = syntheticRollups(s.events, nowMs, 0x5eed);
        await batchWriteAll(client, tableName, [
          ...rollupItems(s.projectId, counts),
          firstEventItem(s.projectId, first),
        ]);
        seeded.push({ ...s, pageviews: perEvent.get('$pageview') ?? 0, items: counts.size });
        console.log(
          `project ${s.projectId}: ${counts.size} hourly rollup items (${perEvent.size} event names + '*') + first-event item for ${s.events} synthetic events over 30 days, no raw events; written in ${fixed((performance.now() - started) / 1000)} s`,
        );
      }

      // ---- seeding for 2: persons, then 100k raw events, then their rollups --------------------
      const personsStarted = performance.now();
      const personSeed = function* () {
        for (let k = 0; k < DISTINCT_IDS; k += 1) {
          yield* personItems({
            id: k + 1,
            uuid: randomUUID(),
            project_id: rawProject,
            properties: { email: `user${k}@example.com`, plan: k % 4 ? 'free' : 'pro' },
            distinct_ids: [`user-${k}`],
            created_at: new Date(nowMs - SPAN - DAY + k * 1000).toISOString(),
            is_identified: true,
            version: 1,
          });
        }
        yield { ...keys.personCount(rawProject), count: DISTINCT_IDS, entity: 'PersonCount' };
        yield { ...keys.counter(keys.personCounter(rawProject)), value: DISTINCT_IDS };
      };
      await batchWriteAll(client, tableName, personSeed());
      console.log(
        `project ${rawProject}: ${DISTINCT_IDS} persons (person + distinct id items) written in ${fixed((performance.now() - personsStarted) / 1000)} s`,
      );

      const events = rawEvents(rawCount, rawProject, nowMs, 0x7e11d5);
      const seedStarted = performance.now();
      let nextReport = 0.1;
      await batchWriteAll(
        client,
        tableName,
        events.map((e) => {
          const item = eventItem(e);
          // Same item, base-table key prefixed so the stream poller's raw-event filter skips it (see the header).
          return { ...item, pk: `${RAW_PK_PREFIX}${String(item.pk)}` };
        }),
        {
          inFlight: 16,
          onProgress: (n) => {
            if (n / rawCount >= nextReport) {
              const sec = (performance.now() - seedStarted) / 1000;
              console.log(`  written ${n} / ${rawCount} events (${fixed(sec)} s, ${fixed(n / sec, 0)} items/s)`);
              nextReport += 0.1;
            }
          },
        },
      );
      const seedMs = performance.now() - seedStarted;
      const rawRollups = rollupsOfEvents(events);
      const rawFirst = events.reduce((m, e) => Math.min(m, Date.parse(e.timestamp)), Infinity);
      const rawDayCounts = dayCountsOfEvents(events);
      const markers = compactionMarkerItems(
        rawProject,
        [...rawDayCounts.values()].map((c) => c.day),
        new Date(Date.now() - 1_000).toISOString(),
      );
      await batchWriteAll(client, tableName, [
        ...rollupItems(rawProject, rawRollups),
        ...dayCountItems(rawProject, rawDayCounts),
        ...markers,
        firstEventItem(rawProject, rawFirst),
      ]);
      console.log(
        `project ${rawProject}: ${rawCount} raw events (eventItem(), BatchWriteItem, 16 in flight) written in ${fixed(seedMs / 1000)} s (${fixed((rawCount / seedMs) * 1000, 0)} items/s), ` +
          `then ${rawRollups.size} rollup items, ${rawDayCounts.size} day counters, ${markers.length} compaction markers (due now) + first-event item`,
      );

      const drainMs = await waitForWorker(client, tableName, checkProject, checkCount, months);
      const expectedRollups = new Map(
        [...rollupsOfEvents(checkEvents).values()].map((c) => [`${c.event ?? '*'}|${c.hour}`, c.count]),
      );
      const workerRollups = await readAllRollups(
        client,
        tableName,
        checkProject,
        [...EVENT_MIX.map(([n]) => n), null],
        months,
      );
      const workerDays = await readAllDayCounts(client, tableName, checkProject, nowMs);
      const expectedDays = new Map(
        [...dayCountsOfEvents(checkEvents).values()].map((c) => [`${c.event}|${c.day}`, `${c.count}:${c.xsum}`]),
      );
      const dayDiffs = [...new Set([...workerDays.keys(), ...expectedDays.keys()])]
        .filter((k) => workerDays.get(k) !== expectedDays.get(k))
        .map((k) => `${k}: worker ${workerDays.get(k)}, bench ${expectedDays.get(k)}`);
      const rollupDiffs = [...compareCounts(workerRollups, expectedRollups), ...dayDiffs];
      const builderOk = rollupDiffs.length === 0;
      if (!builderOk)
        errors.push(
          `bench rollup builder disagrees with the ingest worker on ${rollupDiffs.length} item(s), e.g. ${rollupDiffs.slice(0, 3).join('; ')}`,
        );
      console.log(
        `rollup check: the worker had counted all ${checkCount} events (${fixed(drainMs / 1000)} s after seeding ended); its ${workerRollups.size} rollup items and ${workerDays.size} day counters ${builderOk ? "equal the bench builder's item for item" : `DIFFER from the bench builder's in ${rollupDiffs.length}`}; stack idle from here on`,
      );

      // ---- 1. unfiltered totals from rollups, 10k vs 1M --------------------------------------
      console.log(
        `\nmeasuring the unfiltered trend: ${warmupRollups} warm-up + ${rollupRequests} measured requests per project, one at a time, alternating projects; ${loadNow()}`,
      );
      const unfilteredBody = { events: [{ id: '$pageview' }], date_from: '-30d', interval: 'day' };
      const allEventsBody = { events: [{ id: null }], date_from: '-30d', interval: 'day' };
      const latencies = new Map<string, number[]>(seeded.map((s) => [s.label, []]));
      const sources = new Map<string, number>();
      const errorsBefore = errors.length;
      for (const s of seeded) {
        const all = await trend(stack, s.projectId, allEventsBody);
        const total = sum(all.results.map((r) => r.count));
        if (all.source !== 'rollups')
          errors.push(`all-events trend on the ${s.label} project answered from '${all.source}', expected rollups`);
        if (total !== s.events)
          errors.push(`all-events trend on the ${s.label} project totals ${total}, seeded ${s.events}`);
      }
      for (let i = -warmupRollups; i < rollupRequests; i += 1) {
        // Alternate which project goes first, so drift on the machine hits both sizes alike.
        for (const s of i % 2 ? seeded : [...seeded].reverse()) {
          const r = await trend(stack, s.projectId, unfilteredBody);
          const total = sum(r.results.map((x) => x.count));
          if (total !== s.pageviews)
            errors.push(`unfiltered trend on the ${s.label} project totals ${total}, seeded ${s.pageviews} $pageview`);
          if (i < 0) continue;
          sources.set(String(r.source), (sources.get(String(r.source)) ?? 0) + 1);
          if (r.source !== 'rollups')
            errors.push(`unfiltered trend on the ${s.label} project: X-Trend-Source ${r.source}, expected rollups`);
          latencies.get(s.label)!.push(r.ms);
        }
      }
      const stats = seeded.map((s) => ({
        ...s,
        p50: percentile(latencies.get(s.label)!, 50),
        p99: percentile(latencies.get(s.label)!, 99),
      }));
      const [st, lt] = stats as [(typeof stats)[number], (typeof stats)[number]];
      const rollupRatio = lt.p50 / st.p50;
      console.log(
        `\n${table(
          ['project', 'events (synthetic)', '$pageview total', 'rollup items', 'requests', 'p50 ms', 'p99 ms'],
          stats.map((s) => [
            String(s.projectId),
            String(s.events),
            String(s.pageviews),
            String(s.items),
            String(latencies.get(s.label)!.length),
            fixed(s.p50),
            fixed(s.p99),
          ]),
        )}`,
      );
      console.log(
        `X-Trend-Source of the ${sum([...sources.values()])} measured requests: ${[...sources].map(([k, n]) => `${k} ${n}`).join(', ')}; ` +
          (errors.length > errorsBefore
            ? 'see errors'
            : 'every response (warm-up included) totalled the seeded $pageview count, and the all-events series the seeded size'),
      );
      console.log(`ratio p50(${large}) / p50(${small}): ${fixed(rollupRatio, 2)} (target <= ${RATIO_ROLLUPS_TARGET})`);
      rows.push(
        {
          benchmark: 'trends',
          metric: `unfiltered 30d @${small} (rollups) p50 / p99`,
          value: `${fixed(st.p50)} / ${fixed(st.p99)} ms`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: `unfiltered 30d @${large} (rollups) p50 / p99`,
          value: `${fixed(lt.p50)} / ${fixed(lt.p99)} ms`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: `p50 @${large} / p50 @${small}`,
          value: fixed(rollupRatio, 2),
          target: `<= ${RATIO_ROLLUPS_TARGET}`,
          status: rollupRatio <= RATIO_ROLLUPS_TARGET ? 'pass' : 'OVER TARGET',
        },
        {
          benchmark: 'trends',
          metric: `rollup builder = ingest worker (${checkCount} events)`,
          value: builderOk ? 'equal' : 'DIFFERENT',
          target: 'equal',
          status: builderOk ? 'pass' : 'ERROR',
        },
      );

      // ---- 2. filtered + breakdown over raw events, beside DuckDB ----------------------------
      const filteredBody = {
        events: [
          {
            id: '$pageview',
            properties: [{ key: '$browser', operator: 'exact', value: FILTER_BROWSERS, type: 'event' }],
          },
        ],
        breakdown: '$os',
        breakdown_type: 'event',
        date_from: '-30d',
        interval: 'day',
      };
      // 2a. Before compaction: every day is read from its raw event partitions.
      console.log(
        `\nthe filtered breakdown trend before compaction (raw event partitions): ${rawPathRequests} requests, one at a time; ${loadNow()}`,
      );
      const rawPathMs: number[] = [];
      let rawPathResults: TrendResult[] = [];
      for (let i = 0; i < rawPathRequests; i += 1) {
        try {
          const r = await trend(stack, rawProject, filteredBody);
          if (r.source !== 'events')
            errors.push(`filtered breakdown trend before compaction: X-Trend-Source ${r.source}, expected events`);
          rawPathMs.push(r.ms);
          rawPathResults = r.results;
        } catch (error) {
          errors.push(`filtered breakdown trend before compaction failed: ${(error as Error).message.slice(0, 200)}`);
        }
      }
      console.log(`  raw path: p50 ${fixed(percentile(rawPathMs, 50))} ms over ${rawPathMs.length} requests`);

      // 2b. The compactor, as the stack's scheduler would fire it: one pass over the due days.
      console.log(`compacting: npm run cron -- compact-events against the stack; ${loadNow()}`);
      const compaction = await runCompactor(stack);
      console.log(`  ${compaction.output}`);
      console.log(
        `  compactor wall time (process start to exit) ${fixed(compaction.ms / 1000, 1)} s = ${fixed(rawCount / (compaction.ms / 1000), 0)} events/s`,
      );

      // 2c. The measured requests: every day from its segments.
      console.log(
        `\nmeasuring the filtered breakdown trend: 1 warm-up + ${rawRequests} measured requests, one at a time; ${loadNow()}`,
      );
      const apiMs: number[] = [];
      const phaseMs = new Map<string, number[]>();
      let apiResults: TrendResult[] = [];
      let firstAfterCompaction: Awaited<ReturnType<typeof trend>> | undefined;
      let lastReadDesc = '';
      for (let i = -1; i < rawRequests; i += 1) {
        const r = await trend(stack, rawProject, filteredBody);
        if (r.source !== 'segments')
          errors.push(`filtered breakdown trend: X-Trend-Source ${r.source}, expected segments`);
        if (i < 0) {
          // The first read of the compacted days: the stack's process has none of their segments in memory yet.
          firstAfterCompaction = r;
          continue;
        }
        lastReadDesc = r.readDesc;
        apiMs.push(r.ms);
        for (const [phase, ms] of r.timing) phaseMs.set(phase, [...(phaseMs.get(phase) ?? []), ms]);
        apiResults = r.results;
      }
      const phaseNote = [...phaseMs].map(([phase, ms]) => `${phase} ${fixed(percentile(ms, 50), 1)}`).join(', ');
      console.log(
        `  server-side p50 per phase (Server-Timing), ms: ${phaseNote}; the rest is HTTP, routing, auth and JSON`,
      );
      console.log(
        `  first request after compaction (segments not yet in the process's memory): ${fixed(firstAfterCompaction?.ms ?? NaN)} ms, read ${fixed(firstAfterCompaction?.timing.get('read') ?? NaN, 1)} ms ("${firstAfterCompaction?.readDesc}"); measured requests read "${lastReadDesc}"`,
      );
      if (rawPathResults.length && JSON.stringify(rawPathResults) !== JSON.stringify(apiResults))
        errors.push('the trend from segments differs from the same trend from raw events');
      const apiP50 = percentile(apiMs, 50);
      const apiP99 = percentile(apiMs, 99);

      // The window the API used (project time zone UTC): today's UTC day and the 30 before it.
      const today = Date.UTC(
        new Date(nowMs).getUTCFullYear(),
        new Date(nowMs).getUTCMonth(),
        new Date(nowMs).getUTCDate(),
      );
      const from = today - 30 * DAY;
      const to = today + DAY - 1;
      const days = apiResults[0]?.days ?? [];
      if (
        days[0] !== new Date(from).toISOString().slice(0, 10) ||
        days.at(-1) !== new Date(today).toISOString().slice(0, 10)
      ) {
        errors.push(
          `API window ${days[0]}..${days.at(-1)} is not the expected ${new Date(from).toISOString().slice(0, 10)}..${new Date(today).toISOString().slice(0, 10)} (did the UTC day change during the run?)`,
        );
      }
      const apiCounts = new Map<string, number>();
      const apiTotals = new Map<string, number>();
      for (const r of apiResults) {
        const raw = r.breakdown_value;
        if (raw === OTHER_VALUE)
          errors.push('filtered breakdown trend returned an Other row; the bench expects fewer than 25 values');
        const value = raw === null || raw === undefined || raw === NULL_VALUE ? NONE : String(raw);
        apiTotals.set(value, r.count);
        r.data.forEach((n, i) => {
          if (n) apiCounts.set(`${value}|${r.days[i]}`, n);
        });
      }

      const floors: { ms: number; items: number }[] = [];
      for (let i = 0; i < 3; i += 1)
        floors.push(await readRawFloor(client, tableName, rawProject, '$pageview', from, to));
      const floorP50 = percentile(
        floors.map((f) => f.ms),
        50,
      );
      const pageviewsInWindow = events.filter(
        (e) => e.event === '$pageview' && Date.parse(e.timestamp) >= from && Date.parse(e.timestamp) <= to,
      ).length;
      if (floors.some((f) => f.items !== pageviewsInWindow))
        errors.push(`raw read returned ${floors.map((f) => f.items).join('/')} items, expected ${pageviewsInWindow}`);

      console.log(`DuckDB: load, then 1 warm-up + ${rawRequests} measured queries; ${loadNow()}`);
      const duck = await duckLoad(events);
      let duckCounts = new Map<string, number>();
      const duckMs: number[] = [];
      try {
        const sql = duckSql(from, to);
        for (let i = -1; i < rawRequests; i += 1) {
          const q = await duckQuery(duck.con, sql);
          if (i < 0) continue;
          duckMs.push(q.ms);
          duckCounts = q.counts;
        }
      } finally {
        duck.close();
      }
      const duckP50 = percentile(duckMs, 50);
      const duckTotals = new Map<string, number>();
      for (const [k, n] of duckCounts) {
        const value = k.slice(0, k.lastIndexOf('|'));
        duckTotals.set(value, (duckTotals.get(value) ?? 0) + n);
      }
      const diffs = compareCounts(apiCounts, duckCounts);
      // Ties by label, as the legacy endpoint orders rows (the None row has no special place).
      const label = (v: string) => (v === NONE ? 'None (i.e. no value)' : v);
      const expectedOrder = [...duckTotals]
        .sort((a, b) => b[1] - a[1] || (label(a[0]) < label(b[0]) ? -1 : 1))
        .map(([v]) => v);
      const apiOrder = [...apiTotals.keys()];
      const totalsDiff = compareCounts(apiTotals, duckTotals);
      const matched = diffs.length === 0 && totalsDiff.length === 0 && duckCounts.size > 0;
      if (!matched)
        errors.push(
          `API and DuckDB disagree: ${[...totalsDiff, ...diffs].length} difference(s), e.g. ${[...totalsDiff, ...diffs].slice(0, 4).join('; ')}`,
        );
      const orderNote =
        JSON.stringify(apiOrder.map((v) => (v === NONE ? 'None' : v))) ===
        JSON.stringify(expectedOrder.map((v) => (v === NONE ? 'None' : v)));
      const filteredTotal = sum([...apiTotals.values()]);
      const ratio = apiP50 / duckP50;

      console.log(
        `\n${table(
          ['$os', 'API events', 'DuckDB events'],
          expectedOrder.map((v) => [
            v === NONE ? 'None (no $os)' : v,
            String(apiTotals.get(v) ?? 0),
            String(duckTotals.get(v) ?? 0),
          ]),
        )}`,
      );
      console.log(
        `${filteredTotal} of ${rawCount} events matched ($pageview, $browser in ${FILTER_BROWSERS.join('/')}); ${apiResults.length} breakdown rows x ${days.length} days; ` +
          `per (value, day) counts ${diffs.length ? `DIFFER in ${diffs.length} cells` : `equal in all ${duckCounts.size} non-zero cells`}; ` +
          `row order ${orderNote ? 'matches' : 'DIFFERS from'} volume desc (ties by label)`,
      );
      if (!orderNote)
        errors.push(
          `breakdown row order ${JSON.stringify(apiOrder)} differs from DuckDB's ranking ${JSON.stringify(expectedOrder)}`,
        );
      console.log(
        `\n${table(
          ['engine', 'runs', 'p50 ms', 'p99 ms'],
          [
            [
              'API POST .../insights/trend?refresh=true (end to end, compacted)',
              String(apiMs.length),
              fixed(apiP50),
              fixed(apiP99),
            ],
            [
              '  the same before compaction (raw partitions)',
              String(rawPathMs.length),
              fixed(percentile(rawPathMs, 50)),
              fixed(percentile(rawPathMs, 99)),
            ],
            [
              'DuckDB in-memory SQL (query + read result)',
              String(duckMs.length),
              fixed(duckP50, 2),
              fixed(percentile(duckMs, 99), 2),
            ],
          ],
        )}\nfor reference, the same eventsByDay Queries from the bench process (${floors[0]?.items} $pageview items, unfiltered by browser): median of 3 ${fixed(floorP50)} ms` +
          `\nDuckDB load of ${rawCount} events (appender): ${fixed(duck.ms)} ms; ratio API p50 / DuckDB p50 = ${fixed(ratio, 1)} (target <= ${RATIO_DUCKDB_TARGET}); API end to end p50 ${fixed(apiP50)} ms (target <= ${END_TO_END_TARGET_MS} ms)`,
      );
      rows.push(
        {
          benchmark: 'trends',
          metric: `filtered+breakdown @${rawCount} API p50 / p99`,
          value: `${fixed(apiP50)} / ${fixed(apiP99)} ms`,
          target: `p50 <= ${END_TO_END_TARGET_MS} ms`,
          status: apiP50 <= END_TO_END_TARGET_MS ? 'pass' : 'OVER TARGET',
        },
        {
          benchmark: 'trends',
          metric: '  first request after compaction (no segment in memory yet)',
          value: `${fixed(firstAfterCompaction?.ms ?? NaN)} ms (read ${fixed(firstAfterCompaction?.timing.get('read') ?? NaN, 1)} ms)`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: '  server phases p50 (Server-Timing)',
          value: phaseNote,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: `  same trend before compaction (raw partitions) p50`,
          value: `${fixed(percentile(rawPathMs, 50))} ms`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: `  reading the ${floors[0]?.items} raw events alone (bench-side Queries)`,
          value: `${fixed(floorP50)} ms`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: `  compacting ${rawCount} events (one compactor pass)`,
          value: `${fixed(compaction.ms / 1000, 1)} s`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: `DuckDB same query p50 (load ${fixed(duck.ms, 0)} ms)`,
          value: `${fixed(duckP50, 2)} ms`,
          target: '-',
          status: 'info',
        },
        {
          benchmark: 'trends',
          metric: 'API p50 / DuckDB p50',
          value: fixed(ratio, 1),
          target: `<= ${RATIO_DUCKDB_TARGET}`,
          status: ratio <= RATIO_DUCKDB_TARGET ? 'pass' : 'OVER TARGET',
        },
        {
          benchmark: 'trends',
          metric: 'API numbers = DuckDB numbers',
          value: matched && orderNote ? 'equal' : 'DIFFERENT',
          target: 'equal',
          status: matched && orderNote ? 'pass' : 'ERROR',
        },
      );
      return { rows, errors: [...new Set(errors)] };
    } finally {
      client.destroy();
      await stack.stop();
    }
  },
};
