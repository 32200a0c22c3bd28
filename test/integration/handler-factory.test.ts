import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { lambdaContext } from '../../infra/local/lambda-context.ts';
import { newKey } from '../support/api.ts';

function jsonLines(lines: string[]): any[] {
  return lines
    .flatMap((chunk) => chunk.split('\n'))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

const route = {
  operationId: 'test_op',
  method: 'GET',
  path: '/api/organizations',
  scope: 'organization:read',
} as const;

function event(key: string | undefined, requestId = 'req-123'): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'GET /api/organizations',
    rawPath: '/api/organizations',
    rawQueryString: '',
    headers: { host: '127.0.0.1:1', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    requestContext: {
      requestId,
      http: { method: 'GET', path: '/api/organizations' },
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
  };
}

let apiHandler: typeof import('#shared/http/handler.ts').apiHandler;
let ok: typeof import('#shared/http/responses.ts').ok;

// The logger takes its level from the environment when the module loads (as in Lambda), so load a fresh copy at INFO.
beforeAll(async () => {
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
  vi.resetModules();
  ({ apiHandler } = await import('#shared/http/handler.ts'));
  ({ ok } = await import('#shared/http/responses.ts'));
});

describe('handler factory', () => {
  let lines: string[];
  beforeEach(() => {
    lines = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: any) => {
      lines.push(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: any) => {
      lines.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('maps an unexpected error to a generic 500 and logs it with the request context', async () => {
    const { key } = await newKey();
    const handler = apiHandler(route, {}, async () => {
      throw new Error('database password is hunter2');
    });
    const res = await handler(event(key), lambdaContext('test_op'));
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body!)).toEqual({
      type: 'server_error',
      code: 'error',
      detail: 'A server error occurred.',
      attr: null,
    });
    const logged = lines.join('');
    expect(logged).toContain('hunter2');
    const errorLine = jsonLines(lines).find((l) => l.message === 'unhandled error');
    expect(errorLine).toMatchObject({ level: 'ERROR', operation_id: 'test_op', request_id: 'req-123' });
    expect(errorLine.user_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs one JSON line per request with request id, route and user id, and never the key', async () => {
    const { key } = await newKey();
    const handler = apiHandler(route, {}, async ({ caller }) => ok({ user: caller.user.id }));
    const res = await handler(event(key, 'req-456'), lambdaContext('test_op'));
    expect(res.statusCode).toBe(200);
    const entries = jsonLines(lines);
    const done = entries.find((l) => l.message === 'request completed');
    expect(done).toMatchObject({
      status: 200,
      operation_id: 'test_op',
      request_id: 'req-456',
      route: 'GET /api/organizations',
      user_id: JSON.parse(res.body!).user,
    });
    expect(lines.join('')).not.toContain(key);
    expect(lines.join('')).not.toContain(key.slice(4));
  });

  it('does not carry one request’s user into the next request’s logs', async () => {
    const { key } = await newKey();
    const handler = apiHandler(route, {}, async () => ok({}));
    await handler(event(key), lambdaContext('test_op'));
    lines.length = 0;
    const res = await handler(event(undefined, 'req-anon'), lambdaContext('test_op'));
    expect(res.statusCode).toBe(401);
    const done = jsonLines(lines).find((l) => l.message === 'request completed');
    expect(done).toMatchObject({ status: 401, request_id: 'req-anon' });
    expect(done.user_id).toBeUndefined();
  });
});
