import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { claimQueryRun, finishQueryRun, putQueryStatus } from '#shared/db/query-store.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { runQueuedQuery } from '#shared/domain/query/index.ts';
import { expectErrorShape, eventually, newKey, newProject, useApi, type Client } from '../support/api.ts';

// These tests are about the envelope around any kind's runner; TrendsQuery is the kind they send.
const api = useApi();

const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString();

interface Ctx {
  c: Client;
  key: string;
  email: string;
  projectId: number;
  path: string;
}

async function projectWithEvents(): Promise<Ctx> {
  const p = await newProject(api.as);
  const batch = [
    { event: 'viewed', distinct_id: 'a', timestamp: day(1) },
    { event: 'viewed', distinct_id: 'b', timestamp: day(1) },
    { event: 'viewed', distinct_id: 'a', timestamp: day(2) },
  ];
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(3);
  await eventually(async () => {
    const counts = await readRollups(p.projectId, null, day(10).slice(0, 13), day(-1).slice(0, 13));
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(3);
  });
  return {
    c: api.as(p.key),
    key: p.key,
    email: p.email,
    projectId: p.projectId,
    path: `/api/environments/${p.projectId}/query/`,
  };
}

/** A TrendsQuery of `viewed`; `days` makes queries that differ (their own cache keys). */
const trends = (days = 7) => ({
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: 'viewed' }],
  dateRange: { date_from: `-${days}d` },
});
const total = (answer: any) => answer.results[0].count;

async function pollUntilComplete(c: Client, path: string) {
  return eventually(async () => {
    const res = await c.get(path);
    expect(res.body.query_status.complete).toBe(true);
    return res;
  }, 30_000);
}

describe('refresh modes and the cache', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await projectWithEvents();
  });

  it('computes a blocking query, then answers it from the cache saying when it was computed', async () => {
    const first = await ctx.c.post(ctx.path, { query: trends(7) });
    expect(first.status).toBe(200);
    expect(total(first.body)).toBe(3);
    expect(first.body).toMatchObject({
      is_cached: false,
      timezone: 'UTC',
      cache_key: expect.stringMatching(/^cache_/),
    });
    expect(Date.parse(first.body.next_allowed_client_refresh) - Date.parse(first.body.last_refresh)).toBe(60_000);
    // The trends runner reports its phases (setup, read, compute, ...) as PostHog's timings.
    expect(first.body.timings).toContainEqual({ k: expect.any(String), t: expect.any(Number) });
    const again = await ctx.c.post(ctx.path, { query: trends(7), refresh: 'blocking' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      is_cached: true,
      last_refresh: first.body.last_refresh,
      next_allowed_client_refresh: first.body.next_allowed_client_refresh,
      cache_key: first.body.cache_key,
    });
    expect(again.body.results).toEqual(first.body.results);
    // The same query with its keys in another order is the same cache entry.
    const reordered = {
      dateRange: { date_from: '-7d' },
      series: [{ event: 'viewed', kind: 'EventsNode' }],
      kind: 'TrendsQuery',
    };
    expect((await ctx.c.post(ctx.path, { query: reordered })).body).toMatchObject({
      is_cached: true,
      cache_key: first.body.cache_key,
    });
  });

  it('recomputes with force_blocking (and the older refresh: true), and caches the new answer', async () => {
    const first = await ctx.c.post(ctx.path, { query: trends(8) });
    const forced = await ctx.c.post(ctx.path, { query: trends(8), refresh: 'force_blocking' });
    expect(forced.body.is_cached).toBe(false);
    expect(Date.parse(forced.body.last_refresh)).toBeGreaterThan(Date.parse(first.body.last_refresh));
    const legacyForced = await ctx.c.post(ctx.path, { query: trends(8), refresh: true });
    expect(legacyForced.body.is_cached).toBe(false);
    expect(Date.parse(legacyForced.body.last_refresh)).toBeGreaterThan(Date.parse(forced.body.last_refresh));
    const cached = await ctx.c.post(ctx.path, { query: trends(8), refresh: false });
    expect(cached.body).toMatchObject({ is_cached: true, last_refresh: legacyForced.body.last_refresh });
  });

  it('answers force_cache from the cache only: a cache miss (cache_key, no results) computes nothing', async () => {
    const miss = await ctx.c.post(ctx.path, { query: trends(9), refresh: 'force_cache' });
    expect(miss.status).toBe(200);
    expect(miss.body).toEqual({ cache_key: expect.stringMatching(/^cache_/), query_status: null });
    // Still a miss: nothing was computed or started by the first.
    expect((await ctx.c.post(ctx.path, { query: trends(9), refresh: 'force_cache' })).body.results).toBeUndefined();
    const computed = await ctx.c.post(ctx.path, { query: trends(9) });
    expect(computed.body.cache_key).toBe(miss.body.cache_key);
    const hit = await ctx.c.post(ctx.path, { query: trends(9), refresh: 'force_cache' });
    expect(hit.body).toMatchObject({ is_cached: true, last_refresh: computed.body.last_refresh });
    expect(total(hit.body)).toBe(3);
  });

  it('refuses an unknown refresh value and a malformed client_query_id with a 400 naming the field', async () => {
    const refresh = await ctx.c.post(ctx.path, { query: trends(), refresh: 'sometimes' });
    expect(refresh.status).toBe(400);
    expectErrorShape(refresh.body);
    expect(refresh.body.attr).toBe('refresh');
    const id = await ctx.c.post(ctx.path, { query: trends(), client_query_id: 'not ok/../x' });
    expect(id.status).toBe(400);
    expect(id.body).toMatchObject({ attr: 'client_query_id', detail: expect.stringContaining('128') });
    expect((await ctx.c.post(ctx.path, { query: trends(), client_query_id: 'x'.repeat(129) })).status).toBe(400);
  });
});

describe('async queries', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await projectWithEvents();
  });

  it('answers async at once (202, query_status incomplete), then the status completes with the answer, which is cached', async () => {
    const started = await ctx.c.post(ctx.path, { query: trends(10), refresh: 'async' });
    expect(started.status).toBe(202);
    const status = started.body.query_status;
    expect(started.body.cache_key).toMatch(/^cache_/);
    expect(status).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{32}$/),
      team_id: ctx.projectId,
      complete: false,
      query_async: true,
      error: false,
      error_message: null,
      results: null,
    });
    expect(Date.parse(status.start_time)).toBeGreaterThan(Date.now() - 60_000);
    const done = await pollUntilComplete(ctx.c, `${ctx.path}${status.id}/`);
    expect(done.status).toBe(200);
    expect(done.body.query_status).toMatchObject({ id: status.id, complete: true, error: false, query_async: true });
    expect(Date.parse(done.body.query_status.end_time)).toBeGreaterThanOrEqual(
      Date.parse(done.body.query_status.pickup_time),
    );
    const answer = done.body.query_status.results;
    expect(answer).toMatchObject({ is_cached: false, cache_key: started.body.cache_key, timezone: 'UTC' });
    expect(total(answer)).toBe(3);
    // The worker's answer is the cache's: the next request is served from it, saying when it was computed.
    const next = await ctx.c.post(ctx.path, { query: trends(10), refresh: 'async' });
    expect(next.status).toBe(200);
    expect(next.body).toMatchObject({ is_cached: true, last_refresh: answer.last_refresh });
    expect(next.body.query_status).toBeUndefined();
  });

  it('takes the deprecated async: true as refresh async, and force_async always runs in the background under the client_query_id', async () => {
    const legacy = await ctx.c.post(ctx.path, { query: trends(11), async: true });
    expect(legacy.status).toBe(202);
    await pollUntilComplete(ctx.c, `${ctx.path}${legacy.body.query_status.id}/`);
    const id = `client-${randomUUID()}`;
    const forced = await ctx.c.post(ctx.path, { query: trends(11), refresh: 'force_async', client_query_id: id });
    expect(forced.status).toBe(202);
    expect(Object.keys(forced.body)).toEqual(['query_status']);
    expect(forced.body.query_status).toMatchObject({ id, complete: false });
    const done = await pollUntilComplete(ctx.c, `${ctx.path}${id}/`);
    expect(total(done.body.query_status.results)).toBe(3);
  });

  it('stores a query that fails in the worker as PostHog does: complete, error, error_message; GET answers 400', async () => {
    const failing = {
      kind: 'TrendsQuery',
      series: [{ kind: 'ActionsNode', id: 987_654 }],
      dateRange: { date_from: '-7d' },
    };
    const started = await ctx.c.post(ctx.path, { query: failing, refresh: 'force_async' });
    expect(started.status).toBe(202);
    const failed = await pollUntilComplete(ctx.c, `${ctx.path}${started.body.query_status.id}/`);
    expect(failed.status).toBe(400);
    expect(failed.body.query_status).toMatchObject({
      complete: true,
      error: true,
      error_message: 'Action 987654 does not exist.',
      results: null,
    });
  });

  it('cancels a query with DELETE: its status says so, and the worker neither runs nor overwrites it', async () => {
    const queryId = `cancel-${randomUUID()}`;
    const runId = randomUUID();
    const owner = (await api.as(ctx.key).get('/api/organizations/')).body.results[0];
    await putQueryStatus(
      {
        id: queryId,
        team_id: ctx.projectId,
        complete: false,
        error: false,
        error_message: null,
        start_time: new Date().toISOString(),
        pickup_time: null,
        end_time: null,
        expiration_time: null,
        cancelled: false,
        run_id: runId,
        query: trends(12),
        membership: { user_id: 'u', organization_id: owner.id, level: 15, joined_at: new Date().toISOString() },
        cache_key: 'cache_x',
        timezone: 'UTC',
      },
      3_600,
    );
    // The worker has picked it up and is computing when the client cancels.
    expect(await claimQueryRun(ctx.projectId, queryId, runId, new Date().toISOString())).toBe(true);
    const cancelled = await ctx.c.delete(`${ctx.path}${queryId}/`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ message: 'Query cancelled' });
    // Its run ends: what it stores is refused; a redelivered message does not run it again.
    expect(
      await finishQueryRun(
        ctx.projectId,
        queryId,
        runId,
        { error: false, error_message: null, end_time: new Date().toISOString() },
        3_600,
      ),
    ).toBe(false);
    await runQueuedQuery({ project_id: ctx.projectId, query_id: queryId, run_id: runId }, Date.now() + 60_000, 1);
    const status = await ctx.c.get(`${ctx.path}${queryId}/`);
    expect(status.body.query_status).toMatchObject({
      complete: true,
      error: true,
      error_message: 'Query cancelled',
      results: null,
    });
    expect((await ctx.c.delete(`${ctx.path}${queryId}/`)).body).toEqual({ message: 'Query cancelled' });
  });

  it('cancels over HTTP a query started over HTTP; a query that already finished stays as it was', async () => {
    const started = await ctx.c.post(ctx.path, { query: trends(13), refresh: 'force_async' });
    const id = started.body.query_status.id;
    const cancel = await ctx.c.delete(`${ctx.path}${id}/`);
    expect(cancel.status).toBe(200);
    // Whoever was first (the client or the worker) decides; the status never changes after that.
    const first = (await ctx.c.get(`${ctx.path}${id}/`)).body.query_status;
    if (cancel.body.message === 'Query cancelled')
      expect(first).toMatchObject({ complete: true, error_message: 'Query cancelled' });
    else expect(cancel.body.message).toBe('Query already complete');
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await ctx.c.get(`${ctx.path}${id}/`)).body.query_status).toMatchObject({
      complete: true,
      error: first.error,
    });
  });

  it("answers 404 for another project's query id, by its key or through its own project, and changes nothing", async () => {
    const started = await ctx.c.post(ctx.path, { query: trends(14), refresh: 'force_async' });
    const id = started.body.query_status.id;
    const stranger = await projectWithEventsLite();
    for (const path of [`${stranger.path}${id}/`, `${ctx.path}${id}/`]) {
      const get = await stranger.c.get(path);
      expect(get.status).toBe(404);
      expectErrorShape(get.body);
      expect((await stranger.c.delete(path)).status).toBe(404);
    }
    const mine = await pollUntilComplete(ctx.c, `${ctx.path}${id}/`);
    expect(mine.body.query_status.error).toBe(false);
    expect((await ctx.c.get(`${ctx.path}no-such-query/`)).status).toBe(404);
    const malformed = await ctx.c.get(`${ctx.path}${'x'.repeat(129)}/`);
    expect(malformed.status).toBe(400);
    expectErrorShape(malformed.body);
  });
});

async function projectWithEventsLite() {
  const p = await newProject(api.as);
  return { c: api.as(p.key), path: `/api/environments/${p.projectId}/query/` };
}

describe('what a status keeps', () => {
  it("keeps any query it accepts: numbers past DynamoDB's range and empty keys in its unvalidated parts are a 202, not a 500 (fuzz)", async () => {
    const ctx = await projectWithEventsLite();
    for (const extra of [{ n: -1e300 }, { n: 1e-200 }, { '': 1 }]) {
      const query = {
        kind: 'EventsQuery',
        select: ['event'],
        after: '-7d',
        properties: [{ key: 'plan', value: 'x', type: 'event', ...extra }],
      };
      const started = await ctx.c.post(ctx.path, { query, refresh: 'force_async' });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      const done = await pollUntilComplete(ctx.c, `${ctx.path}${started.body.query_status.id}/`);
      expect(done.status).toBe(200);
    }
  });
});

describe('scopes', () => {
  it('accepts insight:read keys on the query routes, as PostHog does for insight queries, and refuses a key with neither scope', async () => {
    const ctx = await projectWithEvents();
    const insight = await newKey({ email: ctx.email, scopes: ['insight:read'] });
    const c = api.as(insight.key);
    const answer = await c.post(ctx.path, { query: trends(), refresh: 'force_async' });
    expect(answer.status).toBe(202);
    expect((await pollUntilComplete(c, `${ctx.path}${answer.body.query_status.id}/`)).status).toBe(200);
    expect((await c.delete(`${ctx.path}${answer.body.query_status.id}/`)).status).toBe(200);
    const other = await newKey({ email: ctx.email, scopes: ['person:read', 'action:read'] });
    for (const res of [
      await api.as(other.key).post(ctx.path, { query: trends() }),
      await api.as(other.key).get(`${ctx.path}${answer.body.query_status.id}/`),
      await api.as(other.key).delete(`${ctx.path}${answer.body.query_status.id}/`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.detail).toBe("API key missing required scope 'query:read'");
    }
  });
});
