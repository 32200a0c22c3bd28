// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { expectErrorShape, eventually, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();

const ev = (event: string, distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp,
  properties,
});

const BATCH = [
  ev('$pageview', 'a', '2024-03-05T09:00:00Z', { $browser: 'Chrome', $set: { plan: 'pro' } }),
  ev('$pageview', 'a', '2024-03-06T09:00:00Z', { $browser: 'Chrome' }),
  ev('$pageview', 'b', '2024-03-06T10:00:00Z', { $browser: 'Firefox', $set: { plan: 'free' } }),
  ev('$pageview', 'c', '2024-03-10T23:59:00Z', { $browser: 'Safari' }),
  ev('$pageview', 'b', '2024-03-12T08:00:00Z', {}),
  ev('$pageview', 'd', '2024-02-28T08:00:00Z', { $browser: 'Chrome' }),
  ev('$pageview', 'd', '2024-03-01T08:00:00Z', { $browser: 'Edge' }),
  ev('signed up', 'b', '2024-03-12T08:30:00Z', { amount: 30 }),
  ev('signed up', 'a', '2024-03-11T08:30:00Z', { amount: 10 }),
  ev('signed up', 'd', '2024-03-02T08:30:00Z', { amount: 5 }),
  ev('$identify', 'a', '2024-03-11T09:00:00Z', { $anon_distinct_id: 'c' }),
];

let c: Client;
let projectId: number;
let actionId: number;

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  projectId = p.projectId;
  expect((await api.as().post('/batch', { api_key: p.token, batch: BATCH })).body.accepted).toBe(BATCH.length);
  await eventually(async () => {
    const stored = await readRollups(projectId, null, '2024-01-01T00', '2024-12-31T23');
    expect([...stored.values()].reduce((a, b) => a + b, 0)).toBe(BATCH.length);
  });
  const action = await c.post(`/api/environments/${projectId}/actions/`, {
    name: 'Chrome views or signups',
    steps: [{ event: '$pageview', properties: [{ key: '$browser', value: 'Chrome' }] }, { event: 'signed up' }],
  });
  expect(action.status).toBe(201);
  actionId = action.body.id;
});

const legacy = (body: Record<string, unknown>) =>
  c.post(`/api/environments/${projectId}/insights/trend/?refresh=true`, body);
const query = (q: Record<string, unknown>) =>
  c.post(`/api/environments/${projectId}/query/`, { query: { kind: 'TrendsQuery', ...q } });

/** The numbers of a row, keyed by what identifies it (PostHog orders compared rows differently). */
const numbers = (rows: any[]) =>
  Object.fromEntries(
    rows.map((r) => [
      `${r.action?.order ?? 'formula'}|${r.breakdown_value ?? ''}|${r.compare_label ?? ''}`,
      { data: r.data, days: r.days, count: r.count, aggregated_value: r.aggregated_value },
    ]),
  );

/** Sends the question both ways; returns the query's answer after checking it has the legacy numbers. */
async function sameNumbers(legacyBody: Record<string, unknown>, trendsQuery: Record<string, unknown>) {
  const [old, current] = await Promise.all([legacy(legacyBody), query(trendsQuery)]);
  expect(old.status, JSON.stringify(old.body)).toBe(200);
  expect(current.status, JSON.stringify(current.body)).toBe(200);
  expect(current.body.results).toHaveLength(old.body.result.length);
  expect(numbers(current.body.results)).toEqual(numbers(old.body.result));
  return current.body;
}

const pageviews = { kind: 'EventsNode', event: '$pageview' };
const week = { date_from: '2024-03-05', date_to: '2024-03-12' };

describe('TrendsQuery over HTTP: the same numbers as insights/trend', () => {
  it('answers a plain count in the TrendsQueryResponse shape', async () => {
    const body = await sameNumbers(
      { events: [{ id: '$pageview' }], ...week },
      { series: [pageviews], dateRange: week },
    );
    expect(body).toMatchObject({
      timezone: 'UTC',
      hasMore: false,
      resolved_date_range: { date_from: '2024-03-05T00:00:00+00:00', date_to: '2024-03-12T23:59:59.999+00:00' },
    });
    expect(body.timings.length).toBeGreaterThan(0);
    expect(body.results[0]).toMatchObject({
      data: [1, 2, 0, 0, 0, 1, 0, 1],
      count: 5,
      label: '$pageview',
      labels: expect.arrayContaining(['5-Mar-2024']),
      action: { id: '$pageview', order: 0, math: 'total' },
      order: 0,
    });
  });

  it('counts with event, person and grouped property filters', async () => {
    const body = await sameNumbers(
      {
        events: [{ id: '$pageview', properties: [{ key: '$browser', value: ['Chrome', 'Firefox'] }] }],
        properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', value: 'pro', type: 'person' }] }] },
        ...week,
      },
      {
        series: [{ ...pageviews, properties: [{ key: '$browser', value: ['Chrome', 'Firefox'], operator: 'exact' }] }],
        properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', value: 'pro', type: 'person' }] }] },
        dateRange: week,
      },
    );
    // Person a (plan pro) viewed in Chrome on the 5th and 6th; b is on the free plan.
    expect(body.results[0].data).toEqual([1, 1, 0, 0, 0, 0, 0, 0]);
  });

  it('breaks down by a property (breakdown or a one-entry breakdowns)', async () => {
    const legacyBody = { events: [{ id: '$pageview' }], breakdown: '$browser', breakdown_limit: 2, ...week };
    const body = await sameNumbers(legacyBody, {
      series: [pageviews],
      dateRange: week,
      breakdownFilter: { breakdown: '$browser', breakdown_limit: 2 },
    });
    expect(body.results.map((r: any) => [r.label, r.count])).toEqual([
      ['Chrome', 2],
      // Safari and no browser; by volume, as the legacy rows are.
      ['Other (i.e. all remaining values)', 2],
      ['Firefox', 1],
    ]);
    expect(body.hasMore).toBe(true);
    await sameNumbers(legacyBody, {
      series: [pageviews],
      dateRange: week,
      breakdownFilter: { breakdowns: [{ property: '$browser', type: 'event' }], breakdown_limit: 2 },
    });
  });

  it('compares with the previous period', async () => {
    const body = await sameNumbers(
      { events: [{ id: '$pageview' }, { id: 'signed up' }], date_from: '-7d', compare: true },
      {
        series: [pageviews, { kind: 'EventsNode', event: 'signed up' }],
        dateRange: { date_from: '-7d' },
        compareFilter: { compare: true },
      },
    );
    expect(body.results.map((r: any) => [r.label, r.compare_label])).toEqual([
      ['$pageview', 'current'],
      ['signed up', 'current'],
      ['$pageview', 'previous'],
      ['signed up', 'previous'],
    ]);
  });

  it('combines series with a formula', async () => {
    const body = await sameNumbers(
      {
        events: [{ id: 'signed up', math: 'sum', math_property: 'amount' }, { id: 'signed up' }],
        formula: 'A / B',
        date_from: '2024-03-11',
        date_to: '2024-03-12',
      },
      {
        series: [
          { kind: 'EventsNode', event: 'signed up', math: 'sum', math_property: 'amount' },
          { kind: 'EventsNode', event: 'signed up' },
        ],
        trendsFilter: { formulaNodes: [{ formula: 'A / B', custom_name: 'Average amount' }] },
        dateRange: { date_from: '2024-03-11', date_to: '2024-03-12' },
      },
    );
    expect(body.results[0]).toMatchObject({ data: [10, 30], label: 'Average amount', action: null });
  });

  it('counts persons for dau (merged distinct ids once)', async () => {
    const body = await sameNumbers(
      { events: [{ id: '$pageview', math: 'dau' }], ...week, interval: 'week' },
      { series: [{ ...pageviews, math: 'dau' }], dateRange: week, interval: 'week' },
    );
    expect(body.results[0].count).toBeGreaterThan(0);
  });

  it('answers an action series from its definition', async () => {
    const body = await sameNumbers(
      { actions: [{ id: actionId }], ...week },
      { series: [{ kind: 'ActionsNode', id: actionId, custom_name: 'Engaged' }], dateRange: week },
    );
    expect(body.results[0]).toMatchObject({
      count: 4,
      label: 'Chrome views or signups',
      action: { id: actionId, type: 'actions', custom_name: 'Engaged' },
    });
  });

  it('answers a non-time-series display with aggregated_value', async () => {
    const body = await sameNumbers(
      { events: [{ id: '$pageview', math: 'dau' }], display: 'ActionsPie', breakdown: '$browser', ...week },
      {
        series: [{ ...pageviews, math: 'dau' }],
        trendsFilter: { display: 'ActionsPie', showLegend: true, showValuesOnSeries: true },
        breakdownFilter: { breakdown: '$browser' },
        dateRange: week,
      },
    );
    const chrome = body.results.find((r: any) => r.breakdown_value === 'Chrome');
    expect(chrome).toMatchObject({ aggregated_value: 1, data: [], count: 0 });
    expect(chrome).not.toHaveProperty('labels');
  });
});

describe('TrendsQuery errors', () => {
  it.each([
    [{ series: [{ ...pageviews, math: 'nonsense' }] }, 'query__series__0__math'],
    [{ series: [pageviews, { kind: 'ActionsNode', id: 424242 }] }, 'query__series__1__id'],
    [{ series: [pageviews], dateRange: { date_from: 'yesterday-ish' } }, 'query__dateRange__date_from'],
    [{ series: [pageviews], trendsFilter: { formula: 'A + C' } }, 'query__trendsFilter__formula'],
    [{ series: [{ kind: 'DataWarehouseNode', table_name: 'x' }] }, 'query__series__0__kind'],
    [
      { series: [pageviews], breakdownFilter: { breakdowns: [{ property: 'a' }, { property: 'b' }] } },
      'query__breakdownFilter__breakdowns',
    ],
    [{ series: [pageviews], samplingFactor: 0.1 }, 'query__samplingFactor'],
  ])('%j -> 400 with attr %s', async (q, attr) => {
    const res = await query(q);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr });
  });

  it.each([
    [{ kind: 'RetentionQuery', retentionFilter: {} }, 'Unsupported query kind "RetentionQuery"'],
    [{ kind: 'FunnelsQuery', series: [pageviews] }, 'Unsupported query kind "FunnelsQuery"'],
    [{ series: [pageviews] }, 'The query has no kind'],
  ])('refuses a query of another kind, naming the supported ones: %j', async (q, named) => {
    const res = await c.post(`/api/environments/${projectId}/query/`, { query: q });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'query__kind' });
    expect(res.body.detail).toBe(`${named}: this service answers TrendsQuery, ActorsQuery, EventsQuery, HogQLQuery.`);
  });

  it('answers another organization project with 404', async () => {
    const other = await newProject(api.as);
    const res = await api
      .as(other.key)
      .post(`/api/environments/${projectId}/query/`, { query: { kind: 'TrendsQuery', series: [pageviews] } });
    expect(res.status).toBe(404);
  });
});

describe('TrendsQuery with HogQL expressions (issue 22)', () => {
  const HOGQL_BATCH = [
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
  ];
  let hc: Client;
  let hogqlProject: number;
  beforeAll(async () => {
    const p = await newProject(api.as);
    hc = api.as(p.key);
    hogqlProject = p.projectId;
    expect((await api.as().post('/batch', { api_key: p.token, batch: HOGQL_BATCH })).body.accepted).toBe(
      HOGQL_BATCH.length,
    );
    await eventually(async () => {
      const stored = await readRollups(hogqlProject, null, '2024-01-01T00', '2024-12-31T23');
      expect([...stored.values()].reduce((a, b) => a + b, 0)).toBe(HOGQL_BATCH.length);
    });
  });
  const trends = (q: Record<string, unknown>) =>
    hc.post(`/api/environments/${hogqlProject}/query/`, {
      query: { kind: 'TrendsQuery', dateRange: { date_from: '2024-03-10', date_to: '2024-03-12' }, ...q },
    });
  const breakdown = "concat(properties.$os, ' ', properties.$browser)";

  it('breaks down by a HogQL expression (breakdown, or a one-entry breakdowns of type hogql)', async () => {
    const expected = [
      ['Mac Chrome', [1, 1, 0]],
      [' Firefox', [0, 0, 1]],
      ['Mac Safari', [1, 0, 0]],
      ['Windows Chrome', [0, 1, 0]],
    ];
    const res = await trends({ series: [pageviews], breakdownFilter: { breakdown, breakdown_type: 'hogql' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.map((r: any) => [r.breakdown_value, r.data])).toEqual(expected);
    const entries = await trends({
      series: [pageviews],
      breakdownFilter: { breakdowns: [{ type: 'hogql', property: breakdown }] },
    });
    expect(entries.status, JSON.stringify(entries.body)).toBe(200);
    expect(entries.body.results.map((r: any) => [r.breakdown_value, r.data])).toEqual(expected);
  });

  it("filters with a hogql property filter (query and series properties): ILIKE '%/pricing%'", async () => {
    const pricing = { type: 'hogql', key: "properties.$current_url ILIKE '%/pricing%'" };
    const global = await trends({ series: [pageviews], properties: [pricing] });
    expect(global.status, JSON.stringify(global.body)).toBe(200);
    expect(global.body.results[0].data).toEqual([1, 1, 1]);
    const series = await trends({ series: [{ ...pageviews, properties: [pricing] }] });
    expect(series.body.results[0].count).toBe(3);
  });

  it('computes math hogql avg(toFloat(properties.price)) per bucket', async () => {
    const res = await trends({
      series: [{ ...pageviews, math: 'hogql', math_hogql: 'avg(toFloat(properties.price))' }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // 10th: (10 + 20) / 2; 11th: 'n/a' is NULL, so 40; 12th: no price, 0.
    expect(res.body.results[0].data).toEqual([15, 40, 0]);
  });

  it.each([
    [{ breakdownFilter: { breakdown: 'nope(1)', breakdown_type: 'hogql' } }, 'query__breakdownFilter__breakdown'],
    [
      { breakdownFilter: { breakdowns: [{ type: 'hogql', property: 'sum(1)' }] } },
      'query__breakdownFilter__breakdowns__0__property',
    ],
    [{ properties: [{ type: 'hogql', key: "properties.x ILIKE '" }] }, 'query__properties__0__key'],
    [{ series: [{ ...pageviews, math: 'hogql', math_hogql: 'properties.price' }] }, 'query__series__0__math_hogql'],
  ])('refuses %j: 400 on %s', async (q, attr) => {
    const res = await trends({ series: [pageviews], ...q });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr });
  });

  it.each([
    ['max(timestamp)', 'a DateTime'],
    ['any(event)', 'a String'],
    ['argMax(event, timestamp)', 'a String'],
  ])(
    'math_hogql %s (not a number) is a 400 naming it and what it gives, not a series of zeros',
    async (math, gives) => {
      const res = await trends({ series: [{ ...pageviews, math: 'hogql', math_hogql: math }] });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expectErrorShape(res.body);
      expect(res.body).toMatchObject({ type: 'validation_error', attr: 'query__series__0__math_hogql' });
      expect(res.body.detail).toContain(`math_hogql must give a number per interval: ${math} gives ${gives}.`);
    },
  );

  it.each([
    [
      {
        breakdownFilter: { breakdown: 'toStartOfDay(timestamp - INTERVAL 999999999999 YEAR)', breakdown_type: 'hogql' },
      },
      'query__breakdownFilter__breakdown',
      'at most 400 years',
    ],
    [
      { properties: [{ type: 'hogql', key: 'timestamp > now() - toIntervalDay(1e30)' }] },
      'query__properties__0__key',
      'at most 146,097 days',
    ],
  ])(
    'an INTERVAL past its cap, %j: 400 on %s naming the cap (not a NULL breakdown or filter)',
    async (q, attr, cap) => {
      const res = await trends({ series: [pageviews], ...q });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expectErrorShape(res.body);
      expect(res.body).toMatchObject({ type: 'validation_error', attr });
      expect(res.body.detail).toContain(cap);
      expect(res.body.detail).toContain('1900-01-01 to 2299-12-31');
    },
  );
});
