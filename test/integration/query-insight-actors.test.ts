// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, expectErrorShape, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();

const ev = (event: string, distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp,
  properties,
});

const BATCH = [
  ev('$pageview', 'a', '2024-03-06T09:00:00Z', { $browser: 'Chrome', $set: { email: 'a@example.com' } }),
  ev('$pageview', 'a', '2024-03-06T11:00:00Z', { $browser: 'Chrome' }),
  ev('$pageview', 'b', '2024-03-06T10:00:00Z', { $browser: 'Chrome', $set: { email: 'b@example.com' } }),
  ev('$pageview', 'c', '2024-03-06T12:00:00Z', { $browser: 'Firefox' }),
  ev('$pageview', 'c', '2024-03-07T12:00:00Z', { $browser: 'Chrome' }),
  ev('$pageview', 'd', '2024-03-01T08:00:00Z', { $browser: 'Chrome' }),
  ev('signed up', 'b', '2024-03-06T10:30:00Z'),
];

let c: Client;
let projectId: number;

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  projectId = p.projectId;
  expect((await api.as().post('/batch', { api_key: p.token, batch: BATCH })).body.accepted).toBe(BATCH.length);
  await eventually(async () => {
    const persons = await c.get(`/api/environments/${projectId}/persons/`);
    expect(persons.body.results).toHaveLength(4);
  }, 60_000);
});

const TREND = {
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: '$pageview', math: 'total' }],
  dateRange: { date_from: '-14d' },
  interval: 'day',
  breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
};

const actors = (source: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  c.post(`/api/environments/${projectId}/query/`, {
    query: { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', source: TREND, ...source }, ...extra },
  });

/** `distinct id: events` of each row: who the answer lists, and how many of their events it counted. */
const who = (body: any) =>
  body.results.map(([actor, count]: [any, number]) => `${actor.distinct_ids.join('+')}: ${count}`);

describe('ActorsQuery over an InsightActorsQuery (the persons behind a trend point)', () => {
  it("lists the persons of one day's breakdown value, most events first, adding up to the point", async () => {
    const res = await actors({ day: '2024-03-06', series: 0, breakdown: 'Chrome' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.columns).toEqual(['actor', 'event_count']);
    expect(who(res.body)).toEqual(['a: 2', 'b: 1']);
    expect(res.body.results[0][0]).toMatchObject({ properties: { email: 'a@example.com' }, distinct_ids: ['a'] });
    expect(res.body.hasMore).toBe(false);
    // The same engine drew the point: its value is the sum of the listed counts.
    const trend = await c.post(`/api/environments/${projectId}/query/`, { query: TREND });
    const chrome = trend.body.results.find((s: any) => s.breakdown_value === 'Chrome');
    expect(chrome.data[chrome.days.indexOf('2024-03-06')]).toBe(3);
    // Another day and value; a day without events lists nobody.
    expect(who((await actors({ day: '2024-03-06', breakdown: 'Firefox' })).body)).toEqual(['c: 1']);
    expect(who((await actors({ day: '2024-03-07', breakdown: 'Chrome' })).body)).toEqual(['c: 1']);
    expect(who((await actors({ day: '2024-03-08', breakdown: 'Chrome' })).body)).toEqual([]);
  });

  it('without a breakdown: every person of the day; unique users count each once; pages by limit and offset', async () => {
    const { breakdownFilter: _, ...plain } = TREND;
    const query = (source: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      c.post(`/api/environments/${projectId}/query/`, {
        query: { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', ...source }, ...extra },
      });
    const all = who((await query({ source: plain, day: '2024-03-06' })).body);
    // Ties in the order of the persons' ids.
    expect(all[0]).toBe('a: 2');
    expect([...all].sort()).toEqual(['a: 2', 'b: 1', 'c: 1']);
    const dau = {
      ...plain,
      series: [
        { kind: 'EventsNode', event: '$pageview', math: 'total' },
        { kind: 'EventsNode', event: 'signed up', math: 'dau' },
      ],
    };
    expect(who((await query({ source: dau, day: '2024-03-06', series: 1 })).body)).toEqual(['b: 1']);
    const first = await query({ source: plain, day: '2024-03-06' }, { limit: 2 });
    expect(who(first.body)).toEqual(all.slice(0, 2));
    expect(first.body.hasMore).toBe(true);
    const second = await query({ source: plain, day: '2024-03-06' }, { limit: 2, offset: 2 });
    expect(who(second.body)).toEqual(all.slice(2));
    expect(second.body.hasMore).toBe(false);
  });

  it("names the field of what it cannot answer: the source's kind, the series, the Other row, the trend's own fields", async () => {
    const refused = async (query: Record<string, unknown>, attr: string) => {
      const res = await c.post(`/api/environments/${projectId}/query/`, { query: { kind: 'ActorsQuery', ...query } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expectErrorShape(res.body);
      expect(res.body.attr).toBe(attr);
      return res.body.detail as string;
    };
    const insight = (source: Record<string, unknown>) => ({ source: { kind: 'InsightActorsQuery', ...source } });
    await refused({ source: { kind: 'FunnelsQuery' } }, 'query__source__kind');
    await refused(insight({ source: { kind: 'FunnelsQuery' }, day: '2024-03-06' }), 'query__source__source__kind');
    await refused(insight({ source: TREND, day: '2024-03-06', series: 3 }), 'query__source__series');
    await refused(insight({ source: TREND }), 'query__source__day');
    expect(
      await refused(
        insight({ source: TREND, day: '2024-03-06', breakdown: '$$_posthog_breakdown_other_$$' }),
        'query__source__breakdown',
      ),
    ).toMatch(/Other/);
    await refused(
      insight({ source: { ...TREND, interval: 'fortnight' }, day: '2024-03-06' }),
      'query__source__source__interval',
    );
    await refused(
      { ...insight({ source: TREND, day: '2024-03-06' }), select: ['properties.email'] },
      'query__select__0',
    );
  });
});
