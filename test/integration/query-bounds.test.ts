// Many requests at once from one key: the per-key rate limits are another test's subject.
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import { describe, expect, it } from 'vitest';
import { getQueryStatus } from '#shared/db/query-store.ts';
import { getMembership, insertMembership, MembershipLevel } from '#shared/db/organizations.ts';
import { findProject } from '#shared/domain/projects.ts';
import { OutOfTime } from '#shared/domain/query/checkpoint.ts';
import { runnerFor } from '#shared/domain/query/index.ts';
import type { QueryKind } from '#shared/schemas/query/index.ts';
import { findUserIdByEmail } from '#shared/db/users.ts';
import { QUERY_RUNS_PER_PROJECT } from '#shared/domain/query/async.ts';
import { eventually, expectErrorShape, newKey, newProject, useApi, type Client } from '../support/api.ts';

// 60 requests at once queue on DynamoDB Local (far slower than DynamoDB) on a shared 2-core machine:
// the functions get more time than the deployed 10 s, as in concurrency.test.ts.
const api = useApi({ timeoutMs: 30_000 });

const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString();

/** count() over `days` days: reading that many days takes DynamoDB Local seconds, so runs stay in flight a while. */
const countOver = (days: number) => ({ kind: 'EventsQuery', select: ['count()'], after: `-${days}d` });

async function projectWithEvents() {
  const p = await newProject(api.as);
  const batch = Array.from({ length: 30 }, (_, i) => ({
    event: 'viewed',
    distinct_id: `u${i}`,
    timestamp: day(1 + i * 6),
  }));
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(30);
  return { ...p, c: api.as(p.key), path: `/api/environments/${p.projectId}/query/` };
}

/**
 * POST as PostHog's clients do: a 503 (DynamoDB Local timing out under 60 requests at once on a
 * loaded machine) is sent again after its Retry-After. Anything else is the answer.
 */
async function post(c: Client, path: string, body: unknown) {
  for (let attempt = 1; ; attempt += 1) {
    const res = await c.post(path, body);
    if (res.status !== 503 || attempt === 5) return res;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

const completed = (c: Client, path: string, id: string, timeoutMs = 90_000) =>
  eventually(async () => {
    const res = await c.get(`${path}${id}/`);
    expect(res.body.query_status.complete).toBe(true);
    return res;
  }, timeoutMs);

/** The most runs whose [pickup, end] overlap at one instant. */
function mostAtOnce(runs: { pickup_time: string | null; end_time: string | null }[]): number {
  const edges = runs
    .filter((r) => r.pickup_time && r.end_time)
    .flatMap((r) => [
      { t: Date.parse(r.pickup_time!), d: 1 },
      { t: Date.parse(r.end_time!), d: -1 },
    ])
    .sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) {
    now += e.d;
    most = Math.max(most, now);
  }
  return most;
}

describe('bounded background work', () => {
  it('joins 60 identical async queries into one run, caps distinct ones at 3 running (429 + Retry-After), and another organization still gets its answers', async () => {
    const a = await projectWithEvents();
    const b = await projectWithEvents();

    // 60 identical force_async requests: one id, one run (reading 300 days keeps it running well past the burst).
    const identical = await Promise.all(
      Array.from({ length: 60 }, () => post(a.c, a.path, { query: countOver(300), refresh: 'force_async' })),
    );
    expect(identical.map((r) => r.status)).toEqual(Array(60).fill(202));
    const ids = new Set(identical.map((r) => r.body.query_status.id));
    expect(ids.size).toBe(1);
    const sharedId = [...ids][0]!;

    // 60 distinct ones while it runs: the project's other slots, then 429s.
    const distinct = await Promise.all(
      Array.from({ length: 60 }, (_, i) => post(a.c, a.path, { query: countOver(10 + i), refresh: 'force_async' })),
    );
    // Meanwhile another organization's queries: a background one and a blocking one.
    const other = await b.c.post(b.path, { query: countOver(5), refresh: 'force_async' });
    expect(other.status).toBe(202);
    const blocking = await b.c.post(b.path, { query: countOver(3) });
    expect(blocking.status).toBe(200);
    expect(blocking.body.results).toEqual([[1]]);

    const accepted = distinct.filter((r) => r.status === 202);
    const throttled = distinct.filter((r) => r.status === 429);
    expect(accepted.length + throttled.length).toBe(60);
    // A slot freed during the burst may be taken again; most are refused.
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect(throttled.length).toBeGreaterThanOrEqual(45);
    for (const r of throttled) {
      expectErrorShape(r.body);
      expect(r.body).toMatchObject({ type: 'throttled_error', code: 'throttled', attr: null });
      expect(r.body.detail).toContain(`${QUERY_RUNS_PER_PROJECT} queries running`);
      expect(r.headers.get('retry-after')).toBe('5');
    }

    // The other organization's query completes normally (its run does not wait for this project's).
    const otherDone = await completed(b.c, b.path, other.body.query_status.id, 60_000);
    expect(otherDone.status).toBe(200);
    expect(otherDone.body.query_status.results.results).toEqual([[1]]);

    // Every run ends; the worker ran the shared one once; never more than 3 of the project's ran at once.
    const sharedDone = await completed(a.c, a.path, sharedId);
    expect(sharedDone.status).toBe(200);
    expect((await getQueryStatus(a.projectId, sharedId, new Date()))?.claims).toBe(1);
    const runs = await Promise.all(
      [sharedId, ...accepted.map((r) => r.body.query_status.id as string)].map(async (id) => {
        await completed(a.c, a.path, id);
        return (await getQueryStatus(a.projectId, id, new Date()))!;
      }),
    );
    expect(mostAtOnce(runs)).toBeLessThanOrEqual(QUERY_RUNS_PER_PROJECT);
    // Their slots are released: a new question starts at once.
    const after = await a.c.post(a.path, { query: countOver(2), refresh: 'force_async' });
    expect(after.status).toBe(202);
  }, 240_000);

  it('stops a cancelled run within a second or so of the cancel: it neither finishes nor caches its answer', async () => {
    const a = await projectWithEvents();
    const query = countOver(180);
    const started = await a.c.post(a.path, { query, refresh: 'force_async' });
    expect(started.status).toBe(202);
    const id = started.body.query_status.id as string;
    await eventually(
      async () => expect((await getQueryStatus(a.projectId, id, new Date()))?.pickup_time).toBeTruthy(),
      60_000,
    );
    expect((await a.c.delete(`${a.path}${id}/`)).body).toEqual({ message: 'Query cancelled' });
    const cancelledAt = Date.now();
    const stopped = await eventually(async () => {
      const record = await getQueryStatus(a.projectId, id, new Date());
      expect(record?.stopped_at).toBeTruthy();
      return record!;
    }, 30_000);
    // Generous: the worker asks every second and the run checks before each day it reads.
    expect(Date.parse(stopped.stopped_at!) - cancelledAt).toBeLessThan(5_000);
    expect(stopped).toMatchObject({ cancelled: true, error_message: 'Query cancelled' });
    // Nothing computed was cached: force_cache misses.
    const cached = await a.c.post(a.path, { query, refresh: 'force_cache' });
    expect(cached.body.results).toBeUndefined();
    // Its slot is free again: the same question starts a new run.
    const again = await a.c.post(a.path, { query, refresh: 'force_async' });
    expect(again.status).toBe(202);
    expect(again.body.query_status.id).not.toBe(id);
    await a.c.delete(`${a.path}${again.body.query_status.id}/`);
  }, 120_000);
});

describe('every runner checks its checkpoint while reading and computing', () => {
  const kinds: [string, Record<string, unknown>][] = [
    [
      'TrendsQuery',
      { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'viewed' }], dateRange: { date_from: '-30d' } },
    ],
    [
      'TrendsQuery with a breakdown (read from events, computed batch by batch)',
      {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: 'viewed' }],
        dateRange: { date_from: '-30d' },
        breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
      },
    ],
    ['EventsQuery rows', { kind: 'EventsQuery', select: ['*'], after: '-30d' }],
    ['EventsQuery count()', countOver(30)],
    ['ActorsQuery in a value order', { kind: 'ActorsQuery', select: ['id'], orderBy: ['properties.email ASC'] }],
    [
      'EventsQuery rows in an expression order (the whole window read)',
      { kind: 'EventsQuery', select: ['event', 'lower(distinct_id)'], after: '-30d', orderBy: ['distinct_id DESC'] },
    ],
    [
      'EventsQuery aggregates of expressions',
      { kind: 'EventsQuery', select: ['toStartOfWeek(timestamp)', 'avg(length(distinct_id))'], after: '-30d' },
    ],
    [
      'ActorsQuery in an expression order',
      { kind: 'ActorsQuery', select: ['id', 'lower(properties.email)'], orderBy: ['toString(id) DESC', 'created_at'] },
    ],
  ];

  it.each(kinds)('%s: calls it in its loops, and stops when it throws', async (_kind, query) => {
    const a = await projectWithEvents();
    // The persons of those events (the ActorsQuery's rows) are made by the stream worker.
    await eventually(
      async () => expect((await a.c.get(`/api/environments/${a.projectId}/persons/`)).body.results).toHaveLength(30),
      30_000,
    );
    const membership = (await getMembership((await findUserIdByEmail(a.email))!, a.org.id))!;
    const project = await findProject(membership, a.projectId);
    const run = (check: () => void) =>
      runnerFor(query.kind as QueryKind)(
        { membership, projectId: a.projectId, deadline: Date.now() + 60_000, project, check },
        query as never,
      );
    let calls = 0;
    await run(() => {
      calls += 1;
    });
    expect(calls).toBeGreaterThanOrEqual(2);
    // Past its deadline from the second check on: the runner stops with the checkpoint's error.
    let seen = 0;
    await expect(
      run(() => {
        seen += 1;
        if (seen >= 2) throw new OutOfTime();
      }),
    ).rejects.toBeInstanceOf(OutOfTime);
  });
});

describe('a project whose run slots are full', () => {
  it('still serves a stale cached answer to refresh async (without a background refresh), and refuses a cache miss with a 429', async () => {
    const a = await projectWithEvents();
    const fresh = await a.c.post(a.path, { query: countOver(2) });
    expect(fresh.status).toBe(200);
    const slow = await Promise.all(
      [181, 182, 183].map((days) => a.c.post(a.path, { query: countOver(days), refresh: 'force_async' })),
    );
    expect(slow.map((r) => r.status)).toEqual([202, 202, 202]);
    // A list's cached answer is stale at once for async: served, and its refresh skipped while the slots are full.
    const stale = await a.c.post(a.path, { query: countOver(2), refresh: 'async' });
    expect(stale.status).toBe(200);
    expect(stale.body).toMatchObject({ is_cached: true, results: [[1]], query_status: null });
    const miss = await a.c.post(a.path, { query: countOver(4), refresh: 'async' });
    expect(miss.status).toBe(429);
    expect(miss.headers.get('retry-after')).toBe('5');
    for (const r of slow) await a.c.delete(`${a.path}${r.body.query_status.id}/`);
    // Cancelling released the slots at once.
    expect((await a.c.post(a.path, { query: countOver(4), refresh: 'async' })).status).toBe(202);
  }, 120_000);
});

describe('client_query_id', () => {
  it("belongs to its creator: another member's reuse is a 409 naming the field, the creator's own reuse replaces it", async () => {
    const a = await projectWithEvents();
    // A second member of the same organization, with a key of their own.
    const member = await newKey();
    await insertMembership({
      user_id: (await findUserIdByEmail(member.email))!,
      organization_id: a.org.id,
      level: MembershipLevel.member,
      joined_at: new Date().toISOString(),
    });
    const m = api.as(member.key);
    const id = `mine-${Date.now()}`;
    const first = await a.c.post(a.path, { query: countOver(3), refresh: 'force_async', client_query_id: id });
    expect(first.status).toBe(202);
    expect(first.body.query_status.id).toBe(id);

    const taken = await m.post(a.path, { query: countOver(4), refresh: 'force_async', client_query_id: id });
    expect(taken.status).toBe(409);
    expectErrorShape(taken.body);
    expect(taken.body).toMatchObject({ type: 'invalid_request', code: 'conflict', attr: 'client_query_id' });
    // The same with a blocking query handed over, or a question already running: still the creator's id.
    const joined = await m.post(a.path, { query: countOver(3), refresh: 'force_async', client_query_id: id });
    expect(joined.status).toBe(409);

    // The creator's answer is still theirs.
    const mine = await completed(a.c, a.path, id);
    expect(mine.body.query_status.results.results).toEqual([[1]]);
    expect((await getQueryStatus(a.projectId, id, new Date()))?.query).toEqual(countOver(3));

    // The creator may reuse it: it now answers the new question.
    const reused = await a.c.post(a.path, { query: countOver(8), refresh: 'force_async', client_query_id: id });
    expect(reused.status).toBe(202);
    expect(reused.body.query_status.id).toBe(id);
    const replaced = await completed(a.c, a.path, id);
    expect(replaced.body.query_status.results.results).toEqual([[2]]);

    // The member's own ids work as before.
    const theirs = await m.post(a.path, { query: countOver(4), refresh: 'force_async', client_query_id: `${id}-b` });
    expect(theirs.status).toBe(202);
  }, 120_000);
});
