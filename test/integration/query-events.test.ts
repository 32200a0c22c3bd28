// Relative dates are resolved against the one clock, frozen for this file; a small scan cap makes the cap testable.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';
process.env.ANALYTICS_EVENTS_QUERY_SCAN_LIMIT = '40';
// The aggregation caps, lowered so a test reaches them: the main project's 48 events fit, 61 do not; 30 groups.
process.env.ANALYTICS_EVENTS_QUERY_AGGREGATE_LIMIT = '60';
process.env.ANALYTICS_EVENTS_QUERY_GROUP_LIMIT = '30';

import { DynamoDBDocumentClient } from '#shared/aws/dynamodb.ts';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { readEventDay } from '#shared/db/segments.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { type Client, eventually, expectErrorShape, newProject, useApi } from '../support/api.ts';

/**
 * EventsQuery over HTTP. Events of three names over four days (2024-04-17..20); the first two days
 * are compacted into segments, the last two stay raw, so count() reads both paths.
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
const NAMES = ['$pageview', '$pageview', 'signed up', '$autocapture'];
const browsers = ['Chrome', 'Safari', 'Firefox'];

const batch = Array.from({ length: 48 }, (_, i) => ({
  event: NAMES[i % 4]!,
  distinct_id: `user-${i % 5}`,
  timestamp: new Date(Date.parse('2024-04-17T00:30:00Z') + i * 97 * 60_000).toISOString(),
  uuid: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  properties: {
    $browser: browsers[i % 3]!,
    amount: i,
    $os: i % 2 ? 'Windows' : 'Mac OS X',
    price: String(i * 1.5),
    $current_url: i % 3 === 1 ? `https://shop.example/pricing?from=${i}` : 'https://shop.example/home',
    ...(i === 1 ? { $set: { email: 'user1@example.com' } } : {}),
  } as Record<string, unknown>,
}));

let c: Client;
let projectId: number;
let path: string;

const query = (q: Record<string, unknown>) => c.post(path, { query: { kind: 'EventsQuery', ...q } });
const ok = async (q: Record<string, unknown>) => {
  const reply = await query(q);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
};
const refused = async (q: Record<string, unknown>, attr: string) => {
  const reply = await query(q);
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expectErrorShape(reply.body);
  expect(reply.body.attr).toBe(attr);
  return reply.body.detail as string;
};

const t = (iso: string) => Date.parse(iso);
const inWindow = (after: string, before: string) => (e: (typeof batch)[number]) =>
  t(e.timestamp) > t(after) && t(e.timestamp) < t(before);
const newestFirst = (a: { timestamp: string }, b: { timestamp: string }) => t(b.timestamp) - t(a.timestamp);
const WEEK = { after: '2024-04-13T12:00:00Z', before: '2024-04-20T12:00:05Z' };
// The frozen clock's capture stores timestamps to the millisecond.
const iso = (s: string) => new Date(s).toISOString();

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  projectId = p.projectId;
  path = `/api/environments/${projectId}/query/`;
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
  await eventually(async () => {
    const hours = await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23');
    expect([...hours.values()].reduce((a, b) => a + b, 0)).toBe(batch.length);
  }, 20_000);
  for (const day of ['2024-04-17', '2024-04-18'])
    expect((await compactDay(projectId, day, new Date(NOW + 70_000))).complete).toBe(true);
});

describe('EventsQuery rows', () => {
  it('answers * for one event name, newest first, as PostHog shapes it', async () => {
    const body = await ok({ select: ['*'], event: 'signed up', after: '-7d' });
    const expected = batch.filter((e) => e.event === 'signed up').sort(newestFirst);
    expect(body.columns).toEqual(['*']);
    expect(body.types).toHaveLength(1);
    expect(body.hasMore).toBe(false);
    expect(body.limit).toBe(100);
    expect(body.offset).toBe(0);
    expect(body.results.map((r: any[]) => r[0].uuid)).toEqual(expected.map((e) => e.uuid));
    const first = body.results[0][0];
    const source = expected[0]!;
    expect(first).toMatchObject({
      uuid: source.uuid,
      event: 'signed up',
      distinct_id: source.distinct_id,
      timestamp: iso(source.timestamp),
      team_id: projectId,
      elements_chain: '',
      person_mode: 'full',
    });
    expect(first.properties).toMatchObject({ $browser: source.properties.$browser, amount: source.properties.amount });
    expect(typeof first.created_at).toBe('string');
  });

  it('selects columns, oldest first within after/before, with property values as text', async () => {
    const after = '2024-04-18T06:00:00Z';
    const before = '2024-04-19T18:00:00Z';
    const body = await ok({
      select: ['event', 'timestamp', 'distinct_id', 'properties.amount', 'properties.nope', 'uuid'],
      event: '$pageview',
      after,
      before,
      orderBy: ['timestamp ASC'],
    });
    const expected = batch
      .filter((e) => e.event === '$pageview' && inWindow(after, before)(e))
      .sort((a, b) => -newestFirst(a, b));
    expect(expected.length).toBeGreaterThan(5);
    expect(body.columns).toEqual(['event', 'timestamp', 'distinct_id', 'properties.amount', 'properties.nope', 'uuid']);
    expect(body.results).toEqual(
      expected.map((e) => ['$pageview', iso(e.timestamp), e.distinct_id, String(e.properties.amount), null, e.uuid]),
    );
  });

  it('every name when no event is given (still ordered across names)', async () => {
    const window = { after: '2024-04-19T00:00:00Z', before: '2024-04-19T23:59:59Z' };
    const body = await ok({ select: ['event', 'timestamp'], ...window });
    const expected = batch.filter(inWindow(window.after, window.before)).sort(newestFirst);
    expect(new Set(expected.map((e) => e.event)).size).toBe(3);
    expect(body.results).toEqual(expected.map((e) => [e.event, iso(e.timestamp)]));
  });

  it('filters on event properties (list and group forms, RE2 regex)', async () => {
    const body = await ok({
      select: ['uuid'],
      event: '$pageview',
      ...WEEK,
      properties: [
        { key: '$browser', operator: 'exact', value: ['Chrome', 'Firefox'], type: 'event' },
        { key: 'amount', operator: 'gt', value: 10 },
      ],
    });
    const expected = batch
      .filter(
        (e) => e.event === '$pageview' && e.properties.$browser !== 'Safari' && (e.properties.amount as number) > 10,
      )
      .sort(newestFirst);
    expect(expected.length).toBeGreaterThan(3);
    expect(body.results.map((r: string[]) => r[0])).toEqual(expected.map((e) => e.uuid));
    const regex = await ok({
      select: ['properties.$browser'],
      ...WEEK,
      event: '$pageview',
      properties: { type: 'OR', values: [{ key: '$browser', operator: 'regex', value: '^Saf' }] },
    });
    expect(new Set(regex.results.map((r: string[]) => r[0]))).toEqual(new Set(['Safari']));
  });

  it("filters on person properties (the current properties of each event's person)", async () => {
    const q = {
      ...WEEK,
      event: '$pageview',
      properties: [{ key: 'email', operator: 'icontains', value: 'USER1@', type: 'person' }],
    };
    const expected = batch.filter((e) => e.event === '$pageview' && e.distinct_id === 'user-1').sort(newestFirst);
    expect(expected.length).toBeGreaterThan(2);
    const rows = await ok({ ...q, select: ['uuid', 'distinct_id'], limit: 2 });
    expect(rows.results).toEqual(expected.slice(0, 2).map((e) => [e.uuid, 'user-1']));
    expect(rows.hasMore).toBe(true);
    const counted = await ok({ ...q, select: ['distinct_id', 'count()'] });
    expect(counted.results).toEqual([['user-1', expected.length]]);
  });

  it('defaults to the last 24 hours', async () => {
    const body = await ok({ select: ['uuid'] });
    const expected = batch.filter(inWindow('2024-04-19T12:00:00Z', '2024-04-20T12:00:05Z')).sort(newestFirst);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(batch.length / 3);
    expect(body.results.map((r: string[]) => r[0])).toEqual(expected.map((e) => e.uuid));
  });

  it('pages with limit, offset and hasMore, the pages adding up to the whole list', async () => {
    const all = batch.filter((e) => e.event === '$pageview').sort(newestFirst);
    const pages: string[] = [];
    for (let offset = 0; ; offset += 7) {
      const body = await ok({ select: ['uuid'], event: '$pageview', ...WEEK, limit: 7, offset });
      expect(body.limit).toBe(7);
      expect(body.offset).toBe(offset);
      pages.push(...body.results.map((r: string[]) => r[0]));
      expect(body.hasMore).toBe(offset + 7 < all.length);
      if (!body.hasMore) break;
    }
    expect(pages).toEqual(all.map((e) => e.uuid));
  });

  it("limit 0 is PostHog's default page (100 rows), not an empty page that says more follow", async () => {
    const all = batch.filter((e) => e.event === '$pageview').sort(newestFirst);
    const body = await ok({ select: ['uuid'], event: '$pageview', ...WEEK, limit: 0 });
    expect(body).toMatchObject({ limit: 100, offset: 0, hasMore: false });
    expect(body.results.map((r: string[]) => r[0])).toEqual(all.map((e) => e.uuid));
  });

  it('person is the person object (or just the distinct id without a person)', async () => {
    const body = await ok({ select: ['person', 'distinct_id'], event: '$pageview', ...WEEK, limit: 50 });
    const ofUser1 = body.results.find((r: any[]) => r[1] === 'user-1');
    expect(ofUser1[0]).toMatchObject({ distinct_id: 'user-1', properties: { email: 'user1@example.com' } });
    expect(typeof ofUser1[0].uuid).toBe('string');
    expect(typeof ofUser1[0].created_at).toBe('string');
  });

  it('personId keeps the events of that person’s distinct ids', async () => {
    const persons = await c.get(`/api/environments/${projectId}/persons/?distinct_id=user-2`);
    const id = persons.body.results[0].id;
    const body = await ok({ select: ['distinct_id'], ...WEEK, event: 'signed up', personId: String(id) });
    expect(body.results.length).toBe(batch.filter((e) => e.event === 'signed up' && e.distinct_id === 'user-2').length);
    expect(new Set(body.results.map((r: string[]) => r[0]))).toEqual(new Set(['user-2']));
  });
});

describe('EventsQuery count()', () => {
  it('count() alone, and grouped by event, over compacted and raw days', async () => {
    const day17 = await readEventDay(projectId, '2024-04-17', '$pageview', null);
    const day19 = await readEventDay(projectId, '2024-04-19', '$pageview', null);
    expect([day17.segments.size, day19.segments.size]).toEqual([1, 0]);
    expect((await ok({ select: ['count()'], ...WEEK })).results).toEqual([[batch.length]]);
    const body = await ok({ select: ['event', 'count()'], ...WEEK });
    expect(body.columns).toEqual(['event', 'count()']);
    expect(body.results).toEqual([
      ['$pageview', 24],
      ['$autocapture', 12],
      ['signed up', 12],
    ]);
  });

  it('groups by a property with a filter, count() ASC, and pages', async () => {
    const q = {
      select: ['properties.$browser', 'count()'],
      event: '$pageview',
      ...WEEK,
      properties: [{ key: 'amount', operator: 'lt', value: 30 }],
      orderBy: ['count() ASC'],
    };
    const tally = new Map<string, number>();
    for (const e of batch)
      if (e.event === '$pageview' && (e.properties.amount as number) < 30)
        tally.set(String(e.properties.$browser), (tally.get(String(e.properties.$browser)) ?? 0) + 1);
    const body = await ok(q);
    expect(Object.fromEntries(body.results)).toEqual(Object.fromEntries(tally));
    const counts = body.results.map((r: [string, number]) => r[1]);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    const first = await ok({ ...q, limit: 1 });
    expect(first.results).toEqual([body.results[0]]);
    expect(first.hasMore).toBe(true);
  });

  it('groups by person', async () => {
    const body = await ok({ select: ['person', 'count()'], event: 'signed up', ...WEEK });
    const user = body.results.find((r: any[]) => r[0].distinct_id === 'user-1');
    expect(user?.[1]).toBe(batch.filter((e) => e.event === 'signed up' && e.distinct_id === 'user-1').length);
  });
});

describe('EventsQuery reads only the named event', () => {
  interface Seen {
    names: Set<string>;
    items: number;
  }
  let restore: (() => void) | undefined;
  afterEach(() => restore?.());

  /** Every event, day counter and segment item DynamoDB hands back while `run` runs, by event name. */
  async function itemsRead(run: () => Promise<unknown>): Promise<Seen> {
    const seen: Seen = { names: new Set(), items: 0 };
    const original = DynamoDBDocumentClient.prototype.send;
    const spy = vi.spyOn(DynamoDBDocumentClient.prototype, 'send').mockImplementation(async function (
      this: DynamoDBDocumentClient,
      ...args: any[]
    ) {
      const out: any = await (original as any).apply(this, args);
      const items = [...(out?.Items ?? []), ...Object.values(out?.Responses ?? {}).flat()] as Record<string, unknown>[];
      for (const item of items)
        if (['Event', 'EventSegment', 'DayCount'].includes(String(item.entity))) {
          seen.items += 1;
          seen.names.add(String(item.event));
        }
      return out;
    });
    restore = () => spy.mockRestore();
    await run();
    spy.mockRestore();
    return seen;
  }

  it('a week of one name reads no item of another name (rows and count())', async () => {
    const rows = await itemsRead(() => ok({ select: ['*'], event: 'signed up', ...WEEK, limit: 3 }));
    expect(rows.names).toEqual(new Set(['signed up']));
    // A page of 3 (+1 for hasMore) stops reading before the week's 12 events of the name.
    expect(rows.items).toBeGreaterThanOrEqual(4);
    expect(rows.items).toBeLessThan(batch.filter((e) => e.event === 'signed up').length);
    const counted = await itemsRead(() => ok({ select: ['count()'], event: 'signed up', ...WEEK }));
    expect(counted.names).toEqual(new Set(['signed up']));
    // Not vacuous: without a name every name is read.
    const every = await itemsRead(() =>
      ok({ select: ['event'], after: '2024-04-19T00:00:00Z', before: '2024-04-19T23:59:59Z' }),
    );
    expect(every.names).toEqual(new Set(['$pageview', 'signed up', '$autocapture']));
  });
});

describe('EventsQuery refusals', () => {
  it('names what is wrong, with attr into the query', async () => {
    expect(await refused({ limit: 10_001 }, 'query__limit')).toContain('10000');
    expect(await refused({ limit: -1 }, 'query__limit')).toContain('greater than or equal to 0');
    expect(await refused({ fixedProperties: [{ key: 'a', value: 1 }] }, 'query__fixedProperties')).toContain(
      'fixedProperties',
    );
    expect(await refused({ after: '-400d' }, 'query__after')).toContain('366');
    expect(await refused({ before: 'tomorrow-ish' }, 'query__before')).toContain('not a date');
    expect(await refused({ select: ['*', 'count()'] }, 'query__select__0')).toContain('count()');
    expect(await refused({ select: ['*', 'sum(properties.amount)'] }, 'query__select__0')).toContain('aggregate');
    expect(
      await refused({ properties: [{ key: 'x', operator: 'regex', value: '(a)\\1' }] }, 'query__properties__0__value'),
    ).toContain('RE2');
    expect(
      await refused({ properties: [{ key: 'email', value: 'a', type: 'cohort' }] }, 'query__properties__0__value'),
    ).toContain('cohort id');
    expect(
      await refused({ properties: [{ key: 'x', value: 'a', type: 'element' }] }, 'query__properties__0__type'),
    ).toContain('Element');
    expect(await refused({ personId: 'not-an-id' }, 'query__personId')).toContain('integer');
  });

  it('refuses an answer over 5 MiB, saying its size, and answers the same events with fewer columns', async () => {
    const other = await newProject(api.as);
    const big = Array.from({ length: 30 }, (_, i) => ({
      event: 'big',
      distinct_id: 'heavy',
      timestamp: new Date(NOW - (i + 1) * 60_000).toISOString(),
      properties: { blob: `${i}`.padEnd(200_000, 'x') },
    }));
    expect((await api.as().post('/batch', { api_key: other.token, batch: big })).body.accepted).toBe(30);
    const bigPath = `/api/environments/${other.projectId}/query/`;
    const whole = await api.as(other.key).post(bigPath, { query: { kind: 'EventsQuery', event: 'big', limit: 30 } });
    expect(whole.status).toBe(400);
    expectErrorShape(whole.body);
    expect(whole.body.attr).toBe('query__limit');
    expect(whole.body.detail).toMatch(/KiB; at most 5,120 KiB/);
    const narrow = await api
      .as(other.key)
      .post(bigPath, { query: { kind: 'EventsQuery', select: ['uuid'], event: 'big', limit: 30 } });
    expect(narrow.status).toBe(200);
    expect(narrow.body.results).toHaveLength(30);
  });

  it('caps the events one request examines, saying the number', async () => {
    // Every name over the whole week: 48 events to examine, over the cap of 40 this file sets.
    const detail = await refused({ select: ['event'], ...WEEK }, 'query__after');
    expect(detail).toContain('more than 40 events');
    // The same week of one name is well inside it.
    expect((await ok({ select: ['event'], event: 'signed up', ...WEEK })).results).toHaveLength(12);
  });
});

describe('EventsQuery HogQL expressions', () => {
  const pageviews = batch.filter((e) => e.event === '$pageview');
  const hour = (e: (typeof batch)[number]) => new Date(e.timestamp).getUTCHours();

  it('where: a list of boolean expressions, ANDed, on rows in time order', async () => {
    const body = await ok({
      select: ['uuid', 'timestamp'],
      event: '$pageview',
      ...WEEK,
      where: ['toHour(timestamp) >= 9'],
    });
    const expected = pageviews.filter((e) => hour(e) >= 9).sort(newestFirst);
    expect(expected.length).toBeGreaterThan(3);
    expect(expected.length).toBeLessThan(pageviews.length);
    expect(body.results).toEqual(expected.map((e) => [e.uuid, iso(e.timestamp)]));
    // A where entry may name a select column by its alias, as ClickHouse resolves them.
    const aliased = await ok({
      select: ['uuid', 'toHour(timestamp) AS hour'],
      event: '$pageview',
      ...WEEK,
      where: ['hour >= 9'],
    });
    expect(aliased.columns).toEqual(['uuid', 'hour']);
    expect(aliased.results).toEqual(expected.map((e) => [e.uuid, hour(e)]));
    const both = await ok({
      select: ['uuid', 'properties.$current_url'],
      event: '$pageview',
      ...WEEK,
      where: ["properties.$current_url ILIKE '%/PRICING%'", 'toHour(timestamp) >= 9'],
    });
    const pricing = pageviews
      .filter((e) => hour(e) >= 9 && String(e.properties.$current_url).includes('/pricing'))
      .sort(newestFirst);
    expect(pricing.length).toBeGreaterThan(0);
    expect(pricing.length).toBeLessThan(expected.length);
    expect(both.results).toEqual(pricing.map((e) => [e.uuid, e.properties.$current_url]));
  });

  it('where reads the person (person.properties) and combines with property filters', async () => {
    const body = await ok({
      select: ['distinct_id', 'person.properties.email'],
      event: '$pageview',
      ...WEEK,
      where: ["person.properties.email = 'user1@example.com'"],
      properties: [{ key: 'amount', operator: 'gt', value: 10 }],
    });
    const expected = pageviews.filter((e) => e.distinct_id === 'user-1' && (e.properties.amount as number) > 10);
    expect(expected.length).toBeGreaterThan(1);
    expect(body.results).toEqual(expected.map(() => ['user-1', 'user1@example.com']));
  });

  it('selects expressions per row (concat, arithmetic, dates), typed', async () => {
    const body = await ok({
      select: [
        "concat(properties.$os, ' ', properties.$browser)",
        'properties.amount * 2 AS double',
        'toStartOfDay(timestamp) -- Day',
        'properties.amount',
      ],
      event: '$pageview',
      ...WEEK,
      limit: 3,
    });
    const expected = [...pageviews].sort(newestFirst).slice(0, 3);
    expect(body.columns).toEqual([
      "concat(properties.$os, ' ', properties.$browser)",
      'double',
      'toStartOfDay(timestamp) -- Day',
      'properties.amount',
    ]);
    expect(body.results).toEqual(
      expected.map((e) => [
        `${e.properties.$os} ${e.properties.$browser}`,
        (e.properties.amount as number) * 2,
        `${e.timestamp.slice(0, 10)}T00:00:00+00:00`,
        String(e.properties.amount),
      ]),
    );
    expect(body.types).toEqual(['String', 'Int64', "DateTime64(6, 'UTC')", 'Nullable(String)']);
  });

  it('orders rows by any expression, several orders, and pages through them', async () => {
    const q = {
      select: ['uuid', 'properties.$browser'],
      event: '$pageview',
      ...WEEK,
      orderBy: ['properties.$browser ASC', 'toFloat(properties.price) DESC'],
    };
    const expected = [...pageviews].sort(
      (a, b) =>
        String(a.properties.$browser).localeCompare(String(b.properties.$browser)) ||
        Number(b.properties.price) - Number(a.properties.price),
    );
    const body = await ok(q);
    expect(body.results).toEqual(expected.map((e) => [e.uuid, e.properties.$browser]));
    const pages: string[] = [];
    for (let offset = 0; ; offset += 5) {
      const page = await ok({ ...q, limit: 5, offset });
      pages.push(...page.results.map((r: string[]) => r[0]));
      expect(page.hasMore).toBe(offset + 5 < expected.length);
      if (!page.hasMore) break;
    }
    expect(pages).toEqual(expected.map((e) => e.uuid));
    // An order that is not the events' time order reads the whole window: within the scan cap of 40.
    expect(await refused({ select: ['event'], ...WEEK, orderBy: ['event'] }, 'query__after')).toContain('40 events');
  });

  it('aggregates group by the other columns: a property, an expression', async () => {
    const body = await ok({ select: ['properties.$browser', 'count()'], ...WEEK });
    const tally = new Map<string, number>();
    for (const e of batch)
      tally.set(String(e.properties.$browser), (tally.get(String(e.properties.$browser)) ?? 0) + 1);
    expect(Object.fromEntries(body.results)).toEqual(Object.fromEntries(tally));
    expect(body.types).toEqual(['Nullable(String)', 'UInt64']);
    const combos = await ok({
      select: ["concat(properties.$os, ' ', properties.$browser) AS platform", 'count() AS n'],
      event: '$pageview',
      ...WEEK,
      orderBy: ['platform ASC'],
    });
    const platforms = new Map<string, number>();
    for (const e of pageviews) {
      const key = `${e.properties.$os} ${e.properties.$browser}`;
      platforms.set(key, (platforms.get(key) ?? 0) + 1);
    }
    expect(combos.columns).toEqual(['platform', 'n']);
    expect(combos.results).toEqual([...platforms].sort(([a], [b]) => (a < b ? -1 : 1)));
  });

  it('avg(toFloat(...)) per group, ordered by the first aggregate when no order is given (as PostHog)', async () => {
    const body = await ok({ select: ['event', 'avg(toFloat(properties.price))'], ...WEEK });
    const sums = new Map<string, number[]>();
    for (const e of batch) sums.set(e.event, [...(sums.get(e.event) ?? []), Number(e.properties.price)]);
    const expected = [...sums]
      .map(([event, prices]) => [event, prices.reduce((a, b) => a + b, 0) / prices.length] as const)
      .sort((a, b) => b[1] - a[1]);
    expect(body.results.map((r: [string, number]) => r[0])).toEqual(expected.map((r) => r[0]));
    body.results.forEach((r: [string, number], i: number) => {
      expect(r[1]).toBeCloseTo(expected[i]![1], 9);
    });
    expect(body.types).toEqual(['String', 'Float64']);
  });

  it('a where with an aggregate filters the groups (HAVING); count() over nothing is one row of 0', async () => {
    const perUser = new Map<string, number>();
    for (const e of pageviews) perUser.set(e.distinct_id, (perUser.get(e.distinct_id) ?? 0) + 1);
    const body = await ok({
      select: ['distinct_id', 'count()'],
      event: '$pageview',
      ...WEEK,
      where: ['count() >= 5', "distinct_id != 'user-0'"],
      orderBy: ['distinct_id'],
    });
    const expected = [...perUser].filter(([id, n]) => n >= 5 && id !== 'user-0').sort(([a], [b]) => (a < b ? -1 : 1));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(perUser.size - 1);
    expect(body.results).toEqual(expected);
    expect((await ok({ select: ['count()'], ...WEEK, where: ["event = 'nothing'"] })).results).toEqual([[0]]);
  });

  it('refuses bad expressions with the entry they are in', async () => {
    await refused({ select: ['event', 'uuid', 'nosuchfunction(event)'] }, 'query__select__2');
    await refused({ select: ['event', 'properties.$os +'] }, 'query__select__1');
    await refused({ where: ['toHour(timestamp) >>= 9'] }, 'query__where__0');
    await refused({ where: ['1 = 1', 'nosuchfield = 1'] }, 'query__where__1');
    await refused({ orderBy: ['timestamp DESC', 'lower('] }, 'query__orderBy__1');
    expect(await refused({ where: ['count() > 1'] }, 'query__where__0')).toContain('aggregate');
    expect(await refused({ orderBy: ['count() DESC'] }, 'query__orderBy__0')).toContain('aggregate');
    expect(await refused({ select: ['uuid', 'count()'] }, 'query__select__0')).toContain('uuid');
    expect(await refused({ select: ['event', 'count()'], orderBy: ['distinct_id'] }, 'query__orderBy__0')).toContain(
      'grouped by',
    );
  });

  it('integers past 2^53 are a 400 naming it (a literal, or a product of the rows), never a rounded neighbour', async () => {
    const literal = await refused({ where: ['properties.amount = 9007199254740993'] }, 'query__where__0');
    expect(literal).toMatch(/9007199254740993 at position 20 is beyond ±\(2\^53 - 1\)/);
    // amount is 0..47: times 10^14 stays below 2^53 (exact), times 10^15 passes it from amount 10 on.
    const exact = await ok({
      select: ['properties.amount', 'properties.amount * 100000000000000'],
      ...WEEK,
      limit: 20,
    });
    expect(exact.results.length).toBeGreaterThan(0);
    for (const [amount, product] of exact.results) expect(product).toBe(Number(amount) * 1e14);
    const past = await refused(
      { select: ['event', 'properties.amount * 1000000000000000'], ...WEEK, limit: 20 },
      'query__select__1',
    );
    expect(past).toMatch(/\* 1000000000000000 is beyond ±\(2\^53 - 1\)/);
  });

  it('an INTERVAL past 400 years is a 400 naming the cap (where, select), not a NULL', async () => {
    const where = await refused({ where: ['timestamp > now() - INTERVAL 999999999999 YEAR'] }, 'query__where__0');
    expect(where).toMatch(/999999999999 years is out of range: at most 400 years either way/);
    const select = await refused({ select: ['event', "dateAdd('day', 1e30, timestamp)"] }, 'query__select__1');
    expect(select).toContain('at most 146,097 days');
    // A row's amount too: amount is 0..47 days here, 10^6 times that is past the cap.
    const rows = await refused(
      { select: ['event', "dateAdd('day', properties.amount * 1000000, timestamp)"], ...WEEK, limit: 5 },
      'query__select__1',
    );
    expect(rows).toContain('at most 146,097 days');
  });

  it('caps what aggregating holds: the events read and the groups kept, each a 400 naming the number', async () => {
    const groups = await refused({ select: ['timestamp', 'count()'], ...WEEK }, 'query__select');
    expect(groups).toContain('more than 30 groups');
    const other = await newProject(api.as);
    const many = Array.from({ length: 61 }, (_, i) => ({
      event: 'tick',
      distinct_id: `ticker-${i}`,
      timestamp: new Date(NOW - (i + 1) * 60_000).toISOString(),
    }));
    expect((await api.as().post('/batch', { api_key: other.token, batch: many })).body.accepted).toBe(61);
    const reply = await api
      .as(other.key)
      .post(`/api/environments/${other.projectId}/query/`, { query: { kind: 'EventsQuery', select: ['count()'] } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect(reply.body.attr).toBe('query__after');
    expect(reply.body.detail).toContain('more than 60 events');
    // Aggregating over person fields looks the persons up: at most as many distinct ids as the scan cap (40).
    const third = await newProject(api.as);
    expect((await api.as().post('/batch', { api_key: third.token, batch: many.slice(0, 45) })).body.accepted).toBe(45);
    const persons = await api.as(third.key).post(`/api/environments/${third.projectId}/query/`, {
      query: { kind: 'EventsQuery', select: ['person.properties.plan', 'count()'] },
    });
    expect(persons.status, JSON.stringify(persons.body)).toBe(400);
    expect(persons.body.attr).toBe('query__after');
    expect(persons.body.detail).toContain('more than 40 distinct ids');
  });
});

describe("EventsQuery as PostHog's events explorer sends it", () => {
  it('answers its default columns: person_display_name, a coalesce, a labelled property', async () => {
    const select = [
      '*',
      'event',
      'person_display_name -- Person',
      'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen',
      'properties.$lib',
      'timestamp',
    ];
    const body = await ok({ select, event: '$pageview', ...WEEK, orderBy: ['timestamp DESC'], limit: 10 });
    const expected = [...batch.filter((e) => e.event === '$pageview')].sort(newestFirst).slice(0, 10);
    expect(body.columns).toEqual(select);
    expect(body.types[2]).toBe('Tuple(String, String, String)');
    expect(body.results.map((r: any[]) => [r[1], r[2].display_name, r[2].distinct_id, r[3], r[4], r[5]])).toEqual(
      expected.map((e) => [
        '$pageview',
        e.distinct_id === 'user-1' ? 'user1@example.com' : e.distinct_id,
        e.distinct_id,
        e.properties.$current_url,
        null,
        iso(e.timestamp),
      ]),
    );
    const withPerson = body.results.find((r: any[]) => r[2].distinct_id === 'user-1');
    expect(typeof withPerson[2].id).toBe('string');
  });

  it('orders and groups by person_display_name, label and direction as its UI sends them', async () => {
    const rows = await ok({
      select: ['person_display_name -- Person', 'event'],
      event: 'signed up',
      ...WEEK,
      orderBy: ['person_display_name -- Person DESC'],
    });
    const names = rows.results.map((r: any[]) => r[0].display_name);
    expect(names).toEqual([...names].sort().reverse());
    expect(new Set(names)).toEqual(new Set(['user-0', 'user1@example.com', 'user-2', 'user-3', 'user-4']));
    const grouped = await ok({
      select: ['person_display_name -- Person', 'count()'],
      event: 'signed up',
      ...WEEK,
      orderBy: ['person_display_name -- Person ASC'],
    });
    const signedUp = new Map<string, number>();
    for (const e of batch.filter((x) => x.event === 'signed up'))
      signedUp.set(e.distinct_id, (signedUp.get(e.distinct_id) ?? 0) + 1);
    const shown = (id: string) => (id === 'user-1' ? 'user1@example.com' : id);
    expect(grouped.results.map((r: any[]) => [r[0].display_name, r[1]])).toEqual(
      [...signedUp].map(([id, n]) => [shown(id), n]).sort(([a], [b]) => (String(a) < String(b) ? -1 : 1)),
    );
  });
});
