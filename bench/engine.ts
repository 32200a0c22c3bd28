/**
 * `npm run bench -- engine`: the trend engine in-process (no DynamoDB), on compacted day segments of
 * the trends benchmark's synthetic events (bench/trends.ts generator: 30 days, 2,000 distinct ids,
 * segments per (UTC day, event name) in chunks of 50k events, persons with a `plan` property).
 * The queries below, each at BENCH_ENGINE_SIZES events (default 100k and 1M; add 10M with
 * `BENCH_ENGINE_SIZES=100000,1000000,10000000`; `BENCH_ENGINE_QUERIES=b,i` runs only those):
 *   (a) filtered + breakdown count: $pageview, $browser in 3 values, breakdown $os, by day;
 *   (b) dau with a person-property filter (plan = pro);
 *   (c) p90 of a numeric property (amount) by day;
 *   (d) a formula of two series ($pageview, signed up) with compare;
 *   (e) (a) with a HogQL breakdown, `concat(properties.$os, ' ', properties.$browser)` (one evaluation
 *       per distinct (os, browser) tuple of a chunk), against (a)'s plain breakdown;
 *   (f) (a) with its filter as a HogQL expression (`properties.$browser IN (...)`): same answer as (a);
 *   (g) a HogQL filter `properties.$current_url ILIKE '%/pricing%'` against (g0), the same filter as a
 *       plain `icontains` property filter: same answer.
 *   (h) (a) broken down by a group property (`industry` of the event's `$group_0` company, 400
 *       companies, 90% of users in one) instead of `$os` (issue 23).
 *   (i) (b) with a cohort filter instead of the person property: a 100k-person cohort (the `pro` users
 *       among the events' 2,000 plus persons without events), its members handed over like the person
 *       join (built before the timing, as storage reads them); same answer as (b).
 * (e), (f), (g), (h) must stay within HOGQL_RATIO (1.5) of their plain twin, (i) within COHORT_RATIO of (b).
 * BENCH_ENGINE_QUERIES=a,h runs some only.
 * Each query reads what the trend function would (event names, projected columns, persons when used)
 * and is timed from the encoded segments to the response: decode + compute. Beside it: the row engine
 * it replaced (test/support/row-engine: segments decoded into event objects, then computed) up to 1M
 * events, and DuckDB on the same events when `@duckdb/node-api` is installed (see bench/trends.ts).
 * Heap: the peak of heapUsed + arrayBuffers above the level before the query (after a full GC), sampled
 * after every batch (columnar) or after decoding and after computing (rows).
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { encodeSegment, forEachRow, type FetchedSegment, type SegmentRow } from '#shared/segments/codec.ts';
import {
  eventPropertiesUsed,
  eventsToRead,
  type GroupLookup,
  groupTypesRead,
  needsEventNames,
  needsPersons,
  parseTrendRequest,
  resolveDateRange,
  type ProjectSettings,
  type TrendEvent,
  type TrendResponse,
} from '#shared/trends/index.ts';
import {
  computeTrendFromColumns,
  distinctIdsOnly,
  storedSource,
  type ColumnSource,
  type PersonJoin,
} from '#shared/trends/columnar/index.ts';
import type { CohortSets } from '#shared/trends/cohort-filters.ts';
import { computeTrendByRows } from '../test/support/row-engine/compute.ts';
import { fixed, heading, table } from './lib/format.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';
import { DISTINCT_IDS, duckdb, EVENT_MIX, FILTER_BROWSERS, syntheticProperties, weighted } from './trends.ts';
import { prng } from '../test/support/prng.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const DAYS = 30;
const NOW = Date.parse('2026-01-31T12:00:00Z');
const CHUNK_ROWS = 50_000;
const PLANS = [
  ['free', 0.7],
  ['pro', 0.25],
  ['enterprise', 0.05],
] as const;
/** Row engine baseline only up to this many events (it holds every event as an object). */
const ROWS_UP_TO = 1_000_000;

const TARGET_A_1M_MS = 150;
const TARGET_10M_MS = 1_500;
const TARGET_10M_HEAP_MB = 512;
const TARGET_HEAP_PER_M_MB = 32;
const TARGET_FLAT = 12;
const TARGET_DUCKDB_RATIO = 2;
/** A HogQL breakdown or filter against the same query written with plain properties (issue 22). */
const TARGET_HOGQL_RATIO = 1.5;
/** A cohort filter against the same query with a person-property filter (issue 23). */
const TARGET_COHORT_RATIO = 1.5;
/** The benchmark's cohort: its id in the requests, and its members (the issue's 100k persons). */
const BENCH_COHORT_ID = 1;
const BENCH_COHORT_SIZE = 100_000;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

interface Query {
  id: string;
  title: string;
  request: Record<string, unknown>;
  duckSql?: (from: number, to: number) => string;
  /** The plain-property query this HogQL one is measured against; `sameAnswer`: both must answer alike. */
  plain?: { id: string; sameAnswer: boolean; label?: string; target?: number };
  /** The row engine (the reference) does not read groups, nor cohorts: no row-engine column. */
  columnarOnly?: boolean;
}

const lit = (t: number) => `TIMESTAMP '${new Date(t).toISOString().replace('T', ' ').replace('Z', '')}'`;

export const QUERIES: Query[] = [
  {
    id: 'a',
    title: 'filtered + breakdown count',
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ key: '$browser', value: FILTER_BROWSERS }],
      breakdown: '$os',
      date_from: '-30d',
    },
    duckSql: (from, to) =>
      `SELECT os, strftime(ts, '%Y-%m-%d') AS day, count(*) AS n FROM events WHERE event = '$pageview' AND browser IN (${FILTER_BROWSERS.map((b) => `'${b}'`).join(', ')}) AND ts BETWEEN ${lit(from)} AND ${lit(to)} GROUP BY ALL`,
  },
  {
    id: 'b',
    title: 'dau, person-property filter',
    request: {
      events: [{ id: '$pageview', math: 'dau' }],
      properties: [{ key: 'plan', value: 'pro', type: 'person' }],
      date_from: '-30d',
    },
    duckSql: (from, to) =>
      `SELECT strftime(ts, '%Y-%m-%d') AS day, count(DISTINCT e.distinct_id) AS n FROM events e JOIN persons p ON p.distinct_id = e.distinct_id WHERE e.event = '$pageview' AND p.plan = 'pro' AND ts BETWEEN ${lit(from)} AND ${lit(to)} GROUP BY ALL`,
  },
  {
    id: 'c',
    title: 'p90 of a numeric property by day',
    request: {
      events: [{ id: '$pageview', math: 'p90', math_property: 'amount' }],
      date_from: '-30d',
      interval: 'day',
    },
    duckSql: (from, to) =>
      `SELECT strftime(ts, '%Y-%m-%d') AS day, quantile_cont(amount, 0.9) AS n FROM events WHERE event = '$pageview' AND ts BETWEEN ${lit(from)} AND ${lit(to)} GROUP BY ALL`,
  },
  {
    id: 'd',
    title: 'formula of two series, compare',
    request: {
      events: [{ id: '$pageview' }, { id: 'signed up' }],
      formula: 'B / A * 100',
      compare: true,
      date_from: '-30d',
    },
    duckSql: (from, to) =>
      `SELECT strftime(ts, '%Y-%m-%d') AS day, count(*) FILTER (WHERE event = '$pageview') AS a, count(*) FILTER (WHERE event = 'signed up') AS b FROM events WHERE event IN ('$pageview', 'signed up') AND ts BETWEEN ${lit(from - DAYS * DAY)} AND ${lit(to)} GROUP BY ALL`,
  },
  {
    id: 'e',
    title: 'HogQL breakdown concat($os, $browser)',
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ key: '$browser', value: FILTER_BROWSERS }],
      breakdown: "concat(properties.$os, ' ', properties.$browser)",
      breakdown_type: 'hogql',
      date_from: '-30d',
    },
    plain: { id: 'a', sameAnswer: false },
  },
  {
    id: 'f',
    title: 'HogQL filter $browser IN (...)',
    request: {
      events: [{ id: '$pageview' }],
      properties: [
        { type: 'hogql', key: `properties.$browser IN (${FILTER_BROWSERS.map((b) => `'${b}'`).join(', ')})` },
      ],
      breakdown: '$os',
      date_from: '-30d',
    },
    plain: { id: 'a', sameAnswer: true },
  },
  {
    id: 'g0',
    title: 'plain filter $current_url icontains',
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ key: '$current_url', operator: 'icontains', value: '/pricing' }],
      date_from: '-30d',
    },
  },
  {
    id: 'g',
    title: "HogQL filter $current_url ILIKE '%/pricing%'",
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ type: 'hogql', key: "properties.$current_url ILIKE '%/pricing%'" }],
      date_from: '-30d',
    },
    plain: { id: 'g0', sameAnswer: true },
  },
  {
    id: 'h',
    title: 'group breakdown (industry of $group_0)',
    request: {
      events: [{ id: '$pageview' }],
      properties: [{ key: '$browser', value: FILTER_BROWSERS }],
      breakdown: 'industry',
      breakdown_type: 'group',
      breakdown_group_type_index: 0,
      date_from: '-30d',
    },
    plain: { id: 'a', sameAnswer: false, label: 'group / event-property breakdown' },
    columnarOnly: true,
  },
  {
    id: 'i',
    title: 'dau, cohort filter (100k persons)',
    request: {
      events: [{ id: '$pageview', math: 'dau' }],
      properties: [{ type: 'cohort', key: 'id', value: BENCH_COHORT_ID }],
      date_from: '-30d',
    },
    plain: { id: 'b', sameAnswer: true, label: 'cohort / person-property', target: TARGET_COHORT_RATIO },
    columnarOnly: true,
  },
];

/** Group type 0 of the synthetic events: users fall into 400 companies, one in ten in none. */
const COMPANIES = 400;
const INDUSTRIES = ['tech', 'retail', 'finance', 'health', 'media', 'energy', 'travel'];
const companyOf = (user: number) => (user % 10 === 0 ? undefined : `company-${user % COMPANIES}`);
const companyProperties = new Map(
  Array.from({ length: COMPANIES }, (_, k) => [
    `company-${k}`,
    { industry: INDUSTRIES[k % INDUSTRIES.length], seats: k },
  ]),
);

/** The `pro` users (as in (b)) and persons without events, BENCH_COHORT_SIZE in all: what the domain loads per query. */
function benchCohort(plans: readonly string[]): CohortSets {
  const ids: number[] = [];
  plans.forEach((plan, user) => {
    if (plan === 'pro') ids.push(user);
  });
  for (let i = 0; ids.length < BENCH_COHORT_SIZE; i += 1) ids.push(DISTINCT_IDS + i);
  return new Map([[BENCH_COHORT_ID, { name: 'Pro', members: new Set(ids) }]]);
}

const PROJECT: ProjectSettings = { timezone: 'UTC', week_start_day: 0, test_account_filters: [] };

interface Dataset {
  events: number;
  /** Chunks per event name, in day order. */
  segments: Map<string, FetchedSegment[]>;
  compressedBytes: number;
  plans: string[];
  encodeMs: number;
}

/** The trends benchmark's event shape, generated day by day straight into segments (no 10M objects at once). */
export function generate(
  count: number,
  seed: number,
  onDay?: (rows: { event: string; row: SegmentRow }[]) => void,
): Dataset {
  const started = performance.now();
  const rng = prng(seed);
  const plans = Array.from({ length: DISTINCT_IDS }, () => weighted(rng, PLANS));
  const segments = new Map<string, FetchedSegment[]>();
  let compressedBytes = 0;
  const start = NOW - DAYS * DAY;
  const firstDay = Math.floor(start / DAY) * DAY;
  for (let d = 0; d <= DAYS; d += 1) {
    const dayStart = firstDay + d * DAY;
    const from = Math.max(dayStart, start);
    const to = Math.min(dayStart + DAY, NOW);
    if (to <= from) continue;
    const inDay = Math.round((count * (to - from)) / (DAYS * DAY));
    const rows: { event: string; row: SegmentRow }[] = [];
    for (let i = 0; i < inDay; i += 1) {
      const t = from + Math.floor(rng() * (to - from));
      const user = Math.floor(rng() * DISTINCT_IDS);
      const properties = syntheticProperties(rng, user, t);
      const company = companyOf(user);
      if (company !== undefined) properties.$group_0 = company;
      rows.push({ event: weighted(rng, EVENT_MIX), row: { distinct_id: `user-${user}`, t, properties } });
    }
    onDay?.(rows);
    const byName = new Map<string, SegmentRow[]>();
    for (const { event, row } of rows) {
      const list = byName.get(event);
      if (list) list.push(row);
      else byName.set(event, [row]);
    }
    for (const [event, list] of byName) {
      list.sort((a, b) => a.t - b.t);
      for (let at = 0; at < list.length; at += CHUNK_ROWS) {
        const encoded = encodeSegment(list.slice(at, at + CHUNK_ROWS), dayStart);
        compressedBytes +=
          encoded.time.length + encoded.dids.length + [...encoded.columns.values()].reduce((n, c) => n + c.length, 0);
        const chunks = segments.get(event) ?? [];
        chunks.push(encoded);
        segments.set(event, chunks);
      }
    }
  }
  return { events: count, segments, compressedBytes, plans, encodeMs: performance.now() - started };
}

interface Measured {
  ms: number;
  heapMb: number;
  response: TrendResponse;
}

const heapNow = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/** What the trend function reads for this request: names, projected columns, the read window; persons when used. */
function plan(data: Dataset, request: Record<string, unknown>) {
  const query = parseTrendRequest(request);
  const now = new Date(NOW);
  const firstEventAt = new Date(NOW - DAYS * DAY);
  const range = resolveDateRange(query, PROJECT, now, firstEventAt);
  const read = eventsToRead(query, range, firstEventAt, now)!;
  const names = needsEventNames(query, []) ?? [...data.segments.keys()];
  const persons = needsPersons(query, PROJECT, []);
  const projection = { properties: eventPropertiesUsed(query, PROJECT, []), distinctIds: persons };
  const segments = names.flatMap((name) => (data.segments.get(name) ?? []).map((segment) => ({ name, segment })));
  const personOf = new Map(
    // Person ids are integers, as the trend function's person join gives them (cohort members are those ids).
    data.plans.map((plan, user) => [`user-${user}`, { person: String(user), properties: { plan } }]),
  );
  const join: PersonJoin = persons ? (d) => personOf.get(d) ?? distinctIdsOnly(d) : distinctIdsOnly;
  // As the trend function loads them: the groups' properties once per query, looked up in memory.
  const groups: GroupLookup | undefined = groupTypesRead(query, PROJECT, []).length
    ? (index, key) => (index === 0 ? companyProperties.get(key) : undefined)
    : undefined;
  // Like the person join, the cohort's members are what storage hands the engine (the domain pages them once per query).
  const cohorts = JSON.stringify(request.properties ?? null).includes('"cohort"') ? benchCohort(data.plans) : undefined;
  return { query, now, firstEventAt, read, segments, projection, join, personOf, persons, groups, cohorts };
}

export function runColumnar(data: Dataset, request: Record<string, unknown>, sampleHeap = true): Measured {
  const p = plan(data, request);
  gc();
  const before = heapNow();
  let peak = before;
  const started = performance.now();
  const inner = storedSource(
    { segments: p.segments, rows: [], from: p.read.from.getTime(), to: p.read.to.getTime(), projection: p.projection },
    p.join,
  );
  const source: ColumnSource = {
    from: inner.from,
    to: inner.to,
    forEachBatch: (visit) =>
      inner.forEachBatch((batch) => {
        visit(batch);
        if (sampleHeap) peak = Math.max(peak, heapNow());
      }),
  };
  const response = computeTrendFromColumns(p.query, {
    source,
    project: PROJECT,
    actions: [],
    now: p.now,
    firstEventAt: p.firstEventAt,
    groups: p.groups,
    cohorts: p.cohorts,
  });
  const ms = performance.now() - started;
  peak = Math.max(peak, heapNow());
  return { ms, heapMb: (peak - before) / 2 ** 20, response };
}

/** The replaced path: segments decoded into event objects (old readTrendRows), persons set on each, the row engine. */
function runRows(data: Dataset, request: Record<string, unknown>): Measured {
  const p = plan(data, request);
  gc();
  const before = heapNow();
  const started = performance.now();
  const lo = p.read.from.getTime();
  const hi = p.read.to.getTime();
  const events: TrendEvent[] = [];
  for (const { name, segment } of p.segments) {
    forEachRow(segment, p.projection, (distinctId, t, properties) => {
      if (t >= lo && t <= hi)
        events.push({
          event: name,
          distinct_id: distinctId,
          person_id: distinctId,
          timestamp: t,
          properties,
          person_properties: {},
        });
    });
  }
  if (p.persons) {
    for (const e of events) {
      const person = p.personOf.get(e.distinct_id);
      if (person) {
        e.person_id = person.person;
        e.person_properties = person.properties;
      }
    }
  }
  const decoded = heapNow();
  const response = computeTrendByRows(p.query, {
    events,
    project: PROJECT,
    actions: [],
    now: p.now,
    firstEventAt: p.firstEventAt,
  });
  const ms = performance.now() - started;
  const peak = Math.max(decoded, heapNow());
  return { ms, heapMb: (peak - before) / 2 ** 20, response };
}

function repeat(runs: number, once: () => Measured): Measured {
  const all = Array.from({ length: runs }, once);
  return {
    ms: median(all.map((m) => m.ms)),
    heapMb: Math.max(...all.map((m) => m.heapMb)),
    response: all[0]!.response,
  };
}

const sameAnswer = (a: TrendResponse, b: TrendResponse) => JSON.stringify(a) === JSON.stringify(b);
/** The numbers of an answer, without the echo of the request (a HogQL filter and its plain twin are echoed as sent). */
const numbersOf = (r: TrendResponse) =>
  JSON.stringify(r.result.map((s) => [s.breakdown_value, s.data, s.count, s.aggregated_value]));

// ---------------------------------------------------------------------------------------------
// DuckDB, when installed

interface Duck {
  query(sql: string): Promise<number>;
  close(): void;
  loadMs: number;
}

async function duckFor(count: number, seed: number): Promise<Duck | null> {
  let api: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    api = await duckdb();
  } catch {
    return null;
  }
  const started = performance.now();
  const { DuckDBInstance, timestampValue } = api;
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  await con.run(
    'CREATE TABLE events (event VARCHAR, distinct_id VARCHAR, ts TIMESTAMP, browser VARCHAR, os VARCHAR, amount DOUBLE)',
  );
  await con.run('CREATE TABLE persons (distinct_id VARCHAR, plan VARCHAR)');
  const appender = await con.createAppender('events');
  const data = generate(count, seed, (rows) => {
    for (const { event, row } of rows) {
      const p = row.properties;
      appender.appendVarchar(event);
      appender.appendVarchar(row.distinct_id);
      appender.appendTimestamp(timestampValue(BigInt(row.t) * 1000n));
      for (const v of [p.$browser, p.$os]) {
        if (typeof v === 'string') appender.appendVarchar(v);
        else appender.appendNull();
      }
      appender.appendDouble(p.amount as number);
      appender.endRow();
    }
  });
  appender.flushSync();
  appender.closeSync();
  const persons = await con.createAppender('persons');
  data.plans.forEach((plan, user) => {
    persons.appendVarchar(`user-${user}`);
    persons.appendVarchar(plan);
    persons.endRow();
  });
  persons.flushSync();
  persons.closeSync();
  return {
    loadMs: performance.now() - started,
    async query(sql) {
      const t = performance.now();
      const reader = await con.runAndReadAll(sql);
      reader.getRowObjectsJS();
      return performance.now() - t;
    },
    close() {
      con.closeSync();
      instance.closeSync();
    },
  };
}

/** BENCH_ENGINE_QUERIES (`a,h`): only those queries (a query's plain twin must be among them). */
function queries(): Query[] {
  const only = process.env.BENCH_ENGINE_QUERIES?.split(',').map((s) => s.trim());
  return only ? QUERIES.filter((q) => only.includes(q.id)) : QUERIES;
}

function sizes(): number[] {
  const raw = process.env.BENCH_ENGINE_SIZES ?? '100000,1000000';
  return raw.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n <= 0) throw new Error(`BENCH_ENGINE_SIZES: '${s}' is not a positive integer`);
    return n;
  });
}

const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1_000}k`);

export const engineBenchmark: Benchmark = {
  name: 'engine',
  title:
    'Trend engine in-process on day segments: columnar vs the row engine (and DuckDB when installed), 100k / 1M (/ 10M) events',
  async run(): Promise<BenchResult> {
    const rows: SummaryRow[] = [];
    const errors: string[] = [];
    const lines: string[][] = [];
    const columnarMs = new Map<string, number>();
    const answers = new Map<string, TrendResponse>();
    for (const n of sizes()) {
      const seed = 42;
      const data = generate(n, seed);
      console.log(
        `${label(n)} events: generated and encoded in ${fixed(data.encodeMs / 1000, 1)} s, ${fixed(data.compressedBytes / 2 ** 20, 1)} MiB of gzipped columns`,
      );
      const duck = await duckFor(n, seed);
      if (!duck && n === sizes()[0])
        console.log(
          'DuckDB is not installed (npm install --no-save @duckdb/node-api@1.5.6-r.1): its column stays empty',
        );
      const runs = n >= 10_000_000 ? 2 : n >= 1_000_000 ? 3 : 5;
      for (const q of queries()) {
        // Heap from one run sampling after every batch; times from runs that do not sample (memoryUsage() costs).
        const sampled = runColumnar(data, q.request, true);
        const col = { ...repeat(runs, () => runColumnar(data, q.request, false)), heapMb: sampled.heapMb };
        columnarMs.set(`${q.id}:${n}`, col.ms);
        answers.set(q.id, col.response);
        let rowFig = '-';
        let rowHeap = '-';
        if (n <= ROWS_UP_TO && !q.columnarOnly) {
          const byRows = repeat(n >= 1_000_000 ? 1 : 3, () => runRows(data, q.request));
          rowFig = fixed(byRows.ms, 1);
          rowHeap = fixed(byRows.heapMb, 0);
          if (!sameAnswer(col.response, byRows.response))
            errors.push(`(${q.id}) at ${label(n)}: the columnar and row engines answer differently`);
        }
        let duckFig = '-';
        let ratio = NaN;
        if (duck && q.duckSql) {
          const sql = q.duckSql(NOW - DAYS * DAY, NOW);
          await duck.query(sql);
          const duckMs = median(await Promise.all(Array.from({ length: runs }, () => duck.query(sql))));
          duckFig = fixed(duckMs, 1);
          ratio = col.ms / duckMs;
        }
        const perM = col.heapMb / (n / 1_000_000);
        lines.push([
          `(${q.id}) ${q.title}`,
          label(n),
          fixed(col.ms, 1),
          fixed(col.heapMb, 1),
          fixed(perM, 1),
          rowFig,
          rowHeap,
          duckFig,
          Number.isNaN(ratio) ? '-' : fixed(ratio, 1),
        ]);
        rows.push({
          benchmark: 'engine',
          metric: `(${q.id}) ${q.title}, ${label(n)} events`,
          value: `${fixed(col.ms, 1)} ms, ${fixed(col.heapMb, 0)} MB`,
          target:
            q.id === 'a' && n === 1_000_000
              ? `<= ${TARGET_A_1M_MS} ms`
              : n === 10_000_000
                ? `<= ${TARGET_10M_MS} ms, ${TARGET_10M_HEAP_MB} MB`
                : '-',
          status: 'info',
        });
        const last = rows.at(-1)!;
        if (q.id === 'a' && n === 1_000_000) last.status = col.ms <= TARGET_A_1M_MS ? 'pass' : 'OVER TARGET';
        if (n === 10_000_000)
          last.status = col.ms <= TARGET_10M_MS && col.heapMb <= TARGET_10M_HEAP_MB ? 'pass' : 'OVER TARGET';
        if (q.id === 'a' && n >= 1_000_000)
          rows.push({
            benchmark: 'engine',
            metric: `(a) peak heap per 1M events at ${label(n)}`,
            value: `${fixed(perM, 1)} MB`,
            target: `<= ${TARGET_HEAP_PER_M_MB} MB`,
            status: perM <= TARGET_HEAP_PER_M_MB ? 'pass' : 'OVER TARGET',
          });
        if (q.plain) {
          const plainMs = columnarMs.get(`${q.plain.id}:${n}`)!;
          const vsPlain = col.ms / plainMs;
          if (q.plain.sameAnswer && numbersOf(col.response) !== numbersOf(answers.get(q.plain.id)!))
            errors.push(`(${q.id}) at ${label(n)}: answers differently from (${q.plain.id})`);
          const target = q.plain.target ?? TARGET_HOGQL_RATIO;
          rows.push({
            benchmark: 'engine',
            metric: `(${q.id}) ${label(n)}: ${q.plain.label ?? 'HogQL / plain'} (${q.plain.id})`,
            value: `${fixed(vsPlain, 2)} (${fixed(col.ms, 1)} / ${fixed(plainMs, 1)} ms)`,
            target: n >= 1_000_000 ? `<= ${target}` : '-',
            status: n >= 1_000_000 ? (vsPlain <= target ? 'pass' : 'OVER TARGET') : 'info',
          });
        }
        if (!Number.isNaN(ratio))
          rows.push({
            benchmark: 'engine',
            metric: `(${q.id}) ${label(n)}: columnar / DuckDB`,
            value: fixed(ratio, 1),
            target: q.id === 'a' && n === 1_000_000 ? `<= ${TARGET_DUCKDB_RATIO}` : '-',
            status: q.id === 'a' && n === 1_000_000 ? (ratio <= TARGET_DUCKDB_RATIO ? 'pass' : 'OVER TARGET') : 'info',
          });
      }
      duck?.close();
    }
    for (const q of queries()) {
      const m1 = columnarMs.get(`${q.id}:1000000`);
      const m10 = columnarMs.get(`${q.id}:10000000`);
      if (m1 !== undefined && m10 !== undefined)
        rows.push({
          benchmark: 'engine',
          metric: `(${q.id}) 10M time / 1M time`,
          value: fixed(m10 / m1, 1),
          target: `<= ${TARGET_FLAT}`,
          status: m10 / m1 <= TARGET_FLAT ? 'pass' : 'OVER TARGET',
        });
    }
    heading('Trend engine in-process: decode + compute from encoded day segments (UTC, 30 days)');
    console.log(
      table(
        [
          'query',
          'events',
          'columnar ms',
          'peak MB',
          'MB / 1M events',
          'row engine ms',
          'row peak MB',
          'DuckDB ms',
          'columnar / DuckDB',
        ],
        lines,
        ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      ),
    );
    return { rows, errors };
  },
};
