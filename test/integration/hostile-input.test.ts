// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape, eventually, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();

/** Catastrophic for a backtracking engine against HOSTILE: 2^10,000 ways to split the a's, none followed by the end. */
const CATASTROPHIC = '^(a+)+$';
const HOSTILE = `${'a'.repeat(10_000)}!`;
/**
 * End to end, with DynamoDB Local reads, on a 2-core machine shared with other test runs (load 18 seen:
 * plain requests took 0.4-0.8 s). A backtracking engine takes longer than anyone waits (2^n for n a's).
 */
const QUICK_MS = 5_000;

async function timed(request: () => Promise<{ status: number; body: any }>) {
  const started = performance.now();
  const res = await request();
  const ms = performance.now() - started;
  return { ...res, ms };
}

const regex = (key: string, type: 'event' | 'person') => [{ key, operator: 'regex', value: CATASTROPHIC, type }];

describe('a catastrophic regex against a stored 10,000-character value answers quickly', () => {
  let c: Client;
  let projectId: number;
  let trendPath: string;

  beforeAll(async () => {
    const p = await newProject(api.as);
    c = api.as(p.key);
    projectId = p.projectId;
    trendPath = `/api/environments/${projectId}/insights/trend/`;
    const batch = [
      {
        event: 'hostile',
        distinct_id: 'mallory',
        timestamp: '2024-03-11T09:00:00Z',
        properties: { text: HOSTILE, $set: { bio: HOSTILE } },
      },
      {
        event: 'hostile',
        distinct_id: 'alice',
        timestamp: '2024-03-11T10:00:00Z',
        properties: { text: 'aaaa', $set: { bio: 'aaaa' } },
      },
    ];
    expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(2);
    await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/persons/?distinct_id=mallory`);
      expect(res.body.results[0]?.properties.bio).toBe(HOSTILE);
    }, 30_000);
    // Refreshed: an answer is cached for a minute, and under load the two events can be counted by
    // separate stream batches (a count of 1 cached meanwhile would outlive this wait).
    await eventually(async () => {
      const res = await c.post(trendPath, { events: [{ id: 'hostile' }], date_from: '-7d', refresh: true });
      expect(res.body.result[0].count).toBe(2);
    }, 30_000);
  });

  it('in a trend property filter (GET, JSON-encoded) and a series filter (POST)', async () => {
    const get = await timed(() =>
      c.get(
        `${trendPath}?events=${encodeURIComponent(JSON.stringify([{ id: 'hostile' }]))}&date_from=-7d&properties=${encodeURIComponent(JSON.stringify(regex('text', 'event')))}`,
      ),
    );
    expect(get.status).toBe(200);
    expect(get.body.result[0].count).toBe(1); // alice's 'aaaa'
    expect(get.ms).toBeLessThan(QUICK_MS);
    const post = await timed(() =>
      c.post(trendPath, {
        events: [{ id: 'hostile', properties: [{ key: 'text', operator: 'not_regex', value: CATASTROPHIC }] }],
        date_from: '-7d',
      }),
    );
    expect(post.status).toBe(200);
    expect(post.body.result[0].count).toBe(1); // mallory's
    expect(post.ms).toBeLessThan(QUICK_MS);
  });

  it('in a person filter of the persons list', async () => {
    const res = await timed(() =>
      c.get(
        `/api/environments/${projectId}/persons/?properties=${encodeURIComponent(JSON.stringify(regex('bio', 'person')))}`,
      ),
    );
    expect(res.status).toBe(200);
    expect(res.body.results.map((p: any) => p.distinct_ids[0])).toEqual(['alice']);
    expect(res.ms).toBeLessThan(QUICK_MS);
  });

  it("in the project's test-account filters, used by filter_test_accounts", async () => {
    expect(
      (
        await c.patch(`/api/environments/${projectId}/`, {
          test_account_filters: [{ key: 'text', operator: 'not_regex', value: CATASTROPHIC, type: 'event' }],
        })
      ).status,
    ).toBe(200);
    const res = await timed(() =>
      c.post(trendPath, { events: [{ id: 'hostile' }], date_from: '-7d', filter_test_accounts: true }),
    );
    expect(res.status).toBe(200);
    expect(res.body.result[0].count).toBe(1);
    expect(res.ms).toBeLessThan(QUICK_MS);
  });

  it('in an action step, used as a trend series', async () => {
    const action = await c.post(`/api/environments/${projectId}/actions/`, {
      name: 'Hostile',
      steps: [{ event: 'hostile', properties: regex('text', 'event') }],
    });
    expect(action.status).toBe(201);
    const res = await timed(() => c.post(trendPath, { actions: [{ id: action.body.id }], date_from: '-7d' }));
    expect(res.status).toBe(200);
    expect(res.body.result[0].count).toBe(1);
    expect(res.ms).toBeLessThan(QUICK_MS);
  });
});

describe('hostile input is refused quickly with a 400, never a 500', () => {
  let c: Client;
  let p: Awaited<ReturnType<typeof newProject>>;
  beforeAll(async () => {
    p = await newProject(api.as);
    c = api.as(p.key);
  });
  const destination = {
    type: 'S3',
    config: {
      bucket_name: 'hostile-input-bucket',
      region: 'us-east-1',
      prefix: 'p',
      aws_access_key_id: 'k',
      aws_secret_access_key: 's',
    },
  };

  it('a regex RE2 cannot run, on every route that stores or reads filters', async () => {
    const lookahead = [{ key: 'text', operator: 'regex', value: '(?=a)a', type: 'event' }];
    const replies = [
      await c.post(`/api/environments/${p.projectId}/insights/trend/`, {
        events: [{ id: 'e' }],
        properties: lookahead,
      }),
      await c.get(
        `/api/environments/${p.projectId}/persons/?properties=${encodeURIComponent(JSON.stringify(lookahead.map((f) => ({ ...f, type: 'person' }))))}`,
      ),
      await c.patch(`/api/environments/${p.projectId}/`, { test_account_filters: lookahead }),
      await c.post(`/api/environments/${p.projectId}/actions/`, {
        name: 'x',
        steps: [{ event: 'e', properties: lookahead }],
      }),
      await c.post(`/api/organizations/${p.org.id}/batch_exports/`, {
        name: 'x',
        interval: 'hour',
        filters: lookahead,
        destination,
      }),
    ];
    for (const res of replies) {
      expect(res.status).toBe(400);
      expectErrorShape(res.body);
      expect(res.body.detail).toMatch(/^Invalid regular expression: /);
      expect(res.body.attr).toMatch(/__value$/);
    }
  });

  const deepGroup = (depth: number) =>
    `${'{"type":"AND","values":['.repeat(depth)}{"key":"k","value":"v"}${']}'.repeat(depth)}`;

  it('a 10,000-deep properties parameter to the trend endpoint: a JSON string in the body, parsed like the GET parameter', async () => {
    // A URL cannot carry it (API Gateway refuses request lines over 10 KB, Node's server over 16 KB);
    // a body can, as a string the body's own depth check cannot see into.
    const res = await c.post(`/api/environments/${p.projectId}/insights/trend/`, {
      events: '[{"id":"e"}]',
      properties: deepGroup(10_000),
    });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'properties' });
    expect(res.body.detail).toContain('128');
  });

  it('a properties GET parameter as deep as a URL can carry', async () => {
    const res = await c.get(
      `/api/environments/${p.projectId}/insights/trend/?events=${encodeURIComponent('[{"id":"e"}]')}&properties=${encodeURIComponent(deepGroup(150))}`,
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'properties' });
    expect(res.body.detail).toContain('128');
  });

  it('a deep properties parameter to the persons list', async () => {
    const res = await c.get(
      `/api/environments/${p.projectId}/persons/?properties=${encodeURIComponent(deepGroup(150))}`,
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'properties' });
    expect(res.body.detail).toContain('128');
  });

  it('a 10,000-character hogql_query answers at once', async () => {
    const body = (hogql_query: string) => ({
      name: 'x',
      interval: 'hour',
      hogql_query,
      destination,
    });
    const base = `/api/organizations/${p.org.id}/batch_exports/`;
    for (const query of [
      `select ${' '.repeat(9_990)}`,
      `select ${' '.repeat(9_970)}x from events`,
      `select ${'('.repeat(4_990)}${')'.repeat(4_990)} from events`,
    ]) {
      const res = await timed(() => c.post(base, body(query)));
      expect(res.status).toBe(400);
      expect(res.body.attr).toBe('hogql_query');
      expect(res.ms).toBeLessThan(QUICK_MS); // the cubic pattern took minutes; the parse alone is unit-tested under 1 s
    }
    const ok = await timed(() => c.post(base, body(`select uuid,${' '.repeat(9_900)}event as name from events`)));
    expect(ok.status).toBe(201);
    expect(ok.ms).toBeLessThan(QUICK_MS);
    await c.delete(`${base}${ok.body.id}/`);
  });
});
