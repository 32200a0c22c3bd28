// Relative dates are resolved against the one clock, frozen for this file; every trend here is "big".
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';
process.env.ANALYTICS_LAKE_ROUTING_EVENTS = '3';
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import { beforeEach, describe, expect, it } from 'vitest';
import { putLakeHides, deleteLakeHides, readLakeHides } from '#shared/db/lake-hides.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { dueCompactions } from '#shared/db/segments.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { MAX_LAKE_HIDES, SETTLED_MS, scheduleLakeRewrites } from '#shared/domain/lake-hides.ts';
import { drainPersonDeletions } from '#shared/domain/person-deletions.ts';
import { type Client, eventually, newProject, useApi } from '../support/api.ts';

/**
 * Deleted is gone from the lake at once: a person deleted (alone or in bulk), a person's property
 * removed (delete_property, `$unset`) and a person's events deleted by the drain stop being served by
 * the lake in the request that deletes them, while the lake's files still hold them (no day is
 * rewritten here until the test runs the compactor). HogQLQuery, EventsQuery and a lake-routed
 * TrendsQuery agree at every step; the compactor then rewrites the days it was told of and the
 * hides go. (The deletion queue belongs to person-deletion.test.ts: the drain is handed its message here.)
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
const DAYS = ['2024-04-10', '2024-04-11', '2024-04-12'];

// alice and bob view a page every day (01:00, 02:00), carol on the last two days (03:00). Per day: 2, 3, 3.
const batch = DAYS.flatMap((day, d) => [
  {
    event: '$pageview',
    distinct_id: 'alice',
    timestamp: `${day}T01:00:00.000Z`,
    uuid: `0190f300-0000-7000-8000-${String(d * 10 + 1).padStart(12, '0')}`,
    properties: { amount: 1, ...(d === 0 ? { $set: { email: 'alice@x.io', plan: 'pro' } } : {}) },
  },
  {
    event: '$pageview',
    distinct_id: 'bob',
    timestamp: `${day}T02:00:00.000Z`,
    uuid: `0190f300-0000-7000-8000-${String(d * 10 + 2).padStart(12, '0')}`,
    properties: { amount: 1, ...(d === 0 ? { $set: { email: 'bob@y.io', plan: 'free' } } : {}) },
  },
  ...(d === 0
    ? []
    : [
        {
          event: '$pageview',
          distinct_id: 'carol',
          timestamp: `${day}T03:00:00.000Z`,
          uuid: `0190f300-0000-7000-8000-${String(d * 10 + 3).padStart(12, '0')}`,
          properties: { amount: 1, ...(d === 1 ? { $set: { email: 'carol@z.io' } } : {}) },
        },
      ]),
]);

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23')).values()].reduce((a, b) => a + b, 0);

interface Ctx {
  projectId: number;
  token: string;
  c: Client;
  persons: string;
  ids: Record<'alice' | 'bob' | 'carol', number>;
}
let ctx: Ctx;

beforeEach(async () => {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const persons = `/api/environments/${p.projectId}/persons/`;
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
  await eventually(async () => expect(await total(p.projectId)).toBe(batch.length), 90_000);
  const ids = {} as Ctx['ids'];
  for (const name of ['alice', 'bob', 'carol'] as const) {
    const person = await eventually(async () => {
      const res = await c.get(`${persons}?distinct_id=${name}`);
      expect(res.body.results[0]?.properties?.email).toBe(`${name}@${{ alice: 'x', bob: 'y', carol: 'z' }[name]}.io`);
      return res.body.results[0];
    });
    ids[name] = person.id;
  }
  // The lake's files hold every event with its person as it is now.
  for (const day of DAYS) await compactDay(p.projectId, day, new Date(NOW + 70_000));
  ctx = { projectId: p.projectId, token: p.token, c, persons, ids };
}, 300_000);

const queryPath = () => `/api/environments/${ctx.projectId}/query/`;

async function hogql(query: string, extra: Record<string, unknown> = {}, refresh = 'force_blocking') {
  const res = await ctx.c.post(queryPath(), { query: { kind: 'HogQLQuery', query, ...extra }, refresh });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** A HogQLQuery's cached answer (force_cache: the cache only), undefined when there is none. */
async function cachedHogQL(query: string) {
  const res = await ctx.c.post(queryPath(), { query: { kind: 'HogQLQuery', query }, refresh: 'force_cache' });
  expect(res.status).toBe(200);
  return res.body.results;
}

/** Per distinct id: its person's email as the events show it, and how many events. */
const EMAILS_SQL =
  'SELECT distinct_id, person.properties.email, count() FROM events GROUP BY distinct_id, person.properties.email ORDER BY distinct_id';
const emailsOnLake = async () => (await hogql(EMAILS_SQL)).results as unknown[][];

/** The same through EventsQuery (the table and the persons as they are now). */
async function emailsInEvents(): Promise<unknown[][]> {
  const res = await ctx.c.post(queryPath(), {
    query: {
      kind: 'EventsQuery',
      select: ['distinct_id', 'person.properties.email', 'count()'],
      after: '2024-04-01',
    },
    refresh: 'force_blocking',
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.results as unknown[][]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
}

const TRENDS = {
  kind: 'TrendsQuery',
  // A filter every event passes: unfiltered totals are the rollups', never routed.
  series: [
    {
      kind: 'EventsNode',
      event: '$pageview',
      properties: [{ key: 'amount', operator: 'gte', value: 0, type: 'event' }],
    },
  ],
  interval: 'day',
  dateRange: { date_from: '2024-04-10', date_to: '2024-04-12' },
};

async function trend(refresh = 'force_blocking') {
  const res = await ctx.c.post(queryPath(), { query: TRENDS, refresh });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const BEFORE = [
  ['alice', 'alice@x.io', 3],
  ['bob', 'bob@y.io', 3],
  ['carol', 'carol@z.io', 2],
];

/** The compactor's tick for this project: its hides resolved, its due days rewritten; true if every day was due. */
async function rewrite(at: number): Promise<boolean> {
  await scheduleLakeRewrites(new Date(at));
  const due = (await dueCompactions(new Date(at))).filter((d) => d.projectId === ctx.projectId).map((d) => d.day);
  for (const day of due) await compactDay(ctx.projectId, day, new Date(at));
  return DAYS.every((day) => due.includes(day));
}

/**
 * After the rewrite every hide is settled: still applied (the SQL text must not be the text of before
 * the deletion while Athena may reuse its result), deleted by the compactor's tick once SETTLED_MS
 * have passed since it was recorded.
 */
async function expectSettledThenGone(at: number) {
  const hides = await readLakeHides(ctx.projectId);
  expect(hides.length).toBeGreaterThan(0);
  for (const h of hides) expect(h).toMatchObject({ settled: true, days: [] });
  await scheduleLakeRewrites(new Date(at + SETTLED_MS - 60_000));
  expect(await readLakeHides(ctx.projectId)).toHaveLength(hides.length);
  await scheduleLakeRewrites(new Date(at + SETTLED_MS + 60_000));
  expect(await readLakeHides(ctx.projectId)).toEqual([]);
}

describe('deleted is gone from the lake at once', { timeout: 300_000 }, () => {
  it('a person deleted without its events: its properties and id leave the lake in the delete’s request; the events stay everywhere', async () => {
    expect(await emailsOnLake()).toEqual(BEFORE);
    expect(await emailsInEvents()).toEqual(BEFORE);
    const distinctPersons = 'SELECT count(DISTINCT person.id) FROM events';
    expect((await hogql(distinctPersons)).results).toEqual([[3]]);
    const byFilter = [
      'SELECT count() FROM events WHERE {filters}',
      { filters: { properties: [{ key: 'email', value: 'y.io', operator: 'icontains', type: 'person' }] } },
    ] as const;
    expect((await hogql(...byFilter)).results).toEqual([[3]]);
    // Cached before the delete (blocking reads the cache when it can).
    expect((await hogql(EMAILS_SQL, {}, 'blocking')).results).toEqual(BEFORE);
    expect(await cachedHogQL(EMAILS_SQL)).toEqual(BEFORE);

    expect((await ctx.c.delete(`${ctx.persons}${ctx.ids.bob}/`)).status).toBe(204);
    // The answer cached before is retired by the delete itself.
    expect(await cachedHogQL(EMAILS_SQL)).toBeUndefined();

    const after = [
      ['alice', 'alice@x.io', 3],
      ['bob', null, 3],
      ['carol', 'carol@z.io', 2],
    ];
    expect(await emailsOnLake()).toEqual(after);
    expect(await emailsInEvents()).toEqual(after);
    expect((await hogql(distinctPersons)).results).toEqual([[2]]);
    expect((await hogql(...byFilter)).results).toEqual([[0]]);
    // Counting events does not depend on persons: still the lake's, all 8.
    const counted = await trend();
    expect(counted.query_engine).toBe('duckdb');
    expect(counted.results[0].data).toEqual([2, 3, 3]);

    // The compactor rewrites the person's days at once, then the hide goes; the files now say the same.
    expect(await readLakeHides(ctx.projectId)).toHaveLength(1);
    expect(await rewrite(NOW + 120_000)).toBe(true);
    await expectSettledThenGone(NOW);
    expect(await emailsOnLake()).toEqual(after);
    expect((await hogql(distinctPersons)).results).toEqual([[2]]);
  });

  it('persons deleted in bulk: gone from the lake in the bulk delete’s request', async () => {
    const res = await ctx.c.post(`${ctx.persons}bulk_delete/`, { ids: [ctx.ids.alice, ctx.ids.carol] });
    expect(res.status).toBe(202);
    const after = [
      ['alice', null, 3],
      ['bob', 'bob@y.io', 3],
      ['carol', null, 2],
    ];
    expect(await emailsOnLake()).toEqual(after);
    expect(await emailsInEvents()).toEqual(after);
    expect((await hogql('SELECT count(DISTINCT person.id) FROM events')).results).toEqual([[1]]);
  });

  it('the drain deleting a person’s events: its rows leave HogQLQuery, EventsQuery and the routed TrendsQuery at once', async () => {
    expect((await trend('blocking')).results[0].data).toEqual([2, 3, 3]);
    expect((await ctx.c.post(queryPath(), { query: TRENDS, refresh: 'force_cache' })).body.results).toHaveLength(1);
    let sent = false;
    const summary = await drainPersonDeletions({
      receive: async () => {
        if (sent) return [];
        sent = true;
        const body = {
          project_id: ctx.projectId,
          person_id: ctx.ids.bob,
          distinct_ids: ['bob'],
          requested_at: new Date(NOW + 6 * 60_000).toISOString(),
        };
        return [{ body: JSON.stringify(body), receiptHandle: 'r', receiveCount: 1 }];
      },
      acknowledge: async () => {},
      release: async () => {},
      timeLeftMs: () => 600_000,
      continueLater: async () => {},
    });
    expect(summary).toMatchObject({ processed: 1, eventsDeleted: 3 });
    // The trend cached before is retired by the drain itself.
    expect((await ctx.c.post(queryPath(), { query: TRENDS, refresh: 'force_cache' })).body.results).toBeUndefined();

    const after = [
      ['alice', 'alice@x.io', 3],
      ['carol', 'carol@z.io', 2],
    ];
    // Before the ingest worker has uncounted anything, and before any day is rewritten.
    expect(await emailsOnLake()).toEqual(after);
    expect(await emailsInEvents()).toEqual(after);
    expect((await trend()).results[0].data).toEqual([1, 2, 2]);

    // Once the counters say so, the routed trend's days are the lake's only after their rewrite, which is due at once.
    await eventually(async () => expect(await total(ctx.projectId)).toBe(batch.length - 3), 60_000);
    expect(await rewrite(NOW + 120_000)).toBe(true);
    await expectSettledThenGone(NOW);
    const rewritten = await trend();
    expect(rewritten.query_engine).toBe('duckdb');
    expect(rewritten.results[0].data).toEqual([1, 2, 2]);
    expect(await emailsOnLake()).toEqual(after);
  });

  it('a property removed (delete_property, then $unset at ingestion): that key reads NULL at once, the others stay', async () => {
    const PLANS =
      "SELECT distinct_id, person.properties.email, person.properties.plan FROM events WHERE timestamp < '2024-04-11' ORDER BY distinct_id";
    expect((await hogql(PLANS)).results).toEqual([
      ['alice', 'alice@x.io', 'pro'],
      ['bob', 'bob@y.io', 'free'],
    ]);
    expect((await hogql(PLANS, {}, 'blocking')).results).toHaveLength(2);
    expect(await cachedHogQL(PLANS)).toHaveLength(2);
    const res = await ctx.c.post(`${ctx.persons}${ctx.ids.alice}/delete_property/`, { $unset: 'email' });
    expect(res.status).toBe(200);
    expect(await cachedHogQL(PLANS)).toBeUndefined();
    expect((await hogql(PLANS)).results).toEqual([
      ['alice', null, 'pro'],
      ['bob', 'bob@y.io', 'free'],
    ]);

    // `$unset` on an event of today (not in the lake's closed days): the ingest worker hides bob's plan.
    const unset = {
      event: 'settings',
      distinct_id: 'bob',
      timestamp: '2024-04-20T11:00:00.000Z',
      properties: { $unset: ['plan'] },
    };
    expect((await api.as().post('/batch', { api_key: ctx.token, batch: [unset] })).body.accepted).toBe(1);
    await eventually(
      async () =>
        expect((await hogql(PLANS)).results).toEqual([
          ['alice', null, 'pro'],
          ['bob', 'bob@y.io', null],
        ]),
      60_000,
    );
    const persons = await ctx.c.get(`${ctx.persons}?distinct_id=bob`);
    expect(persons.body.results[0].properties.plan).toBeUndefined();

    // The ingest worker runs on the real clock (this file's is frozen): its hide is due, and settled, by that clock.
    const at = Date.now();
    // Two hides: delete_property's (this file's clock) and the ingest worker's (the real one). The
    // compactor's tick is asked again until both settle, as the 5-minute schedule does: in a full run
    // another file's tick may rewrite a day less than a minute after the worker's hide, which leaves
    // that day due again rather than settled.
    expect(await rewrite(at + 120_000)).toBe(true);
    await eventually(async () => {
      const hides = await readLakeHides(ctx.projectId);
      if (!hides.every((h) => h.settled)) await rewrite(at + 120_000);
      // delete_property's hide was recorded on this file's frozen clock, long past by the real clock
      // another file's compactor tick runs on: in a full run such a tick may already have deleted it
      // once settled. The ingest worker's (the real clock) stays for SETTLED_MS.
      const settled = await readLakeHides(ctx.projectId);
      expect(settled.every((h) => h.kind === 'properties' && h.settled)).toBe(true);
      expect(settled.map((h) => h.keys)).toContainEqual(['plan']);
      expect(settled.filter((h) => h.keys?.[0] !== 'plan').map((h) => h.keys)).toEqual(
        settled.length === 2 ? [['email']] : [],
      );
    }, 60_000);
    // A tick deletes a bounded page of every project's settled hides: in a full run other files' hides
    // share it, so the tick is asked again until this project's are gone.
    await eventually(async () => {
      await scheduleLakeRewrites(new Date(at + SETTLED_MS + 60_000));
      expect(await readLakeHides(ctx.projectId)).toEqual([]);
    }, 60_000);
    expect((await hogql(PLANS)).results).toEqual([
      ['alice', null, 'pro'],
      ['bob', 'bob@y.io', null],
    ]);
  });

  it(`past ${MAX_LAKE_HIDES} hides: a HogQLQuery is a 503 saying to retry, a trend is answered in-process with the same numbers`, async () => {
    const at = new Date(NOW).toISOString();
    const hides = Array.from({ length: MAX_LAKE_HIDES + 1 }, (_, i) => ({
      projectId: ctx.projectId,
      id: `0190f3ff-0000-7000-8000-${String(i).padStart(12, '0')}`,
      at,
      kind: 'person' as const,
      personUuid: `0190f3fe-0000-7000-8000-${String(i).padStart(12, '0')}`,
      distinctIds: [`gone-${i}`],
      days: ['2024-04-10'],
    }));
    await putLakeHides(hides);
    try {
      const refused = await ctx.c.post(queryPath(), {
        query: { kind: 'HogQLQuery', query: EMAILS_SQL },
        refresh: 'force_blocking',
      });
      expect(refused.status).toBe(503);
      expect(refused.body.detail).toContain(String(MAX_LAKE_HIDES));
      const counted = await trend();
      expect(counted.query_engine).toBeUndefined();
      expect(counted.results[0].data).toEqual([2, 3, 3]);
    } finally {
      await deleteLakeHides(
        ctx.projectId,
        hides.map((h) => h.id),
      );
    }
    expect(await emailsOnLake()).toEqual(BEFORE);
  });
});
