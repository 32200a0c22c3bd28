// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import { beforeAll, describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { type Client, eventually, expectErrorShape, newKey, newProject, useApi } from '../support/api.ts';

/**
 * HogQLQuery over HTTP, answered by DuckDB over the lake's files (the local stack's lake engine).
 * Two projects capture events on the same days with different numbers; each one's statements see
 * its own rows only. Only compacted days are in the lake: an event captured after its day's
 * compaction is not in the answer, and `lake_pending_events` counts it.
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
const DAYS = ['2024-04-10', '2024-04-11', '2024-04-12'];

// Ours, per day d (0..2): 4 $pageview (Chrome, Chrome, Safari, no browser) by user-0..3, and d + 1 "signed up" by user-0.
const ours = DAYS.flatMap((day, d) => [
  ...['Chrome', 'Chrome', 'Safari', undefined].map((browser, k) => ({
    event: '$pageview',
    distinct_id: `user-${k}`,
    timestamp: `${day}T${String(2 + k).padStart(2, '0')}:00:00.000Z`,
    uuid: `0190f200-0000-7000-8000-${String(d * 100 + k).padStart(12, '0')}`,
    properties: browser ? { $browser: browser } : {},
  })),
  ...Array.from({ length: d + 1 }, (_, k) => ({
    event: 'signed up',
    distinct_id: 'user-0',
    timestamp: `${day}T${String(10 + k).padStart(2, '0')}:00:00.000Z`,
    uuid: `0190f200-0000-7000-8000-${String(d * 100 + 50 + k).padStart(12, '0')}`,
    properties: { plan: k % 2 ? 'pro' : 'free' },
  })),
]);
// Theirs: 7 Chrome pageviews a day, by one user.
const theirs = DAYS.flatMap((day, d) =>
  Array.from({ length: 7 }, (_, k) => ({
    event: '$pageview',
    distinct_id: 'other',
    timestamp: `${day}T${String(1 + k).padStart(2, '0')}:30:00.000Z`,
    uuid: `0190f201-0000-7000-8000-${String(d * 100 + k).padStart(12, '0')}`,
    properties: { $browser: 'Chrome' },
  })),
);

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23')).values()].reduce((a, b) => a + b, 0);

type Project = { projectId: number; token: string; key: string; email: string };

async function seeded(batch: Record<string, unknown>[]): Promise<Project> {
  const p = await newProject(api.as);
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
  await eventually(async () => expect(await total(p.projectId)).toBe(batch.length), 90_000);
  for (const day of DAYS) await compactDay(p.projectId, day, new Date(NOW + 70_000));
  return p;
}

const hogql = (c: Client, projectId: number, query: string, extra: Record<string, unknown> = {}) =>
  c.post(`/api/projects/${projectId}/query/`, { query: { kind: 'HogQLQuery', query, ...extra } });

describe('HogQLQuery on the lake engine', () => {
  let a: Project;
  let b: Project;
  let c: Client;
  beforeAll(async () => {
    [a, b] = await Promise.all([seeded(ours), seeded(theirs)]);
    c = api.as(a.key);
  }, 300_000);

  it("counts by event: the hand-computed numbers, this project's rows only, PostHog's response shape", async () => {
    const res = await hogql(
      c,
      a.projectId,
      'SELECT event, count() AS c, uniq(distinct_id) FROM events GROUP BY event ORDER BY event',
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toEqual([
      ['$pageview', 12, 4],
      ['signed up', 6, 1],
    ]);
    expect(res.body.columns).toEqual(['event', 'c', 'uniq(distinct_id)']);
    expect(res.body.types).toEqual([
      ['event', 'String'],
      ['c', 'UInt64'],
      ['uniq(distinct_id)', 'UInt64'],
    ]);
    expect(res.body).toMatchObject({
      hasMore: false,
      limit: 100,
      offset: 0,
      query_engine: 'duckdb',
      lake_pending_events: 0,
    });
    expect(res.body.query).toContain('SELECT event');

    const theirsAnswer = await hogql(api.as(b.key), b.projectId, 'SELECT event, count() FROM events GROUP BY event');
    expect(theirsAnswer.body.results).toEqual([['$pageview', 21]]);
  });

  it('a breakdown by property and day, with {filters} and a variable', async () => {
    const res = await hogql(
      c,
      a.projectId,
      'SELECT properties.$browser AS browser, toStartOfDay(timestamp) AS day, count() FROM events WHERE event = {variables.name} AND {filters} GROUP BY browser, day ORDER BY day, browser',
      {
        filters: {
          dateRange: { date_from: '2024-04-11', date_to: '2024-04-13' },
          properties: [{ key: '$browser', operator: 'is_set' }],
        },
        variables: { v1: { variableId: 'v1', code_name: 'name', value: '$pageview' } },
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toEqual([
      ['Chrome', '2024-04-11T00:00:00.000Z', 2],
      ['Safari', '2024-04-11T00:00:00.000Z', 1],
      ['Chrome', '2024-04-12T00:00:00.000Z', 2],
      ['Safari', '2024-04-12T00:00:00.000Z', 1],
    ]);
  });

  it('LIMIT and OFFSET page the rows; hasMore says when more are left', async () => {
    const page = await hogql(c, a.projectId, 'SELECT uuid FROM events ORDER BY timestamp LIMIT 5 OFFSET 2');
    expect(page.body).toMatchObject({ hasMore: true, limit: 5, offset: 2 });
    expect(page.body.results).toHaveLength(5);
    const last = await hogql(c, a.projectId, 'SELECT uuid FROM events ORDER BY timestamp LIMIT 5 OFFSET 15');
    expect(last.body).toMatchObject({ hasMore: false, limit: 5, offset: 15 });
    expect(last.body.results).toHaveLength(3);
    // LIMIT 0: no rows, and no page follows (a client paging by OFFSET += LIMIT would never move).
    const none = await hogql(c, a.projectId, 'SELECT uuid FROM events ORDER BY timestamp LIMIT 0');
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    expect(none.body).toMatchObject({ results: [], hasMore: false, limit: 0, offset: 0 });
    // PostHog's ceiling: a larger LIMIT is lowered to 50,000.
    expect((await hogql(c, a.projectId, 'SELECT uuid FROM events LIMIT 999999')).body.limit).toBe(50_000);
  });

  it("SELECT * gives PostHog's events fields, properties as the JSON of all of them; dates in the project's zone", async () => {
    const res = await hogql(
      c,
      a.projectId,
      "SELECT * FROM events WHERE event = 'signed up' ORDER BY timestamp LIMIT 1",
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.columns).toEqual([
      'uuid',
      'event',
      'properties',
      'timestamp',
      'distinct_id',
      'elements_chain',
      'created_at',
      '$session_id',
      '$window_id',
      '$group_0',
      '$group_1',
      '$group_2',
      '$group_3',
      '$group_4',
    ]);
    expect(res.body.types.map((t: string[]) => t[1]).slice(0, 6)).toEqual([
      'UUID',
      'String',
      'String',
      "DateTime64(6, 'UTC')",
      'String',
      'String',
    ]);
    const [row] = res.body.results;
    expect(row.slice(0, 6)).toEqual([
      ours[4]!.uuid,
      'signed up',
      expect.any(String),
      '2024-04-10T10:00:00.000Z',
      'user-0',
      '',
    ]);
    expect(JSON.parse(row[2])).toMatchObject({ plan: 'free' });

    const dates = await hogql(
      c,
      a.projectId,
      "SELECT today(), toStartOfQuarter(timestamp), timestamp + INTERVAL 1 MONTH, dateDiff('day', timestamp, now()) FROM events WHERE event = 'signed up' ORDER BY timestamp LIMIT 1",
    );
    expect(dates.status, JSON.stringify(dates.body)).toBe(200);
    expect(dates.body.results).toEqual([['2024-04-20', '2024-04-01', '2024-05-10T10:00:00.000Z', 10]]);
    expect(dates.body.types.map((t: string[]) => t[1])).toEqual(['Date', 'Date', "DateTime64(6, 'UTC')", 'Int64']);
  });

  it.each([
    ['SELECT person.* FROM events', /person\.\* is not supported/],
    ['SELECT event FROM events JOIN persons ON 1 = 1', /JOINs/],
    ['SELECT event FROM events WHERE event IN (SELECT event FROM events)', /subqueries/],
    ['SELECT count() OVER () FROM events', /window functions/],
    ['SELECT event FROM events UNION ALL SELECT event FROM events', /UNION is not supported/],
    ["SELECT event FROM read_parquet('/etc/passwd')", /table functions/],
    ['SELECT event FROM events_1', /the table events_1/],
    ['SELECT event FROM events SETTINGS max_threads = 1', /SETTINGS/],
    ['SELECT event FROM events; SELECT 1', /multiple statements are not supported/],
  ])('%s: 400 naming the construct', async (query, detail) => {
    const res = await hogql(c, a.projectId, query);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'query' });
    expect(res.body.detail).toMatch(detail);
  });

  it("integers past 2^53: a literal is a 400 naming it; the engine's exact Int64 arithmetic comes back as exact text", async () => {
    for (const query of [
      'SELECT 9007199254740993 FROM events',
      'SELECT event FROM events WHERE properties.id = 9007199254740993',
      'SELECT event FROM events LIMIT 9007199254740993',
    ]) {
      const res = await hogql(c, a.projectId, query);
      expect(res.status, query).toBe(400);
      expectErrorShape(res.body);
      expect(res.body.detail).toMatch(/beyond ±\(2\^53 - 1\)/);
    }
    const values = await hogql(c, a.projectId, 'SELECT {big} FROM events LIMIT 1', { values: { big: 2 ** 53 + 2 } });
    expect(values.status).toBe(400);
    expect(values.body.detail).toMatch(/the value of \{big\} is beyond ±\(2\^53 - 1\)/);
    // 2^53 - 1 + 2 = 9007199254740993, which no double holds: DuckDB's BIGINT keeps it, the answer carries its digits.
    const sum = await hogql(
      c,
      a.projectId,
      "SELECT 9007199254740991 + 2 FROM events WHERE event = 'signed up' LIMIT 1",
    );
    expect(sum.status, JSON.stringify(sum.body)).toBe(200);
    expect(sum.body.results).toEqual([['9007199254740993']]);
    expect(sum.body.types[0][1]).toBe('Int64');
  });

  it('an INTERVAL past 400 years is a 400 naming the cap, not a silent NULL that matches no row', async () => {
    for (const [query, cap] of [
      ['SELECT count() FROM events WHERE timestamp > now() - INTERVAL 999999999999 YEAR', 'at most 400 years'],
      ['SELECT count() FROM events WHERE timestamp > now() - toIntervalDay(1e30)', 'at most 146,097 days'],
      ["SELECT dateAdd('hour', 99999999999, timestamp) FROM events", 'at most 3,506,328 hours'],
    ]) {
      const res = await hogql(c, a.projectId, query as string);
      expect(res.status, query).toBe(400);
      expectErrorShape(res.body);
      expect(res.body).toMatchObject({ type: 'validation_error', attr: 'query' });
      expect(res.body.detail).toContain(cap);
      expect(res.body.detail).toContain('1900-01-01 to 2299-12-31');
    }
    // Within the cap the window holds every event (12 pageviews, 6 sign-ups).
    const wide = await hogql(c, a.projectId, 'SELECT count() FROM events WHERE timestamp > now() - INTERVAL 400 YEAR');
    expect(wide.status, JSON.stringify(wide.body)).toBe(200);
    expect(wide.body.results).toEqual([[18]]);
  });

  it("person.created_at: the event's person's creation time, as the persons API gives it", async () => {
    const person = (await c.get(`/api/environments/${a.projectId}/persons/?distinct_id=user-0`)).body.results[0];
    expect(person?.created_at).toEqual(expect.any(String));
    const res = await hogql(
      c,
      a.projectId,
      `SELECT distinct_id, person.created_at, count() FROM events WHERE person.created_at <= '${person.created_at}' AND distinct_id = 'user-0' GROUP BY distinct_id, person.created_at`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.types).toEqual([
      ['distinct_id', 'String'],
      ['person.created_at', "DateTime64(6, 'UTC')"],
      ['count()', 'UInt64'],
    ]);
    const [[distinctId, createdAt, count]] = res.body.results;
    expect([distinctId, Date.parse(createdAt), count]).toEqual(['user-0', Date.parse(person.created_at), 9]);
    // Before the person existed: no row of theirs.
    const before = await hogql(
      c,
      a.projectId,
      `SELECT count() FROM events WHERE distinct_id = 'user-0' AND person.created_at < '${new Date(Date.parse(person.created_at) - 1).toISOString()}'`,
    );
    expect(before.body.results).toEqual([[0]]);
  });

  it('created_at: the ingestion time, as EventsQuery gives it for the same event; refused where compacted days serve', async () => {
    const res = await hogql(
      c,
      a.projectId,
      "SELECT uuid, created_at FROM events WHERE event = 'signed up' ORDER BY timestamp LIMIT 1",
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.types[1]).toEqual(['created_at', "DateTime64(6, 'UTC')"]);
    const [[uuid, createdAt]] = res.body.results;
    expect(uuid).toBe(ours[4]!.uuid);
    const events = (select: string[], where: string) =>
      c.post(`/api/projects/${a.projectId}/query/`, {
        query: { kind: 'EventsQuery', select, where: [where], after: '2024-04-01' },
      });
    const rows = await events(['uuid', 'created_at'], `uuid = '${uuid}'`);
    expect(rows.status, JSON.stringify(rows.body)).toBe(200);
    expect(rows.body.results).toEqual([[uuid, expect.any(String)]]);
    expect(Number.isFinite(Date.parse(createdAt))).toBe(true);
    expect(Date.parse(createdAt)).toBe(Date.parse(rows.body.results[0][1]));
    const grouped = await events(['created_at', 'count()'], "event = 'signed up'");
    expect(grouped.status).toBe(400);
    expectErrorShape(grouped.body);
    expect(grouped.body.detail).toMatch(/"created_at" cannot be read when aggregating/);
  });

  it('a key without query:read gets 403', async () => {
    const { key } = await newKey({ email: a.email, scopes: ['insight:read'] });
    const res = await hogql(api.as(key), a.projectId, 'SELECT count() FROM events');
    expect(res.status).toBe(403);
    expectErrorShape(res.body);
  });

  it("another project's id in the path is refused; the text cannot name one", async () => {
    // Another organization's project does not exist for this key (the tenancy rule's 404).
    expect((await hogql(c, b.projectId, 'SELECT count() FROM events')).status).toBe(404);
    const res = await hogql(c, a.projectId, `SELECT count() FROM events WHERE project_id = ${b.projectId}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/project_id/);
  });

  it('freshness: an event captured after its day was compacted is not in the answer, and is counted as pending', async () => {
    const late = {
      event: 'signed up',
      distinct_id: 'user-9',
      timestamp: '2024-04-11T20:00:00.000Z',
      uuid: '0190f200-0000-7000-8000-000000009999',
    };
    expect((await api.as().post('/batch', { api_key: a.token, batch: [late] })).body.accepted).toBe(1);
    await eventually(async () => expect(await total(a.projectId)).toBe(ours.length + 1), 90_000);
    const before = await hogql(c, a.projectId, "SELECT count() FROM events WHERE event = 'signed up'");
    expect(before.body.results).toEqual([[6]]);
    expect(before.body.lake_pending_events).toBe(1);
    await compactDay(a.projectId, '2024-04-11', new Date(NOW + 140_000));
    const after = await hogql(c, a.projectId, "SELECT count() FROM events WHERE event = 'signed up'");
    expect(after.body.results).toEqual([[7]]);
    expect(after.body.lake_pending_events).toBe(0);
  });
});

describe("person properties on the lake: as the person had them when the day was written (PostHog's persons on events)", () => {
  it('reads person.properties.x and person filters in {filters}; an event of no person reads null', async () => {
    const day = DAYS[0]!;
    const at = (h: number) => `${day}T${String(h).padStart(2, '0')}:00:00.000Z`;
    const p = await seeded([
      {
        event: 'paid',
        distinct_id: 'alice',
        timestamp: at(1),
        properties: { $set: { email: 'alice@x.io', plan: 'pro' } },
      },
      { event: 'paid', distinct_id: 'bob', timestamp: at(2), properties: { $set: { email: 'bob@y.io' } } },
      { event: 'paid', distinct_id: 'carol', timestamp: at(3), properties: { $process_person_profile: false } },
    ]);
    const c = api.as(p.key);
    const res = await hogql(
      c,
      p.projectId,
      'SELECT distinct_id, person.properties.email, person.properties.plan FROM events ORDER BY distinct_id',
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toEqual([
      ['alice', 'alice@x.io', 'pro'],
      ['bob', 'bob@y.io', null],
      ['carol', null, null],
    ]);
    const filtered = await hogql(c, p.projectId, 'SELECT distinct_id FROM events WHERE {filters}', {
      filters: { properties: [{ key: 'email', value: 'y.io', operator: 'icontains', type: 'person' }] },
    });
    expect(filtered.body.results).toEqual([['bob']]);
  }, 120_000);
});
