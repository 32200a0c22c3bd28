import * as v from 'valibot';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { apiHandler, publicHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { fakeRequest } from './fake-request.ts';

/** The factories end to end, on the paths that need no table: no key, a bad body, a public handler. */
const context = (remainingMs = 10_000) => ({ getRemainingTimeInMillis: () => remainingMs }) as Context;
const event = (over: Parameters<typeof fakeRequest>[0]) => fakeRequest(over).event;
const createRoute = {
  operationId: 'organizations_create',
  method: 'POST',
  path: '/api/organizations',
  scope: 'organization:write',
} as const;

describe('apiHandler', () => {
  const handler = apiHandler(createRoute, { body: v.object({ name: v.string() }) }, async () => ok({}));

  it('refuses a bad body before asking for a key: 413, 415 and 400 parse_error come before 401', async () => {
    const tooLarge = await handler(
      event({ body: `{"a":"${'x'.repeat(1024 * 1024)}"}`, headers: { 'content-type': 'application/json' } }),
      context(),
    );
    expect(tooLarge.statusCode).toBe(413);
    const malformed = await handler(event({ body: '{', headers: { 'content-type': 'application/json' } }), context());
    expect([malformed.statusCode, JSON.parse(String(malformed.body)).code]).toEqual([400, 'parse_error']);
    const form = await handler(event({ body: 'a=1', headers: { 'content-type': 'text/plain' } }), context());
    expect(form.statusCode).toBe(415);
  });

  it("answers a request without a key 401 in PostHog's shape, with no rate-limit headers", async () => {
    const res = await handler(
      event({ body: '{"name":"x"}', headers: { 'content-type': 'application/json' } }),
      context(),
    );
    expect(res.statusCode).toBe(401);
    expect(JSON.parse(String(res.body))).toEqual({
      type: 'authentication_error',
      code: 'not_authenticated',
      detail: 'Authentication credentials were not provided.',
      attr: null,
    });
    expect(Object.keys(res.headers).filter((h) => h.startsWith('X-RateLimit'))).toEqual([]);
  });
});

describe('publicHandler', () => {
  const route = { operationId: 'capture', method: 'POST', path: '/capture' };

  it('gives the handler the raw request: decoded body bytes, headers, the last of repeated query keys, the public URL', async () => {
    let seen: unknown;
    const handler = publicHandler(route, async (request) => {
      seen = {
        body: request.body.toString('utf8'),
        query: request.query,
        url: request.url.href,
        ua: request.headers['user-agent'],
      };
      return ok({ status: 1 });
    });
    const res = await handler(
      event({
        body: Buffer.from('a=1').toString('base64'),
        isBase64Encoded: true,
        rawPath: '/capture',
        rawQueryString: 'ip=1&ip=2',
        headers: { host: 'example.com', 'user-agent': 'sdk' },
      }),
      context(),
    );
    expect(res).toMatchObject({ statusCode: 200, body: '{"status":1}' });
    expect(seen).toEqual({ body: 'a=1', query: { ip: '2' }, url: 'https://example.com/capture?ip=1&ip=2', ua: 'sdk' });
  });

  it('maps errors to the error shape and puts CORS on error responses too', async () => {
    const handler = publicHandler(route, async () => {
      throw new ValidationError('Invalid token.', 'api_key');
    });
    const res = await handler(event({ headers: { origin: 'https://site.example' } }), context());
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(String(res.body))).toMatchObject({ detail: 'Invalid token.', attr: 'api_key' });
    expect(res.headers['Access-Control-Allow-Origin']).toBe('https://site.example');
  });

  it("answers a handler still running at the function's timeout with the API's 500 (middy races the handler, not the middlewares)", async () => {
    const handler = publicHandler(route, () => new Promise(() => undefined), { cors: 'any' });
    const res = await handler(event({}), context(100));
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(String(res.body))).toEqual({
      type: 'server_error',
      code: 'error',
      detail: 'A server error occurred.',
      attr: null,
    });
    expect(res.headers['Access-Control-Allow-Origin']).toBe('*');
  });
});
