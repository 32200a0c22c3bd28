// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { compactDay } from '#shared/domain/event-segments.ts';
import { filterGroupLookup, groupLookup, MAX_EVENTS_QUERY_GROUPS } from '#shared/domain/trend-groups.ts';
import { ValidationError } from '#shared/errors.ts';
import { MAX_QUERY_GROUPS } from '#shared/trends/groups.ts';
import { parseTrendRequest } from '#shared/trends/index.ts';
import { parseProperties } from '#shared/trends/properties.ts';
import { eventually, newProject, useApi, type Client } from '../support/api.ts';

// Groups in trends over HTTP: group property filters (request, series, test-account filters), group
// breakdowns, unique_group and aggregation_group_type_index, on the legacy endpoint and TrendsQuery,
// from raw events and from compacted segments; a group change retires cached answers at once.
const api = useApi();

const identify = (type: string, key: string, set: Record<string, unknown>, timestamp: string) => ({
  event: '$groupidentify',
  distinct_id: `$${type}_${key}`,
  timestamp,
  properties: { $group_type: type, $group_key: key, $group_set: set },
});
const viewed = (distinct_id: string, timestamp: string, groups?: Record<string, string>) => ({
  event: 'viewed',
  distinct_id,
  timestamp,
  properties: groups ? { $groups: groups } : {},
});

// Mar 10: ada (acme, ws-1), bob (acme), cat (globex), dan (no group), eve (initech: never identified).
// Mar 11: ada (acme), fay (globex).
const EVENTS = [
  identify('company', 'acme', { industry: 'tech', seats: 50 }, '2024-03-01T00:00:00Z'),
  identify('company', 'globex', { industry: 'retail', seats: 5 }, '2024-03-01T00:00:00Z'),
  identify('workspace', 'ws-1', { tier: 'gold' }, '2024-03-01T00:00:00Z'),
  viewed('ada', '2024-03-10T09:00:00Z', { company: 'acme', workspace: 'ws-1' }),
  viewed('bob', '2024-03-10T10:00:00Z', { company: 'acme' }),
  viewed('cat', '2024-03-10T11:00:00Z', { company: 'globex' }),
  viewed('dan', '2024-03-10T12:00:00Z'),
  viewed('eve', '2024-03-10T13:00:00Z', { company: 'initech' }),
  viewed('ada', '2024-03-11T09:00:00Z', { company: 'acme' }),
  viewed('fay', '2024-03-11T10:00:00Z', { company: 'globex' }),
];

interface Ctx {
  c: Client;
  projectId: number;
  token: string;
  legacy: (body: Record<string, unknown>) => Promise<any>;
  query: (query: Record<string, unknown>) => Promise<any>;
}

async function groupProject(): Promise<Ctx> {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  expect((await api.as().post('/batch', { api_key: p.token, batch: EVENTS })).status).toBe(200);
  await eventually(async () => {
    const res = await c.get(`/api/projects/${p.projectId}/groups?group_type_index=0`);
    expect(res.body.results.map((g: any) => g.group_key).sort()).toEqual(['acme', 'globex']);
    const ws = await c.get(`/api/projects/${p.projectId}/groups/find?group_type_index=1&group_key=ws-1`);
    expect(ws.status).toBe(200);
  }, 20_000);
  const path = `/api/environments/${p.projectId}/insights/trend/`;
  return {
    c,
    projectId: p.projectId,
    token: p.token,
    legacy: async (body) => {
      const res = await c.post(path, { events: [{ id: 'viewed' }], date_from: '-7d', refresh: true, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    },
    query: async (query) => {
      const res = await c.post(`/api/environments/${p.projectId}/query/`, {
        query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'viewed' }], ...query },
        refresh: 'force_blocking',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    },
  };
}

const counts = (body: any) => body.result.map((r: any) => [r.breakdown_value ?? r.label, r.count]);
const queryCounts = (body: any) => body.results.map((r: any) => [r.breakdown_value ?? r.label, r.count]);
const bold = { display: 'BoldNumber' };

/** Every answer this file checks, from either path (raw events or segments). */
async function answers(ctx: Ctx) {
  const tech = [{ type: 'group', group_type_index: 0, key: 'industry', value: 'tech' }];
  return {
    filter: counts(await ctx.legacy({ properties: tech })),
    seriesFilter: counts(
      await ctx.legacy({
        events: [{ id: 'viewed', properties: [{ type: 'group', group_type_index: 1, key: 'tier', value: 'gold' }] }],
      }),
    ),
    seats: counts(
      await ctx.legacy({
        properties: [{ type: 'group', group_type_index: 0, key: 'seats', value: 10, operator: 'gt' }],
      }),
    ),
    breakdown: counts(
      await ctx.legacy({ breakdown_type: 'group', breakdown: 'industry', breakdown_group_type_index: 0 }),
    ),
    uniqueGroup: (
      await ctx.legacy({ events: [{ id: 'viewed', math: 'unique_group', math_group_type_index: 0 }], ...bold })
    ).result[0].aggregated_value,
    uniqueGroupDaily: (await ctx.legacy({ events: [{ id: 'viewed', math: 'unique_group', math_group_type_index: 0 }] }))
      .result[0].data,
    aggregatedTotal: counts(await ctx.legacy({ aggregation_group_type_index: 0 })),
    aggregatedDau: (
      await ctx.legacy({ events: [{ id: 'viewed', math: 'dau' }], aggregation_group_type_index: 0, ...bold })
    ).result[0].aggregated_value,
    queryFilter: queryCounts(await ctx.query({ properties: tech })),
    queryBreakdown: queryCounts(
      await ctx.query({
        breakdownFilter: { breakdown_type: 'group', breakdown: 'industry', breakdown_group_type_index: 0 },
      }),
    ),
    queryUniqueGroup: (
      await ctx.query({
        series: [{ kind: 'EventsNode', event: 'viewed', math: 'unique_group', math_group_type_index: 0 }],
        trendsFilter: bold,
      })
    ).results[0].aggregated_value,
    queryAggregated: (
      await ctx.query({
        series: [{ kind: 'EventsNode', event: 'viewed', math: 'dau' }],
        aggregation_group_type_index: 0,
        trendsFilter: bold,
      })
    ).results[0].aggregated_value,
  };
}

const EXPECTED = {
  filter: [['viewed', 3]],
  seriesFilter: [['viewed', 1]],
  seats: [['viewed', 3]],
  // Ties rank by label: "None (i.e. no value)" (dan, eve) before "retail" (cat, fay).
  breakdown: [
    ['tech', 3],
    ['$$_posthog_breakdown_null_$$', 2],
    ['retail', 2],
  ],
  uniqueGroup: 3,
  uniqueGroupDaily: [0, 0, 0, 0, 0, 3, 2, 0],
  // dan's event has no company: left out.
  aggregatedTotal: [['viewed', 6]],
  aggregatedDau: 3,
  queryFilter: [['viewed', 3]],
  queryBreakdown: [
    ['tech', 3],
    ['$$_posthog_breakdown_null_$$', 2],
    ['retail', 2],
  ],
  queryUniqueGroup: 3,
  queryAggregated: 3,
};

describe('groups in trends', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await groupProject();
    // The viewed events are stored before the groups: wait until the trend counts all 7.
    await eventually(async () => expect(counts(await ctx.legacy({}))).toEqual([['viewed', 7]]));
  }, 60_000);

  it('filters, breaks down and counts by group from raw events (legacy endpoint and TrendsQuery)', async () => {
    expect(await answers(ctx)).toEqual(EXPECTED);
  }, 120_000);

  it('the same numbers once the days are compacted into segments ($group_N columns)', async () => {
    const other = await groupProject();
    await eventually(async () => expect(counts(await other.legacy({}))).toEqual([['viewed', 7]]));
    for (const day of ['2024-03-01', '2024-03-10', '2024-03-11'])
      await compactDay(other.projectId, day, new Date('2024-03-12T12:10:00Z'));
    const res = await other.c.post(`/api/environments/${other.projectId}/insights/trend/`, {
      events: [{ id: 'viewed' }],
      breakdown_type: 'group',
      breakdown: 'industry',
      breakdown_group_type_index: 0,
      refresh: true,
    });
    expect(res.headers.get('x-trend-source')).toBe('segments');
    expect(await answers(other)).toEqual(EXPECTED);
  }, 120_000);

  it('group filters in the project’s test-account filters', async () => {
    const patched = await ctx.c.patch(`/api/environments/${ctx.projectId}/`, {
      test_account_filters: [
        { type: 'group', group_type_index: 0, key: 'industry', value: 'retail', operator: 'is_not' },
      ],
    });
    expect(patched.status).toBe(200);
    expect(counts(await ctx.legacy({ filter_test_accounts: true }))).toEqual([['viewed', 5]]);
    expect(queryCounts(await ctx.query({ filterTestAccounts: true }))).toEqual([['viewed', 5]]);
    await ctx.c.patch(`/api/environments/${ctx.projectId}/`, { test_account_filters: [] });
  });

  it('EventsQuery takes group property filters (rows and aggregates)', async () => {
    const events = (query: Record<string, unknown>) =>
      ctx.c.post(`/api/environments/${ctx.projectId}/query/`, {
        query: { kind: 'EventsQuery', event: 'viewed', after: '2024-03-01', ...query },
      });
    const tech = [{ type: 'group', group_type_index: 0, key: 'industry', value: 'tech' }];
    const rows = await events({ select: ['distinct_id', 'timestamp'], orderBy: ['timestamp'], properties: tech });
    expect(rows.status, JSON.stringify(rows.body)).toBe(200);
    expect(rows.body.results.map((r: unknown[]) => r[0])).toEqual(['ada', 'bob', 'ada']);
    const notRetail = [{ type: 'group', group_type_index: 0, key: 'industry', value: 'retail', operator: 'is_not' }];
    const count = await events({ select: ['count()'], properties: notRetail });
    expect(count.body.results).toEqual([[5]]);
    const missing = await events({ select: ['count()'], properties: [{ type: 'group', key: 'industry', value: 'x' }] });
    expect([missing.status, missing.body.attr]).toEqual([400, 'query__properties__0__group_type_index']);
  });

  it('ActorsQuery over an InsightActorsQuery that counts groups: the groups behind a number, as PostHog shapes them', async () => {
    const actors = async (source: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      const res = await ctx.c.post(`/api/environments/${ctx.projectId}/query/`, {
        query: {
          kind: 'ActorsQuery',
          source: {
            kind: 'InsightActorsQuery',
            source: {
              kind: 'TrendsQuery',
              series: [{ kind: 'EventsNode', event: 'viewed', math: 'unique_group', math_group_type_index: 0 }],
              dateRange: { date_from: '-7d' },
            },
            ...source,
          },
          ...extra,
        },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    // The whole period: acme 3 events, globex 2, initech 1 (never identified: counted, not listed).
    const all = await actors({}, { select: ['actor', 'event_count'] });
    expect(all.columns).toEqual(['actor', 'event_count']);
    expect(all.results.map((r: any[]) => [r[0].group_key, r[1]])).toEqual([
      ['acme', 3],
      ['globex', 2],
    ]);
    expect(all.missing_actors_count).toBe(1);
    expect(all.results[0][0]).toMatchObject({
      id: 'acme',
      type: 'group',
      group_key: 'acme',
      group_type_index: 0,
      properties: { industry: 'tech', seats: 50 },
      group_properties: { industry: 'tech', seats: 50 },
    });
    expect(typeof all.results[0][0].created_at).toBe('string');
    // One day (Mar 11: acme, globex), with a breakdown value and paging.
    const day = await actors({ day: '2024-03-11' }, { select: ['id', 'event_count', 'properties.industry'] });
    expect(day.results).toEqual([
      ['acme', 1, 'tech'],
      ['globex', 1, 'retail'],
    ]);
    const retail = await actors(
      {
        source: {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'viewed' }],
          aggregation_group_type_index: 0,
          breakdownFilter: { breakdown_type: 'group', breakdown: 'industry', breakdown_group_type_index: 0 },
        },
        breakdown: 'retail',
      },
      { select: ['id', 'event_count'], limit: 1 },
    );
    expect([retail.results, retail.hasMore]).toEqual([[['globex', 2]], false]);
    const paged = await actors({}, { select: ['id'], limit: 1, offset: 1 });
    expect([paged.results, paged.hasMore]).toEqual([[['globex']], true]);
  });

  it('caps the groups one query loads: a 400 naming the cap, the field and the number', async () => {
    const query = parseTrendRequest({
      events: [{ id: 'viewed' }],
      breakdown_type: 'group',
      breakdown: 'industry',
      breakdown_group_type_index: 0,
    });
    const rows = ['acme', 'globex', 'initech'].map((company, i) => ({
      event: 'viewed',
      distinct_id: `u${i}`,
      t: Date.parse('2024-03-10T10:00:00Z'),
      properties: { $group_0: company },
    }));
    const columns = {
      segments: [],
      rows,
      from: 0,
      to: Date.parse('2024-03-12T00:00:00Z'),
      projection: { properties: ['$group_0'], distinctIds: false },
    };
    const lookup = await groupLookup(ctx.projectId, query, [0], columns, 3);
    expect(lookup(0, 'acme')).toEqual({ industry: 'tech', seats: 50 });
    expect(lookup(0, 'initech')).toBeUndefined();
    const over = await groupLookup(ctx.projectId, query, [0], columns, 2).catch((e: ValidationError) => e);
    expect(over).toBeInstanceOf(ValidationError);
    expect([(over as ValidationError).attr, (over as ValidationError).detail]).toEqual([
      'date_from',
      'This trend reads the properties of 3 groups; at most 2 are read per query. Choose a shorter date range.',
    ]);
    expect(MAX_QUERY_GROUPS).toBe(50_000);

    const filters = parseProperties([{ type: 'group', group_type_index: 0, key: 'industry', value: 'tech' }], 'p', {
      groups: true,
    }).group;
    expect((await filterGroupLookup(ctx.projectId, filters, 'query__properties', 2))(0, 'globex')).toEqual({
      industry: 'retail',
      seats: 5,
    });
    const tooMany = await filterGroupLookup(ctx.projectId, filters, 'query__properties', 1).catch((e) => e);
    expect(tooMany).toMatchObject({ attr: 'query__properties' });
    expect(tooMany.detail).toMatch(/at most 1; group type 0 has more/);
    expect(MAX_EVENTS_QUERY_GROUPS).toBe(10_000);
  });

  it('refuses group fields it cannot read, naming them', async () => {
    const path = `/api/environments/${ctx.projectId}/insights/trend/`;
    const cases: [Record<string, unknown>, string][] = [
      [{ properties: [{ type: 'group', key: 'industry', value: 'tech' }] }, 'properties__0__group_type_index'],
      [{ breakdown_type: 'group', breakdown: 'industry' }, 'breakdown_group_type_index'],
      [{ events: [{ id: 'viewed', math: 'unique_group' }] }, 'events__0__math_group_type_index'],
      [{ aggregation_group_type_index: 5 }, 'aggregation_group_type_index'],
    ];
    for (const [body, attr] of cases) {
      const res = await ctx.c.post(path, { events: [{ id: 'viewed' }], ...body });
      expect([res.status, res.body.attr]).toEqual([400, attr]);
    }
  });

  it('a group change retires cached answers at once', async () => {
    const p = await groupProject();
    const path = `/api/environments/${p.projectId}/insights/trend/`;
    const body = {
      events: [{ id: 'viewed' }],
      breakdown_type: 'group',
      breakdown: 'industry',
      breakdown_group_type_index: 0,
    };
    await eventually(async () =>
      expect(counts((await p.c.post(path, { ...body, refresh: true })).body)).toHaveLength(3),
    );
    const first = await p.c.post(path, body);
    const cached = await p.c.post(path, body);
    expect(cached.body.is_cached).toBe(true);
    expect(counts(cached.body)).toEqual(counts(first.body));
    await api.as().post('/batch', {
      api_key: p.token,
      batch: [identify('company', 'acme', { industry: 'fintech' }, '2024-03-02T00:00:00Z')],
    });
    // Without a refresh: the cached answer (which says "tech") is no longer served.
    await eventually(async () => {
      const res = await p.c.post(path, body);
      expect(counts(res.body)).toEqual([
        ['fintech', 3],
        ['$$_posthog_breakdown_null_$$', 2],
        ['retail', 2],
      ]);
    });
    // Renaming a type (its metadata) retires them too.
    expect((await p.c.post(path, body)).body.is_cached).toBe(true);
    const renamed = await p.c.patch(`/api/projects/${p.projectId}/groups_types/update_metadata`, [
      { group_type_index: 0, name_singular: 'Company', name_plural: 'Companies' },
    ]);
    expect(renamed.status).toBe(200);
    expect((await p.c.post(path, body)).body.is_cached).toBe(false);
  }, 60_000);
});
