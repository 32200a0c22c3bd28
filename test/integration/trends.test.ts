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
    const counted = [...(await readRollups(p.projectId, null, '2024-01-01T00', '2024-12-31T23')).values()].reduce((a, b) => a + b, 0);
    expect(counted).toBe(batch.length);
  });
  return { c, projectId: p.projectId, path: `/api/environments/${p.projectId}/insights/trend/` };
}

const ev = (event: string, distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({ event, distinct_id, timestamp, properties });

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
    expect(series.days).toEqual(['2024-03-05', '2024-03-06', '2024-03-07', '2024-03-08', '2024-03-09', '2024-03-10', '2024-03-11', '2024-03-12']);
    expect(series.labels[0]).toBe('5-Mar-2024');
    expect(series.data).toEqual([1, 2, 0, 0, 0, 1, 0, 1]);
    expect(series.count).toBe(5);
    expect(series.label).toBe('$pageview');
  });

  it('gives the same numbers from raw events when a filter forces that path', async () => {
    const res = await ctx.c.post(ctx.path, { events: [{ id: '$pageview', properties: [{ key: '$browser', operator: 'is_set' }] }], date_from: '2024-03-05', date_to: '2024-03-12' });
    expect(res.headers.get('x-trend-source')).toBe('events');
    expect(res.body.result[0].data).toEqual([1, 2, 0, 0, 0, 1, 0, 0]);
  });

  it('breaks down by an event property, largest first, with the None row', async () => {
    const res = await ctx.c.post(ctx.path, { events: [{ id: '$pageview' }], breakdown: '$browser', date_from: '2024-03-05', date_to: '2024-03-12' });
    const rows = res.body.result.map((r: any) => [r.breakdown_value, r.count]);
    // By volume, ties by label (legacy: the None row has no special place): 'Firefox' < 'None (i.e. no value)' < 'Safari'.
    expect(rows).toEqual([['Chrome', 2], ['Firefox', 1], ['$$_posthog_breakdown_null_$$', 1], ['Safari', 1]]);
    expect(res.body.result[2].label).toBe('None (i.e. no value)');
  });

  it('counts persons for dau, merged distinct ids once', async () => {
    const res = await ctx.c.post(ctx.path, { events: [{ id: '$pageview', math: 'dau' }], date_from: '2024-03-05', date_to: '2024-03-12', display: 'ActionsTable' });
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
    const action = await ctx.c.post(`/api/environments/${ctx.projectId}/actions/`, { name: 'Chrome views or signups', steps: [{ event: '$pageview', properties: [{ key: '$browser', value: 'Chrome' }] }, { event: 'signed up' }] });
    const res = await ctx.c.post(ctx.path, { actions: [{ id: action.body.id }], date_from: '2024-03-05', date_to: '2024-03-12' });
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
    const res = await ctx.c.get(`${ctx.path}?format=csv&date_from=2024-03-11&date_to=2024-03-12&events=${encodeURIComponent(JSON.stringify([{ id: 'signed up' }, { id: '$pageview' }]))}`);
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
    const res = await ctx.c.post(ctx.path, { events: [{ id: 'visit' }], date_from: '2024-03-09', date_to: '2024-03-11' });
    expect(res.body.timezone).toBe('America/New_York');
    const [series] = res.body.result;
    expect(series.days).toEqual(['2024-03-09', '2024-03-10', '2024-03-11']);
    expect(series.data).toEqual([2, 2, 1]);
    // Whole-hour offsets on both sides of the change: the rollups can answer, and agree.
    expect(res.headers.get('x-trend-source')).toBe('rollups');
    const raw = await ctx.c.post(ctx.path, { events: [{ id: 'visit', properties: [{ key: 'k', operator: 'is_not_set' }] }], date_from: '2024-03-09', date_to: '2024-03-11' });
    expect(raw.headers.get('x-trend-source')).toBe('events');
    expect(raw.body.result[0].data).toEqual([2, 2, 1]);
  });
});
