// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { expectErrorShape, eventually, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();

interface Ctx {
  c: Client;
  projectId: number;
  path: string;
}

async function projectWithEvents(batch: unknown[], settings?: Record<string, unknown>): Promise<Ctx> {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  if (settings) expect((await c.patch(`/api/environments/${p.projectId}/`, settings)).status).toBe(200);
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
  await eventually(async () => {
    const counted = [...(await readRollups(p.projectId, null, '2024-01-01T00', '2024-12-31T23')).values()].reduce(
      (a, b) => a + b,
      0,
    );
    expect(counted).toBe(batch.length);
  });
  return { c, projectId: p.projectId, path: `/api/environments/${p.projectId}/insights/trend/` };
}

const ev = (event: string, distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp,
  properties,
});

describe('trend over HTTP (UTC project)', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await projectWithEvents([
      ev('$pageview', 'a', '2024-03-05T09:00:00Z', { $browser: 'Chrome', $set: { plan: 'pro' } }),
      ev('$pageview', 'a', '2024-03-06T09:00:00Z', { $browser: 'Chrome' }),
      ev('$pageview', 'b', '2024-03-06T10:00:00Z', { $browser: 'Firefox', $set: { plan: 'free' } }),
      ev('$pageview', 'c', '2024-03-10T23:59:00Z', { $browser: 'Safari' }),
      ev('$pageview', 'b', '2024-03-12T08:00:00Z', {}),
      ev('signed up', 'b', '2024-03-12T08:30:00Z', { amount: 30 }),
      ev('signed up', 'a', '2024-03-11T08:30:00Z', { amount: 10 }),
      ev('$identify', 'a', '2024-03-11T09:00:00Z', { $anon_distinct_id: 'c' }),
    ]);
  });

  it('answers the default -7d daily total from the hourly rollups: 8 zero-filled buckets ending today', async () => {
    const res = await ctx.c.get(`${ctx.path}?events=${encodeURIComponent(JSON.stringify([{ id: '$pageview' }]))}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-trend-source')).toBe('rollups');
    expect(res.body).toMatchObject({ is_cached: false, timezone: 'UTC', last_refresh: '2024-03-12T12:00:00.000Z' });
    const [series] = res.body.result;
    expect(series.days).toEqual([
      '2024-03-05',
      '2024-03-06',
      '2024-03-07',
      '2024-03-08',
      '2024-03-09',
      '2024-03-10',
      '2024-03-11',
      '2024-03-12',
    ]);
    expect(series.labels[0]).toBe('5-Mar-2024');
    expect(series.data).toEqual([1, 2, 0, 0, 0, 1, 0, 1]);
    expect(series.count).toBe(5);
    expect(series.label).toBe('$pageview');
  });

  it('gives the same numbers from raw events when a filter forces that path', async () => {
    const res = await ctx.c.post(ctx.path, {
      events: [{ id: '$pageview', properties: [{ key: '$browser', operator: 'is_set' }] }],
      date_from: '2024-03-05',
      date_to: '2024-03-12',
    });
    expect(res.headers.get('x-trend-source')).toBe('events');
    expect(res.body.result[0].data).toEqual([1, 2, 0, 0, 0, 1, 0, 0]);
  });

  it('breaks down by an event property, largest first, with the None row', async () => {
    const res = await ctx.c.post(ctx.path, {
      events: [{ id: '$pageview' }],
      breakdown: '$browser',
      date_from: '2024-03-05',
      date_to: '2024-03-12',
    });
    const rows = res.body.result.map((r: any) => [r.breakdown_value, r.count]);
    // By volume, ties by label (legacy: the None row has no special place): 'Firefox' < 'None (i.e. no value)' < 'Safari'.
    expect(rows).toEqual([
      ['Chrome', 2],
      ['Firefox', 1],
      ['$$_posthog_breakdown_null_$$', 1],
      ['Safari', 1],
    ]);
    expect(res.body.result[2].label).toBe('None (i.e. no value)');
  });

  it('counts persons for dau, merged distinct ids once', async () => {
    const res = await ctx.c.post(ctx.path, {
      events: [{ id: '$pageview', math: 'dau' }],
      date_from: '2024-03-05',
      date_to: '2024-03-12',
      display: 'ActionsTable',
    });
    // a and c are one person after $identify: persons a(+c) and b.
    expect(res.body.result[0].aggregated_value).toBe(2);
  });

  it('sums a property and combines series with a formula', async () => {
    const res = await ctx.c.post(ctx.path, {
      events: [{ id: 'signed up', math: 'sum', math_property: 'amount' }, { id: 'signed up' }],
      formula: 'A / B',
      date_from: '2024-03-11',
      date_to: '2024-03-12',
    });
    expect(res.body.result).toHaveLength(1);
    expect(res.body.result[0].data).toEqual([10, 30]);
    expect(res.body.result[0].label).toBe('Formula (A / B)');
  });

  it('serves an action series from its definition', async () => {
    const action = await ctx.c.post(`/api/environments/${ctx.projectId}/actions/`, {
      name: 'Chrome views or signups',
      steps: [{ event: '$pageview', properties: [{ key: '$browser', value: 'Chrome' }] }, { event: 'signed up' }],
    });
    const res = await ctx.c.post(ctx.path, {
      actions: [{ id: action.body.id }],
      date_from: '2024-03-05',
      date_to: '2024-03-12',
    });
    expect(res.status).toBe(200);
    expect(res.body.result[0].count).toBe(4);
    expect(res.body.result[0].label).toBe('Chrome views or signups');
  });

  it('caches a result for a short while, says so, and recomputes on refresh=true', async () => {
    const body = { events: [{ id: 'signed up' }], date_from: '2024-03-01', date_to: '2024-03-12' };
    const first = await ctx.c.post(`${ctx.path}?refresh=true`, body);
    const second = await ctx.c.post(ctx.path, body);
    expect(second.headers.get('x-trend-source')).toBe('cache');
    expect(second.body.is_cached).toBe(true);
    expect(second.body.last_refresh).toBe(first.body.last_refresh);
    expect(second.body.result).toEqual(first.body.result);
    const third = await ctx.c.post(`${ctx.path}?refresh=true`, body);
    expect(third.body.is_cached).toBe(false);
  });

  it('answers CSV: one row per series, one column per bucket', async () => {
    const res = await ctx.c.get(
      `${ctx.path}?format=csv&date_from=2024-03-11&date_to=2024-03-12&events=${encodeURIComponent(JSON.stringify([{ id: 'signed up' }, { id: '$pageview' }]))}`,
    );
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = res.text.trim().split(/\r?\n/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^"?signed up"?,1,1$/);
    expect(lines[2]).toMatch(/^"?\$pageview"?,0,1$/);
  });

  it.each([
    [{}, 'events'],
    [{ events: [{ id: 'x', math: 'nonsense' }] }, 'events__0__math'],
    [{ events: [{ id: 'x' }], date_from: 'yesterday-ish' }, 'date_from'],
    [{ events: [{ id: 'x' }], formula: 'A + C' }, 'formula'],
    [{ actions: [{ id: 424242 }] }, 'actions__0__id'],
  ])('rejects %j with 400 naming %s', async (body, attr) => {
    const res = await ctx.c.post(ctx.path, body);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(attr);
  });
});

describe('trend cost: caps and the read clamped to the first event', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await projectWithEvents([
      ev('$pageview', 'a', '2024-03-05T09:00:00Z', { $browser: 'Chrome' }),
      ev('$pageview', 'a', '2024-03-06T09:00:00Z', { $browser: 'Chrome' }),
      ev('$pageview', 'b', '2024-03-06T10:00:00Z', { $browser: 'Firefox' }),
      ev('$pageview', 'c', '2024-03-10T23:59:00Z', { $browser: 'Safari' }),
      ev('$pageview', 'b', '2024-03-12T08:00:00Z', {}),
    ]);
  });
  const readDays = (res: { headers: Headers }) =>
    /(?:^|, )read;dur=[\d.]+;desc="(\d+) days[;"]/.exec(res.headers.get('server-timing') ?? '')?.[1];

  it('reads only the days from the first event on for date_from 2000-01-01, and answers every bucket zero-filled', async () => {
    const raw = await ctx.c.post(ctx.path, {
      events: [{ id: '$pageview', properties: [{ key: '$browser', operator: 'is_set' }] }],
      date_from: '2000-01-01',
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('x-trend-source')).toBe('events');
    expect(readDays(raw)).toBe('8');
    const [series] = raw.body.result;
    expect(series.days).toHaveLength(8_838);
    expect(series.days[0]).toBe('2000-01-01');
    expect(series.data.slice(-8)).toEqual([1, 2, 0, 0, 0, 1, 0, 0]);
    expect(series.count).toBe(4);

    const rollups = await ctx.c.get(
      `${ctx.path}?date_from=2000-01-01&events=${encodeURIComponent(JSON.stringify([{ id: '$pageview' }]))}`,
    );
    expect(rollups.headers.get('x-trend-source')).toBe('rollups');
    expect(readDays(rollups)).toBe('8');
    expect(rollups.body.result[0].data).toHaveLength(8_838);
    expect(rollups.body.result[0].data.slice(-8)).toEqual([1, 2, 0, 0, 0, 1, 0, 1]);
  });

  it('reads nothing for a project without events, and answers zeros', async () => {
    const p = await newProject(api.as);
    const res = await api.as(p.key).post(`/api/environments/${p.projectId}/insights/trend/`, {
      events: [{ id: 'x', properties: [{ key: 'y', operator: 'is_set' }] }],
      date_from: '2000-01-01',
    });
    expect(res.status).toBe(200);
    expect(readDays(res)).toBe('0');
    expect(res.body.result[0].data).toHaveLength(8_838);
    expect(res.body.result[0].count).toBe(0);
  });

  it.each([
    [{ events: JSON.stringify(Array.from({ length: 51 }, () => ({ id: '$pageview' }))) }, 'events', '50'],
    [{ breakdown: '$browser', breakdown_limit: '1001' }, 'breakdown_limit', '1,000'],
    [
      {
        date_from: '-1y',
        interval: 'hour',
        date_to: '2024-03-12',
        explicit_date: 'false',
        compare: 'true',
        breakdown: '$browser',
      },
      'breakdown_limit',
      '200,000',
    ],
    [{ date_from: '-2y', interval: 'hour' }, 'interval', '10,000'],
    [{ date_from: '-999999999h', interval: 'hour' }, 'date_from', '100 years'],
    [{ date_from: '-100000d', interval: 'month' }, 'date_from', '100 years'],
    [{ date_from: '-7d', compare_to: '-100000y' }, 'compare_to', '100 years'],
  ])('answers GET %j with a 400 on %s stating %s', async (params, attr, cap) => {
    const query = new URLSearchParams({ events: JSON.stringify([{ id: '$pageview' }]), ...params });
    const started = performance.now();
    const res = await ctx.c.get(`${ctx.path}?${query.toString()}`);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(attr);
    expect(res.body.detail).toContain(cap);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('refuses an answer over 5 MiB that passes the other caps (each row echoes every series)', async () => {
    const events = Array.from({ length: 50 }, (_, i) => ({
      id: '$pageview',
      custom_name: String(i).padEnd(2_500, 'x'),
    }));
    const res = await ctx.c.post(ctx.path, { events, date_from: '-7d' });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe('interval');
    expect(res.body.detail).toContain('5,120 KiB');
    const smaller = await ctx.c.post(ctx.path, { events: events.slice(0, 10), date_from: '-7d' });
    expect(smaller.status).toBe(200);
    expect(smaller.body.result).toHaveLength(10);
  });

  it('refuses to read more than 3,700 days of a project whose events go back that far', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    expect(
      (
        await api.as().post('/batch', {
          api_key: p.token,
          batch: [ev('old', 'a', '2005-01-01T00:00:00Z'), ev('old', 'a', '2024-03-01T00:00:00Z')],
        })
      ).body.accepted,
    ).toBe(2);
    const path = `/api/environments/${p.projectId}/insights/trend/`;
    const tooMuch = await c.post(path, { events: [{ id: 'old' }], date_from: '2005-01-01', interval: 'month' });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body).toMatchObject({ type: 'validation_error', attr: 'date_from' });
    expect(tooMuch.body.detail).toContain('3,700 days');
    // Clamped to the first event, a range from 2000 reads the 31 days of January 2005 and is answered.
    // (A filter takes the raw-event path, which sees the events before the ingest worker counts them.)
    const clamped = await c.post(path, {
      events: [{ id: 'old', properties: [{ key: 'x', operator: 'is_not_set' }] }],
      date_from: '2000-01-01',
      date_to: '2005-01-31',
    });
    expect(clamped.status).toBe(200);
    expect(clamped.headers.get('server-timing')).toMatch(/read;dur=[\d.]+;desc="31 days[;"]/);
    expect(clamped.body.result[0].data).toHaveLength(1_858);
    expect(clamped.body.result[0].count).toBe(1);
  });
});

describe('trend in a project timezone across DST', () => {
  it('counts a New York day of 23 hours as one day and puts a local 23:30 event on its local day', async () => {
    const ctx = await projectWithEvents(
      [
        ev('visit', 'x', '2024-03-09T05:30:00Z'), // 00:30 EST on the 9th
        ev('visit', 'x', '2024-03-10T04:59:00Z'), // 23:59 EST on the 9th
        ev('visit', 'x', '2024-03-10T05:00:00Z'), // 00:00 EST on the 10th
        ev('visit', 'y', '2024-03-11T03:30:00Z'), // 23:30 EDT on the 10th (after the spring-forward)
        ev('visit', 'y', '2024-03-11T04:00:00Z'), // 00:00 EDT on the 11th
      ],
      { timezone: 'America/New_York' },
    );
    const res = await ctx.c.post(ctx.path, {
      events: [{ id: 'visit' }],
      date_from: '2024-03-09',
      date_to: '2024-03-11',
    });
    expect(res.body.timezone).toBe('America/New_York');
    const [series] = res.body.result;
    expect(series.days).toEqual(['2024-03-09', '2024-03-10', '2024-03-11']);
    expect(series.data).toEqual([2, 2, 1]);
    // Whole-hour offsets on both sides of the change: the rollups can answer, and agree.
    expect(res.headers.get('x-trend-source')).toBe('rollups');
    const raw = await ctx.c.post(ctx.path, {
      events: [{ id: 'visit', properties: [{ key: 'k', operator: 'is_not_set' }] }],
      date_from: '2024-03-09',
      date_to: '2024-03-11',
    });
    expect(raw.headers.get('x-trend-source')).toBe('events');
    expect(raw.body.result[0].data).toEqual([2, 2, 1]);
  });
});

describe('HogQL expressions in a trend (issue 22)', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await projectWithEvents([
      ev('$pageview', 'a', '2024-03-10T09:00:00Z', {
        $os: 'Mac',
        $browser: 'Chrome',
        $current_url: 'https://x.com/pricing',
        price: 10,
      }),
      ev('$pageview', 'b', '2024-03-10T10:00:00Z', {
        $os: 'Mac',
        $browser: 'Safari',
        $current_url: 'https://x.com/docs',
        price: '20',
      }),
      ev('$pageview', 'c', '2024-03-11T09:00:00Z', {
        $os: 'Windows',
        $browser: 'Chrome',
        $current_url: 'https://x.com/Pricing?plan=pro',
        price: 'n/a',
      }),
      ev('$pageview', 'a', '2024-03-11T11:00:00Z', {
        $os: 'Mac',
        $browser: 'Chrome',
        $current_url: 'https://x.com/blog',
        price: 40,
      }),
      ev('$pageview', 'b', '2024-03-12T08:00:00Z', { $browser: 'Firefox', $current_url: 'https://x.com/pricing/team' }),
      ev('purchase', 'a', '2024-03-12T09:00:00Z', { price: 99, $current_url: 'https://x.com/pricing' }),
    ]);
  });
  const days = { date_from: '2024-03-10', date_to: '2024-03-12' };

  it("breaks down by concat(properties.$os, ' ', properties.$browser): a missing $os is ''", async () => {
    const breakdown = "concat(properties.$os, ' ', properties.$browser)";
    const res = await ctx.c.post(ctx.path, {
      events: [{ id: '$pageview' }],
      breakdown,
      breakdown_type: 'hogql',
      ...days,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // Mac Chrome on the 10th and 11th; the rest once each, ties by label (' Firefox' sorts first).
    expect(res.body.result.map((r: any) => [r.breakdown_value, r.data])).toEqual([
      ['Mac Chrome', [1, 1, 0]],
      [' Firefox', [0, 0, 1]],
      ['Mac Safari', [1, 0, 0]],
      ['Windows Chrome', [0, 1, 0]],
    ]);
    expect(res.body.result[0].filter).toMatchObject({ breakdown, breakdown_type: 'hogql' });
  });

  it("filters with properties.$current_url ILIKE '%/pricing%' (request, series and test-account filters)", async () => {
    const pricing = { type: 'hogql', key: "properties.$current_url ILIKE '%/pricing%'" };
    const global = await ctx.c.post(ctx.path, { events: [{ id: '$pageview' }], properties: [pricing], ...days });
    expect(global.status, JSON.stringify(global.body)).toBe(200);
    // /pricing on the 10th, /Pricing?plan=pro on the 11th (case-insensitive), /pricing/team on the 12th.
    expect(global.body.result[0].data).toEqual([1, 1, 1]);
    expect(global.body.result[0].filter.properties).toEqual({ type: 'AND', values: [{ ...pricing, value: null }] });
    const series = await ctx.c.post(ctx.path, {
      events: [
        { id: '$pageview', properties: [pricing] },
        { id: 'purchase', properties: [pricing] },
      ],
      ...days,
    });
    expect(series.body.result.map((r: any) => r.count)).toEqual([3, 1]);
    const patched = await ctx.c.patch(`/api/environments/${ctx.projectId}/`, {
      test_account_filters: [{ type: 'hogql', key: "properties.$browser != 'Safari'" }],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const internal = await ctx.c.post(ctx.path, {
      events: [{ id: '$pageview' }],
      filter_test_accounts: true,
      ...days,
    });
    expect(internal.status, JSON.stringify(internal.body)).toBe(200);
    // b's Safari view on the 10th is an internal user's.
    expect(internal.body.result[0].data).toEqual([1, 2, 1]);
  });

  it('computes math hogql avg(toFloat(properties.price)) per bucket, also broken down', async () => {
    const series = [{ id: '$pageview', math: 'hogql', math_hogql: 'avg(toFloat(properties.price))' }];
    const res = await ctx.c.post(ctx.path, { events: series, ...days });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // 10th: (10 + 20) / 2; 11th: 'n/a' is NULL, so 40; 12th: no price, avg of nothing is 0.
    expect(res.body.result[0].data).toEqual([15, 40, 0]);
    expect(res.body.result[0].action).toMatchObject({ math: 'hogql' });
    const byOs = await ctx.c.post(ctx.path, {
      events: series,
      breakdown: 'properties.$os',
      breakdown_type: 'hogql',
      display: 'ActionsTable',
      ...days,
    });
    expect(byOs.body.result.map((r: any) => [r.breakdown_value, r.aggregated_value])).toEqual([
      ['Mac', (10 + 20 + 40) / 3],
      ['$$_posthog_breakdown_null_$$', 0],
      ['Windows', 0],
    ]);
  });

  it.each([
    [{ breakdown: 'nope(properties.$os)', breakdown_type: 'hogql' }, 'breakdown', /Unsupported function "nope"/],
    [{ breakdown: 'uuid', breakdown_type: 'hogql' }, 'breakdown', /uuid is not available in trends/],
    [{ properties: [{ type: 'hogql', key: 'properties.$os =' }] }, 'properties__0__key', /./],
    [
      { events: [{ id: '$pageview', math: 'hogql', math_hogql: 'toFloat(properties.price)' }] },
      'events__0__math_hogql',
      /must aggregate/,
    ],
    [{ events: [{ id: '$pageview', math: 'hogql' }] }, 'events__0__math_hogql', /needs a math_hogql/],
    [
      { events: [{ id: '$pageview', math: 'hogql', math_hogql: 'max(timestamp)' }] },
      'events__0__math_hogql',
      /math_hogql must give a number per interval: max\(timestamp\) gives a DateTime/,
    ],
    [
      { events: [{ id: '$pageview' }, { id: '$pageview', math: 'hogql', math_hogql: 'any(event)' }] },
      'events__1__math_hogql',
      /any\(event\) gives a String/,
    ],
  ])('refuses %j with a 400 on %s', async (body, attr, detail) => {
    const res = await ctx.c.post(ctx.path, { events: [{ id: '$pageview' }], ...days, ...body });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(attr);
    expect(res.body.detail).toMatch(detail);
  });
});
