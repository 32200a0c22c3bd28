// Tiny limits for this file's process, set before anything reads the config (read once per process).
// crud: 5 a minute (and an hour limit high enough not to matter); analytics (trends): no minute limit,
// 3 an hour, so the hour window is the one that throttles; capture: 3 a minute per project.
process.env.ANALYTICS_RATE_LIMITS = JSON.stringify({
  crud: { minute: 5, hour: 50 },
  analytics: { minute: null, hour: 3 },
  capture: { minute: 3 },
});

import { GetCommand } from '#shared/aws/dynamodb.ts';
import { describe, expect, it } from 'vitest';
import { secureValue } from '#shared/auth/api-keys.ts';
import { DEFAULT_RATE_LIMITS, readConfig } from '#shared/config.ts';
import { db, tableName } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { limitRequest, verdict, windowStart } from '#shared/db/rate-limits.ts';
import { expectErrorShape, newKey, newProject, useApi, type Reply } from '../support/api.ts';

const api = useApi();

/** Fixed windows: keep a sequence of requests inside one minute (or hour) by starting it well before the end. */
async function awayFromWindowEnd(window: 'minute' | 'hour', marginMs = 10_000): Promise<void> {
  const { endsAtMs } = windowStart(window, Date.now());
  const left = endsAtMs - Date.now();
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 200));
}

function rateHeaders(res: Reply) {
  return {
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: res.headers.get('x-ratelimit-remaining'),
    reset: res.headers.get('x-ratelimit-reset'),
    retryAfter: res.headers.get('retry-after'),
  };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('personal API key rate limits', () => {
  it('counts each key per minute, sends X-RateLimit-* on every response, and answers 429 throttled with Retry-After past the limit', async () => {
    await awayFromWindowEnd('minute');
    const { key } = await newKey();
    const c = api.as(key);
    const minuteEnd = Math.ceil(windowStart('minute', Date.now()).endsAtMs / 1000);
    for (let i = 1; i <= 5; i += 1) {
      const res = await c.get('/api/organizations');
      expect(res.status).toBe(200);
      // The minute window (5) is tighter than the hour (50): its numbers are the ones sent.
      expect(rateHeaders(res)).toMatchObject({
        limit: '5',
        remaining: String(5 - i),
        reset: String(minuteEnd),
        retryAfter: null,
      });
    }
    const throttled = await c.get('/api/organizations');
    expect(throttled.status).toBe(429);
    expectErrorShape(throttled.body);
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(throttled.body).toEqual({
      type: 'throttled_error',
      code: 'throttled',
      detail: `Request was throttled. Expected available in ${retryAfter} seconds.`,
      attr: null,
    });
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Math.abs(nowSeconds() + retryAfter - minuteEnd)).toBeLessThanOrEqual(2);
    expect(rateHeaders(throttled)).toMatchObject({ limit: '5', remaining: '0', reset: String(minuteEnd) });

    // Another key of the same user is its own bucket.
    const other = await newKey();
    const fresh = await api.as(other.key).get('/api/organizations');
    expect(fresh.status).toBe(200);
    expect(rateHeaders(fresh)).toMatchObject({ limit: '5', remaining: '4' });
  });

  it('keeps the counter under the stored key hash, never the raw key, with a TTL just after the window', async () => {
    await awayFromWindowEnd('minute');
    const { key } = await newKey();
    await api.as(key).get('/api/organizations');
    await api.as(key).get('/api/organizations');
    const { start, endsAtMs } = windowStart('minute', Date.now());
    const hash = secureValue(key);
    expect(hash).toMatch(/^sha256\$[0-9a-f]{64}$/);
    const item = (
      await db().send(
        new GetCommand({
          TableName: tableName(),
          Key: keys.rateLimitWindow(hash, 'crud', 'minute', start),
          ConsistentRead: true,
        }),
      )
    ).Item;
    expect(item).toMatchObject({ hits: 2, entity: 'RATE', expires_at: Math.ceil(endsAtMs / 1000) + 60 });
    expect(JSON.stringify(item)).not.toContain(key.slice(4));
  });

  it('counts refused requests of an authenticated key too, and 429 wins over 403 and 404; unauthenticated requests carry no headers', async () => {
    await awayFromWindowEnd('minute');
    const { key } = await newKey({ scopes: ['person:read'] });
    const c = api.as(key);
    const denied = await c.get('/api/organizations');
    expect(denied.status).toBe(403);
    expect(rateHeaders(denied)).toMatchObject({ limit: '5', remaining: '4' });
    const missing = await c.get('/api/environments/999999999/persons');
    expect([403, 404]).toContain(missing.status);
    expect(rateHeaders(missing)).toMatchObject({ remaining: '3' });
    for (let i = 0; i < 3; i += 1) await c.get('/api/organizations');
    expect((await c.get('/api/organizations')).status).toBe(429);
    expect((await c.get('/api/environments/999999999/persons')).status).toBe(429);

    const anonymous = await api.as().get('/api/organizations');
    expect(anonymous.status).toBe(401);
    expect(rateHeaders(anonymous)).toMatchObject({ limit: null, remaining: null, reset: null });
  });

  it('limits the trend routes in their own (analytics) class, here by the hour window', async () => {
    await awayFromWindowEnd('hour', 15_000);
    await awayFromWindowEnd('minute');
    const { key, projectId } = await newProject(api.as);
    const c = api.as(key);
    const hourEnd = Math.ceil(windowStart('hour', Date.now()).endsAtMs / 1000);
    const path = `/api/environments/${projectId}/insights/trend/`;
    for (let i = 1; i <= 3; i += 1) {
      const res =
        i % 2
          ? await c.post(path, { events: [{ id: '$pageview' }] })
          : await c.get(`${path}?events=${encodeURIComponent('[{"id":"$pageview"}]')}`);
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toMatchObject({ limit: '3', remaining: String(3 - i), reset: String(hourEnd) });
    }
    const throttled = await c.post(path, { events: [{ id: '$pageview' }] });
    expect(throttled.status).toBe(429);
    expect(throttled.body.code).toBe('throttled');
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(Math.abs(nowSeconds() + retryAfter - hourEnd)).toBeLessThanOrEqual(2);
    // The same key's CRUD requests are another class: newProject made one, this is the second.
    const crud = await c.get(`/api/environments/${projectId}`);
    expect(crud.status).toBe(200);
    expect(rateHeaders(crud)).toMatchObject({ limit: '5', remaining: '3' });
  }, 60_000);
});

describe('capture rate limit', () => {
  it('limits capture per project token and answers 429 in the error shape; other projects are unaffected', async () => {
    await awayFromWindowEnd('minute');
    const a = await newProject(api.as);
    const b = await newProject(api.as);
    const send = (token: string, i: number) =>
      api.as().post('/capture/', { api_key: token, event: 'hit', distinct_id: `d${i}` });
    for (let i = 0; i < 3; i += 1) expect((await send(a.token, i)).body).toMatchObject({ status: 1, accepted: 1 });
    const throttled = await send(a.token, 3);
    expect(throttled.status).toBe(429);
    expectErrorShape(throttled.body);
    expect(throttled.body).toMatchObject({ type: 'throttled_error', code: 'throttled' });
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await send(b.token, 0)).status).toBe(200);
  });
});

describe('rate limit rules', () => {
  const at = Date.parse('2024-03-12T12:00:30Z');
  const minute = { window: 'minute' as const, limit: 5, endsAtMs: Date.parse('2024-03-12T12:01:00Z') };
  const hour = { window: 'hour' as const, limit: 50, endsAtMs: Date.parse('2024-03-12T13:00:00Z') };

  it('describes the window with fewest requests left, the later-resetting one on a tie', () => {
    expect(
      verdict(
        [
          { ...minute, count: 1 },
          { ...hour, count: 10 },
        ],
        at,
      ).headers,
    ).toEqual({
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '4',
      'X-RateLimit-Reset': String(Date.parse('2024-03-12T12:01:00Z') / 1000),
    });
    expect(
      verdict(
        [
          { ...minute, count: 1 },
          { ...hour, count: 48 },
        ],
        at,
      ).headers['X-RateLimit-Limit'],
    ).toBe('50');
    expect(
      verdict(
        [
          { ...minute, count: 3 },
          { ...hour, count: 48 },
        ],
        at,
      ).headers['X-RateLimit-Limit'],
    ).toBe('50');
  });

  it('throttles until the last exceeded window ends', () => {
    const overMinute = verdict(
      [
        { ...minute, count: 6 },
        { ...hour, count: 10 },
      ],
      at,
    );
    expect(overMinute.throttled?.status).toBe(429);
    expect(overMinute.throttled?.headers['Retry-After']).toBe('30');
    const overBoth = verdict(
      [
        { ...minute, count: 6 },
        { ...hour, count: 51 },
      ],
      at,
    );
    expect(overBoth.throttled?.headers).toMatchObject({
      'Retry-After': String(3600 - 30),
      'X-RateLimit-Limit': '50',
      'X-RateLimit-Remaining': '0',
    });
    expect(verdict([{ ...minute, count: 5 }], at).throttled).toBeUndefined();
  });

  it('names windows by their UTC start', () => {
    expect(windowStart('minute', Date.parse('2024-03-12T12:34:56.789Z'))).toEqual({
      start: '2024-03-12T12:34',
      endsAtMs: Date.parse('2024-03-12T12:35:00Z'),
    });
    expect(windowStart('hour', Date.parse('2024-03-12T12:34:56.789Z'))).toEqual({
      start: '2024-03-12T12',
      endsAtMs: Date.parse('2024-03-12T13:00:00Z'),
    });
  });

  it('fails open: a counter that cannot be written lets the request through without headers', async () => {
    // A partition key over DynamoDB's 2,048 bytes: the update is refused, as a missing permission would be.
    expect(await limitRequest('x'.repeat(3000), 'crud')).toEqual({ headers: {} });
  });

  it('reads PostHog’s numbers by default and takes overrides from ANALYTICS_RATE_LIMITS', () => {
    expect(readConfig({}).rateLimits).toEqual(DEFAULT_RATE_LIMITS);
    expect(DEFAULT_RATE_LIMITS).toEqual({
      crud: { minute: 480, hour: 4800 },
      analytics: { minute: 240, hour: 1200 },
      capture: { minute: 10_000 },
    });
    expect(
      readConfig({ ANALYTICS_RATE_LIMITS: '{"analytics":{"minute":2},"capture":{"minute":null}}' }).rateLimits,
    ).toEqual({
      crud: { minute: 480, hour: 4800 },
      analytics: { minute: 2, hour: 1200 },
      capture: {},
    });
    expect(readConfig({ ANALYTICS_RATE_LIMITS: '{"enabled":false}' }).rateLimits).toBeUndefined();
    expect(() => readConfig({ ANALYTICS_RATE_LIMITS: '{"crud":{"minute":0}}' })).toThrow(/positive integer/);
    expect(() => readConfig({ ANALYTICS_RATE_LIMITS: '{"crud":{"day":5}}' })).toThrow(/unknown window/);
    expect(() => readConfig({ ANALYTICS_RATE_LIMITS: 'fast' })).toThrow(/JSON/);
  });
});
