// Relative dates are resolved against the one clock, frozen for this file; every trend here is "big".
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';
process.env.ANALYTICS_LAKE_ROUTING_EVENTS = '5';
// Every trend here is asked twice (routed, and in-process alone): more than the analytics limit allows a minute.
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { config } from '#shared/config.ts';
import { personsVersion } from '#shared/db/projects.ts';
import { getQueryStatus } from '#shared/db/query-store.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { drainPersonDeletions } from '#shared/domain/person-deletions.ts';
import { runQueuedQuery } from '#shared/domain/query/index.ts';
import { type Client, eventually, newProject, useApi } from '../support/api.ts';
import { withItemsRead } from '../support/items-read.ts';

/**
 * Trends above the routing threshold: the closed days current in the lake come from DuckDB over the
 * lake's files, the rest (today, days changed since their lake write) from the in-process engine,
 * each bucket wholly from one source. Every answer must equal the in-process answer of the same
 * trend (the threshold raised for that one request), while the answer says which engines ran.
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
// 2024-04-10 (Wednesday) .. 2024-04-20 (Saturday, today): weeks starting Monday the 8th and the 15th.
const DAYS = Array.from({ length: 11 }, (_, d) => new Date(Date.parse('2024-04-10T00:00:00Z') + d * 86_400_000)).map(
  (t) => t.toISOString().slice(0, 10),
);
const browsers = ['Chrome', 'Safari', 'Firefox', undefined];
const batch = DAYS.flatMap((day, d) =>
  Array.from({ length: d === 10 ? 6 : 12 }, (_, k) => ({
    event: ['$pageview', 'signed up', '$pageview'][k % 3]!,
    // Every user is active every day: a stale person id in the lake would change dau.
    distinct_id: `user-${(d + k) % 9}`,
    timestamp: `${day}T${String(1 + 2 * k).padStart(2, '0')}:15:00.000Z`,
    uuid: `0190f100-0000-7000-8000-${String(d * 100 + k).padStart(12, '0')}`,
    properties: { ...(browsers[k % 4] ? { $browser: browsers[k % 4] } : {}), amount: k },
  })),
);

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23')).values()].reduce((a, b) => a + b, 0);

const compact = async (projectId: number, days: string[], at: number) => {
  for (const day of days) await compactDay(projectId, day, new Date(at));
};

const routing = config().lakeRoutingEvents;
afterEach(() => {
  config().lakeRoutingEvents = routing;
});

/** The legacy trend as routed, and as the in-process engine alone answers it (threshold raised). */
async function trendBoth(c: Client, projectId: number, request: Record<string, unknown>) {
  const path = `/api/environments/${projectId}/insights/trend/?refresh=true`;
  const routed = await c.post(path, request);
  config().lakeRoutingEvents = Number.MAX_SAFE_INTEGER;
  const plain = await c.post(path, request);
  config().lakeRoutingEvents = routing;
  expect(routed.status).toBe(200);
  expect(plain.status).toBe(200);
  expect(plain.body.query_engine).toBeUndefined();
  return { routed, plain };
}

/** The Server-Timing lake phase: how many buckets each source answered. */
const lakeBuckets = (headers: Headers) => {
  const m = /lake;dur=[\d.]+;desc="[a-z+]+: (\d+) buckets from the lake, (\d+) in-process"/.exec(
    headers.get('server-timing') ?? '',
  );
  return m ? { lake: Number(m[1]), inProcess: Number(m[2]) } : null;
};

/** The day counters (DayCount items) DynamoDB hands back while `run` runs. */
async function countersRead<T>(run: () => Promise<T>): Promise<{ result: T; counters: number }> {
  let counters = 0;
  const result = await withItemsRead((item) => {
    if (item.entity === 'DayCount') counters += 1;
  }, run);
  return { result, counters };
}

/** A filter every event passes: unfiltered totals are the hourly rollups' (cheap at any size), never routed. */
const ALL = [{ key: 'amount', operator: 'gte', value: 0 }];

const TRENDS: [string, Record<string, unknown>][] = [
  [
    'count by day, cumulative',
    { events: [{ id: '$pageview', properties: ALL }], display: 'ActionsLineGraphCumulative', date_from: '-10d' },
  ],
  [
    'dau by day, two series and a formula',
    {
      events: [{ id: '$pageview', math: 'dau' }, { id: 'signed up' }],
      formula: 'A + B',
      date_from: '-10d',
    },
  ],
  [
    'a breakdown with Other (counts add up)',
    {
      events: [{ id: '$pageview' }, { id: 'signed up' }],
      breakdown: '$browser',
      breakdown_limit: 1,
      date_from: '-10d',
    },
  ],
  ['dau by a breakdown', { events: [{ id: null, math: 'dau' }], breakdown: '$browser', date_from: '-10d' }],
  [
    'weeks straddling lake and in-process days',
    {
      events: [
        { id: '$pageview', math: 'dau' },
        { id: 'signed up', properties: [{ key: 'amount', operator: 'gt', value: 3 }] },
      ],
      interval: 'week',
      date_from: '-10d',
    },
  ],
  ['hours', { events: [{ id: '$pageview', properties: ALL }], interval: 'hour', date_from: '-2d' }],
  [
    'sum, min, max and avg of an event property (each bucket from one source)',
    {
      events: [
        { id: '$pageview', math: 'sum', math_property: 'amount' },
        { id: 'signed up', math: 'min', math_property: 'amount' },
        { id: null, math: 'max', math_property: 'amount' },
        { id: '$pageview', math: 'avg', math_property: 'amount' },
      ],
      date_from: '-10d',
    },
  ],
  [
    'a sum by a breakdown with Other (sums add up), by week',
    {
      events: [{ id: '$pageview', math: 'sum', math_property: 'amount' }],
      breakdown: '$browser',
      breakdown_limit: 1,
      interval: 'week',
      date_from: '-10d',
    },
  ],
];

describe('big trends answered by the lake engine, merged exactly', () => {
  let p: { projectId: number; token: string; key: string };
  let c: Client;
  beforeAll(async () => {
    p = await newProject(api.as);
    c = api.as(p.key);
    expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
    await eventually(async () => expect(await total(p.projectId)).toBe(batch.length), 90_000);
    await compact(p.projectId, DAYS, NOW + 70_000);
  }, 300_000);

  it.each(TRENDS)('%s: the numbers of the in-process engine, the closed days from the lake', async (_, request) => {
    const { routed, plain } = await trendBoth(c, p.projectId, request);
    expect(routed.body.result).toEqual(plain.body.result);
    expect(routed.body.result.length).toBeGreaterThan(0);
    // Today is never the lake's: the answer says both engines ran.
    expect(routed.body.query_engine).toBe('duckdb+columnar');
    expect(routed.headers.get('x-trend-source')).toBe('lake');
    const buckets = lakeBuckets(routed.headers)!;
    expect(buckets.lake).toBeGreaterThan(0);
    expect(buckets.inProcess).toBeGreaterThan(0);
  });

  it('the week holding today is in-process, the earlier week from the lake', async () => {
    const { routed, plain } = await trendBoth(c, p.projectId, {
      events: [{ id: '$pageview', math: 'dau' }],
      interval: 'week',
      date_from: '-10d',
    });
    expect(lakeBuckets(routed.headers)).toEqual({ lake: 1, inProcess: 1 });
    expect(routed.body.result[0].data).toEqual(plain.body.result[0].data);
    // The merge is not vacuous: both weeks counted people.
    expect(plain.body.result[0].data.every((v: number) => v > 0)).toBe(true);
  });

  it('below the threshold, or for a trend the lake cannot print exactly, the in-process path as before', async () => {
    config().lakeRoutingEvents = batch.length;
    const small = await c.post(`/api/environments/${p.projectId}/insights/trend/?refresh=true`, {
      events: [{ id: '$pageview', properties: ALL }],
      date_from: '-10d',
    });
    expect(small.body.query_engine).toBeUndefined();
    expect(small.headers.get('x-trend-source')).toBe('segments');
    config().lakeRoutingEvents = routing;
    // Unfiltered totals: the hourly rollups, whatever the range holds.
    const totals = await c.post(`/api/environments/${p.projectId}/insights/trend/?refresh=true`, {
      events: [{ id: '$pageview' }],
      date_from: '-10d',
    });
    expect(totals.headers.get('x-trend-source')).toBe('rollups');
    const weekly = await c.post(`/api/environments/${p.projectId}/insights/trend/?refresh=true`, {
      events: [{ id: '$pageview', math: 'weekly_active' }],
      date_from: '-10d',
    });
    expect(weekly.status).toBe(200);
    expect(weekly.body.query_engine).toBeUndefined();
  });

  it('below the threshold the day counters are read once: the routing’s read is the in-process read’s', async () => {
    const engine = config().lakeEngine;
    const path = `/api/environments/${p.projectId}/insights/trend/?refresh=true`;
    const requests = [
      { events: [{ id: '$pageview', properties: ALL }], date_from: '-10d' },
      { events: [{ id: null, properties: ALL }], date_from: '-10d' },
      {
        events: [
          { id: '$pageview', properties: ALL },
          { id: 'signed up', math: 'dau' },
        ],
        date_from: '-10d',
      },
    ];
    try {
      for (const request of requests) {
        config().lakeRoutingEvents = Number.MAX_SAFE_INTEGER;
        const withLake = await countersRead(() => c.post(path, request));
        config().lakeEngine = undefined;
        const withoutLake = await countersRead(() => c.post(path, request));
        config().lakeEngine = engine;
        expect(withLake.result.status).toBe(200);
        expect(withLake.result.headers.get('x-trend-source')).toBe('segments');
        expect(withLake.result.body.result).toEqual(withoutLake.result.body.result);
        // Not vacuous: the in-process read reads counters (11 days, one or two names).
        expect(withoutLake.counters).toBeGreaterThanOrEqual(11);
        expect(withLake.counters).toBe(withoutLake.counters);
      }
    } finally {
      config().lakeEngine = engine;
    }
  });

  it('TrendsQuery on /query: the same numbers, blocking and through the async flow (202, then query_status)', {
    timeout: 120_000,
  }, async () => {
    const path = `/api/environments/${p.projectId}/query/`;
    const query = {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }],
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
      interval: 'day',
      dateRange: { date_from: '-10d' },
    };
    const blocking = await c.post(path, { query, refresh: 'blocking' });
    expect(blocking.status).toBe(200);
    expect(blocking.body.query_engine).toBe('duckdb+columnar');
    config().lakeRoutingEvents = Number.MAX_SAFE_INTEGER;
    const plain = await c.post(path, { query: { ...query, interval: 'day' }, refresh: 'force_blocking' });
    config().lakeRoutingEvents = routing;
    expect(plain.body.query_engine).toBeUndefined();
    expect(blocking.body.results).toEqual(plain.body.results);
    const started = await c.post(path, { query, refresh: 'force_async' });
    expect(started.status).toBe(202);
    expect(started.body.query_status.complete).toBe(false);
    // What the run_queries worker does with the message, in this process: the shared queue pollers run on
    // the real clock, which this file freezes (to them the run's status has long expired).
    const id = started.body.query_status.id as string;
    const record = await getQueryStatus(p.projectId, id, new Date(NOW));
    await runQueuedQuery({ project_id: p.projectId, query_id: id, run_id: record!.run_id }, Date.now() + 60_000, 1);
    const done = await c.get(`${path}${id}/`);
    expect(done.body.query_status.complete).toBe(true);
    expect(done.body.query_status.results.query_engine).toBe('duckdb+columnar');
    expect(done.body.query_status.results.results).toEqual(plain.body.results);
  });

  it('a deletion after compaction is reflected at once (its days are not current until rewritten)', {
    timeout: 240_000,
  }, async () => {
    const request = { events: [{ id: null, properties: ALL }], date_from: '-10d' };
    const before = await trendBoth(c, p.projectId, request);
    expect(lakeBuckets(before.routed.headers)).toEqual({ lake: 10, inProcess: 1 });
    const gone = 'user-4';
    const deleted = batch.filter((e) => e.distinct_id === gone);
    let sent = false;
    await drainPersonDeletions({
      receive: async () => {
        if (sent) return [];
        sent = true;
        const body = {
          project_id: p.projectId,
          person_id: 1,
          distinct_ids: [gone],
          requested_at: new Date(NOW + 6 * 60_000).toISOString(),
        };
        return [{ body: JSON.stringify(body), receiptHandle: 'r', receiveCount: 1 }];
      },
      acknowledge: async () => {},
      release: async () => {},
      timeLeftMs: () => 600_000,
      continueLater: async () => {},
    });
    // The ingest worker takes the removals out of the counters: no compaction has run since.
    await eventually(async () => expect(await total(p.projectId)).toBe(batch.length - deleted.length), 60_000);
    const after = await trendBoth(c, p.projectId, request);
    expect(after.routed.body.result).toEqual(after.plain.body.result);
    expect(after.routed.body.result[0].count).toBe(batch.length - deleted.length);
    // Every closed day held one of its events: none is the lake's until it is rewritten.
    expect(lakeBuckets(after.routed.headers)).toBeNull();
    await compact(p.projectId, DAYS, NOW + 10 * 60_000);
    const rewritten = await trendBoth(c, p.projectId, request);
    expect(lakeBuckets(rewritten.routed.headers)).toEqual({ lake: 10, inProcess: 1 });
    expect(rewritten.routed.body.result).toEqual(rewritten.plain.body.result);
  });

  it('a person merge after compaction keeps dau exact: person counts leave the lake until its days are rewritten', {
    timeout: 240_000,
  }, async () => {
    const dau = { events: [{ id: '$pageview', math: 'dau' }], date_from: '-10d' };
    const count = { events: [{ id: '$pageview', properties: ALL }], date_from: '-10d' };
    const version = await personsVersion(p.projectId);
    const pre = await trendBoth(c, p.projectId, dau);
    expect(lakeBuckets(pre.routed.headers)?.lake).toBe(10);
    const identify = {
      event: '$identify',
      distinct_id: 'user-1',
      timestamp: '2024-04-20T11:00:00.000Z',
      uuid: '0190f100-0000-7000-8000-999999999999',
      properties: { $anon_distinct_id: 'user-2' },
    };
    expect((await api.as().post('/batch', { api_key: p.token, batch: [identify] })).body.accepted).toBe(1);
    await eventually(async () => expect(await personsVersion(p.projectId)).toBeGreaterThan(version), 60_000);
    const merged = await trendBoth(c, p.projectId, dau);
    expect(merged.routed.body.result).toEqual(merged.plain.body.result);
    // Not vacuous: user-1 and user-2 were both active on some closed days, now one person there.
    expect(merged.plain.body.result[0].count).toBeLessThan(pre.plain.body.result[0].count);
    expect(lakeBuckets(merged.routed.headers)).toBeNull();
    // Counting events does not depend on persons: still the lake's.
    const events = await c.post(`/api/environments/${p.projectId}/insights/trend/?refresh=true`, count);
    expect(lakeBuckets(events.headers)?.lake).toBe(10);
    // Rewritten under the new person map, the days are the lake's again, with the merged person.
    await compact(p.projectId, DAYS.slice(0, -1), NOW + 20 * 60_000);
    const rewritten = await trendBoth(c, p.projectId, dau);
    expect(lakeBuckets(rewritten.routed.headers)).toEqual({ lake: 10, inProcess: 1 });
    expect(rewritten.routed.body.result).toEqual(rewritten.plain.body.result);
  });
  it('in a zone where a local day straddles two UTC days, and with weeks starting Monday: still exact', async () => {
    const patched = await c.patch(`/api/environments/${p.projectId}`, { timezone: 'Asia/Kolkata', week_start_day: 1 });
    expect(patched.status).toBe(200);
    for (const request of [
      { events: [{ id: '$pageview', math: 'dau' }, { id: 'signed up' }], breakdown: '$browser', date_from: '-10d' },
      { events: [{ id: null, math: 'dau' }], interval: 'week', date_from: '-10d' },
      { events: [{ id: '$pageview', properties: ALL }], interval: 'hour', date_from: '-1d' },
    ]) {
      const { routed, plain } = await trendBoth(c, p.projectId, request);
      expect(routed.body.result).toEqual(plain.body.result);
      expect(routed.body.timezone).toBe('Asia/Kolkata');
      expect(lakeBuckets(routed.headers)?.lake).toBeGreaterThan(0);
    }
  });
});
