import { beforeEach, describe, expect, it } from 'vitest';
import { eventually, newProject, useApi, type Client } from '../support/api.ts';

// Nothing deleted is served: deleting, bulk-deleting, splitting or editing a person, and changing or
// deleting an action, retire every cached answer of the project at once (the project's answers
// generation is part of every cache key). Each case caches an answer, changes the data over HTTP,
// then asks with `force_cache` (served from the cache only): a cache miss, never the old answer.
// (The drain deleting events: test/integration/person-deletion.test.ts, which owns the deletion queue.)
const api = useApi();

const actorsQuery = { kind: 'ActorsQuery', select: ['id', 'properties.email', 'distinct_ids'] };
const eventsQuery = { kind: 'EventsQuery', select: ['event', 'distinct_id', 'person'], after: '-7d' };

interface Ctx {
  c: Client;
  projectId: number;
  persons: string;
  query: (q: unknown, refresh: string) => Promise<{ status: number; body: any; text: string }>;
  alice: { id: number };
}

let ctx: Ctx;

beforeEach(async () => {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const persons = `/api/environments/${p.projectId}/persons/`;
  await api.as().post('/batch', {
    api_key: p.token,
    batch: [
      { event: 'viewed', distinct_id: 'alice', properties: { $set: { email: 'alice@example.com' } } },
      { event: 'viewed', distinct_id: 'alice-phone' },
      { event: '$identify', distinct_id: 'alice', properties: { $anon_distinct_id: 'alice-phone' } },
      { event: 'viewed', distinct_id: 'bob', properties: { $set: { email: 'bob@example.com' } } },
    ],
  });
  const alice = await eventually(async () => {
    const res = await c.get(`${persons}?distinct_id=alice`);
    expect(res.body.results[0]?.distinct_ids?.sort()).toEqual(['alice', 'alice-phone']);
    return res.body.results[0];
  });
  await eventually(async () => expect((await c.get(`${persons}?distinct_id=bob`)).body.results).toHaveLength(1));
  const query = (q: unknown, refresh: string) =>
    c.post(`/api/environments/${p.projectId}/query/`, { query: q, refresh });
  ctx = { c, projectId: p.projectId, persons, query, alice };
});

/** Caches `q`'s answer (it holds alice), runs `change`, then expects force_cache to miss. */
async function expectRetired(q: unknown, change: () => Promise<{ status: number }>) {
  const fresh = await ctx.query(q, 'force_blocking');
  expect(fresh.status).toBe(200);
  expect(fresh.text).toContain('alice');
  const cached = await ctx.query(q, 'force_cache');
  expect(cached.body.is_cached).toBe(true);
  expect(cached.text).toContain('alice');

  expect((await change()).status).toBeLessThan(300);

  const after = await ctx.query(q, 'force_cache');
  expect(after.status).toBe(200);
  expect(after.body.results).toBeUndefined();
  expect(after.body.query_status).toBeNull();
  expect(after.body.cache_key).not.toBe(cached.body.cache_key);
}

describe('a cached answer is retired at once when', () => {
  it('a person is deleted (ActorsQuery, EventsQuery)', async () => {
    await ctx.query(eventsQuery, 'force_blocking');
    await expectRetired(actorsQuery, () => ctx.c.delete(`${ctx.persons}${ctx.alice.id}/`));
    const events = await ctx.query(eventsQuery, 'force_cache');
    expect(events.body.results).toBeUndefined();
    const recomputed = await ctx.query(actorsQuery, 'blocking');
    expect(recomputed.text).not.toContain('alice');
    expect(recomputed.text).toContain('bob@example.com');
  });

  it('persons are bulk-deleted', async () => {
    await expectRetired(actorsQuery, () => ctx.c.post(`${ctx.persons}bulk_delete/`, { ids: [ctx.alice.id] }));
  });

  it('persons are bulk-deleted by their PostHog uuids', async () => {
    const alice = (await ctx.c.get(`${ctx.persons}${ctx.alice.id}/`)).body;
    await expectRetired(actorsQuery, () => ctx.c.post(`${ctx.persons}bulk_delete/`, { ids: [alice.uuid] }));
  });

  it("a person's property is set through update_property", async () => {
    await expectRetired(actorsQuery, () =>
      ctx.c.post(`${ctx.persons}${ctx.alice.id}/update_property/`, { key: 'email', value: 'a@example.org' }),
    );
  });

  it('a person is split', async () => {
    await expectRetired(actorsQuery, () =>
      ctx.c.post(`${ctx.persons}${ctx.alice.id}/split/`, { main_distinct_id: 'alice' }),
    );
  });

  it("a person's property is deleted or edited", async () => {
    await expectRetired(actorsQuery, () =>
      ctx.c.post(`${ctx.persons}${ctx.alice.id}/delete_property/`, { $unset: 'email' }),
    );
    await ctx.c.patch(`${ctx.persons}${ctx.alice.id}/`, { properties: { email: 'alice@example.com' } });
    await expectRetired(actorsQuery, () =>
      ctx.c.patch(`${ctx.persons}${ctx.alice.id}/`, { properties: { email: 'a@example.org' } }),
    );
  });

  it('an action is changed or deleted (TrendsQuery of the action)', async () => {
    const actions = `/api/environments/${ctx.projectId}/actions/`;
    const action = (await ctx.c.post(actions, { name: 'Views', steps: [{ event: 'viewed' }] })).body;
    // Broken down by e-mail, so that the answer names alice.
    const trend = {
      kind: 'TrendsQuery',
      series: [{ kind: 'ActionsNode', id: action.id }],
      dateRange: { date_from: '-7d' },
      breakdownFilter: { breakdown_type: 'person', breakdown: 'email' },
    };
    await expectRetired(trend, () => ctx.c.patch(`${actions}${action.id}/`, { steps: [{ event: '$identify' }] }));
    await ctx.c.patch(`${actions}${action.id}/`, { steps: [{ event: 'viewed' }] });
    await expectRetired(trend, () => ctx.c.delete(`${actions}${action.id}/`));
  });
});

describe('the legacy trend cache', () => {
  it('does not serve a breakdown naming a deleted person', async () => {
    const path = `/api/environments/${ctx.projectId}/insights/trend/`;
    const body = { events: [{ id: 'viewed' }], date_from: '-7d', breakdown: 'email', breakdown_type: 'person' };
    expect((await ctx.c.post(path, body)).text).toContain('alice@example.com');
    expect((await ctx.c.post(path, body)).body.is_cached).toBe(true);
    await ctx.c.delete(`${ctx.persons}${ctx.alice.id}/`);
    const after = await ctx.c.post(path, body);
    expect(after.body.is_cached).toBe(false);
    expect(after.text).not.toContain('alice@example.com');
  });
});

describe('an async query finished before a deletion', () => {
  it('withholds its stored answer (400 naming why) instead of serving the deleted person', async () => {
    const started = await ctx.query(actorsQuery, 'force_async');
    const path = `/api/environments/${ctx.projectId}/query/${started.body.query_status.id}/`;
    const done = await eventually(async () => {
      const res = await ctx.c.get(path);
      expect(res.body.query_status.complete).toBe(true);
      return res;
    }, 30_000);
    expect(done.status).toBe(200);
    expect(done.text).toContain('alice@example.com');
    await ctx.c.delete(`${ctx.persons}${ctx.alice.id}/`);
    const after = await ctx.c.get(path);
    expect(after.status).toBe(400);
    expect(after.body.query_status.error_message).toMatch(/deleted or changed since it started/);
    expect(after.text).not.toContain('alice');
  });
});
