import { afterEach, describe, expect, it, vi } from 'vitest';
import { NotFound, Throttled } from '#shared/errors.ts';
import { completion } from '#shared/http/middleware/completion.ts';
import { cors } from '#shared/http/middleware/cors.ts';
import { handedOff, handoff } from '#shared/http/middleware/handoff.ts';
import { logger, METRIC, metrics } from '#shared/observability.ts';
import { fakeCaller, fakeRequest, response, thrownBy } from './fake-request.ts';

const route = { operationId: 'persons_list', method: 'GET', path: '/api/environments/:project_id/persons' };

function recordMetrics() {
  const recorded: Record<string, number> = {};
  vi.spyOn(metrics, 'addDimension').mockImplementation(() => metrics);
  vi.spyOn(metrics, 'addMetric').mockImplementation((name: string, _unit, value: number) => {
    recorded[name] = value;
    return metrics;
  });
  return recorded;
}

afterEach(() => vi.restoreAllMocks());

describe('completion middleware', () => {
  it('records the request with its log keys, and on success adds the rate-limit headers and the metrics', async () => {
    const keys = vi.spyOn(logger, 'appendKeys');
    const recorded = recordMetrics();
    const request = fakeRequest();
    await completion(route).before?.(request);
    expect(keys).toHaveBeenCalledWith({
      operation_id: 'persons_list',
      route: 'GET /api/environments/:project_id/persons',
      request_id: 'req-1',
    });
    expect(request.internal.startedAt).toBeTypeOf('number');
    request.response = response(200, { 'Content-Type': 'application/json' });
    request.internal.rateLimitHeaders = { 'X-RateLimit-Remaining': '3' };
    await completion(route).after?.(request);
    expect(request.response.headers).toEqual({ 'Content-Type': 'application/json', 'X-RateLimit-Remaining': '3' });
    expect(recorded).toMatchObject({ [METRIC.requestCount]: 1, [METRIC.serverErrors]: 0, [METRIC.clientErrors]: 0 });
    expect(recorded[METRIC.throttled]).toBeUndefined();
  });

  it("maps an error to PostHog's error shape, with the rate-limit headers, and counts a client error", async () => {
    const recorded = recordMetrics();
    const request = fakeRequest({}, { rateLimitHeaders: { 'X-RateLimit-Remaining': '3' } });
    request.error = new NotFound();
    await completion(route).onError?.(request);
    expect(request.response).toEqual({
      statusCode: 404,
      headers: { 'Content-Type': 'application/json', 'X-RateLimit-Remaining': '3' },
      body: JSON.stringify({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null }),
    });
    expect(recorded).toMatchObject({ [METRIC.clientErrors]: 1, [METRIC.serverErrors]: 0 });
  });

  it('answers an unexpected error with a bare 500 and counts it, and counts a 429 as Throttled', async () => {
    const recorded = recordMetrics();
    const failed = fakeRequest();
    failed.error = new Error('database password is hunter2');
    await completion(route).onError?.(failed);
    expect(failed.response?.statusCode).toBe(500);
    expect(failed.response?.body).not.toContain('hunter2');
    expect(recorded).toMatchObject({ [METRIC.serverErrors]: 1 });
    const throttled = fakeRequest();
    throttled.error = new Throttled(5);
    await completion(route).onError?.(throttled);
    expect(throttled.response).toMatchObject({ statusCode: 429, headers: { 'Retry-After': '5' } });
    expect(recorded).toMatchObject({ [METRIC.throttled]: 1, [METRIC.clientErrors]: 1 });
  });
});

describe('cors middleware', () => {
  it("mirrors the caller's origin with credentials, or answers * for assets the same on every site", async () => {
    const request = fakeRequest({ headers: { origin: 'https://app.example' } });
    request.response = response();
    await cors('origin').after?.(request);
    expect(request.response.headers).toEqual({
      'Access-Control-Allow-Origin': 'https://app.example',
      'Access-Control-Allow-Credentials': 'true',
      Vary: 'Origin',
    });
    const asset = fakeRequest({ headers: { origin: 'https://app.example' } });
    asset.response = response();
    await cors('any').onError?.(asset);
    expect(asset.response.headers).toEqual({ 'Access-Control-Allow-Origin': '*' });
  });
});

describe('handoff middleware', () => {
  it("puts what the pipeline established on the handler's context, and refuses an incomplete pipeline", async () => {
    const input = { format: 'json' as const, params: undefined, query: undefined, body: undefined };
    const request = fakeRequest({}, { caller: fakeCaller(), tenant: { kind: 'none' }, input });
    await handoff.before?.(request);
    expect(handedOff(request.context)).toEqual({ caller: fakeCaller(), tenant: { kind: 'none' }, input });
    expect(String(await thrownBy(handoff, fakeRequest({}, { caller: fakeCaller(), input })))).toContain(
      "'tenant' is set by the tenancy middleware",
    );
    expect(() => handedOff(fakeRequest().context)).toThrow('pipeline order');
  });
});
