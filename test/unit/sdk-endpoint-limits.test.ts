import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { DynamoDBDocumentClient, type GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handler as decide } from '#functions/sdk/decide.ts';
import { handler as flags } from '#functions/sdk/flags.ts';
import { handler as remoteConfig } from '#functions/sdk/remote-config.ts';
import { handler as remoteConfigJs } from '#functions/sdk/remote-config-js.ts';
import { forgetTokenLookups } from '#shared/domain/project-tokens.ts';

const MIB = 1024 * 1024;
const context = { getRemainingTimeInMillis: () => 10_000 } as Context;

type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

function request(
  method: string,
  path: string,
  init: { body?: string | Buffer; query?: string; headers?: Record<string, string>; token?: string } = {},
): APIGatewayProxyEventV2 {
  const binary = Buffer.isBuffer(init.body);
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: init.query ?? '',
    queryStringParameters: init.query ? Object.fromEntries(new URLSearchParams(init.query)) : undefined,
    pathParameters: init.token ? { token: init.token } : undefined,
    headers: { host: '127.0.0.1:1', ...init.headers },
    requestContext: { requestId: 'req-1', http: { method, path } } as APIGatewayProxyEventV2['requestContext'],
    body: init.body === undefined ? undefined : binary ? (init.body as Buffer).toString('base64') : String(init.body),
    isBase64Encoded: binary,
  };
}

async function call(handler: Handler, event: APIGatewayProxyEventV2) {
  const res = await handler(event, context);
  return { status: res.statusCode, body: JSON.parse(String(res.body)) };
}

const bigJson = (token: string) =>
  JSON.stringify({ token, distinct_id: 'd', person_properties: { x: 'y'.repeat(2 * MIB) } });

describe('SDK endpoints: body size and token before any work', () => {
  const table = mockClient(DynamoDBDocumentClient);
  beforeEach(() => {
    forgetTokenLookups();
    table.resolves({ Item: undefined });
  });
  afterEach(() => table.reset());

  it('refuses a 2 MiB body with 413 in PostHog shape, before decoding it or reading the table', async () => {
    for (const [handler, path] of [
      [flags, '/flags'],
      [decide, '/decide'],
    ] as const) {
      const plain = await call(handler, request('POST', path, { body: bigJson('phc_any'), query: 'v=2' }));
      expect(plain).toEqual({
        status: 413,
        body: {
          type: 'invalid_request',
          code: 'payload_too_large',
          detail: `Request body exceeds ${MIB} bytes.`,
          attr: null,
        },
      });
      // Small on the wire, over 1 MiB once inflated: refused while inflating, never parsed.
      const bomb = await call(handler, request('POST', path, { body: gzipSync(bigJson('phc_any')), query: 'v=2' }));
      expect(bomb.status).toBe(413);
      expect(bomb.body.detail).toMatch(/inflates beyond 1048576 bytes \(1 MiB\)/);
    }
    for (const [handler, path] of [
      [remoteConfig, '/array/phc_any/config'],
      [remoteConfigJs, '/array/phc_any/config.js'],
    ] as const) {
      const res = await call(handler, request('GET', path, { body: Buffer.alloc(2 * MIB), token: 'phc_any' }));
      expect(res.status).toBe(413);
    }
    expect(table.calls()).toHaveLength(0);
  });

  it('reads an unknown token once however often it is sent, on every SDK route of the container', async () => {
    const body = JSON.stringify({ token: 'phc_nobody', distinct_id: 'd' });
    for (let i = 0; i < 20; i += 1) {
      expect((await call(flags, request('POST', '/flags', { body, query: 'v=2' }))).status).toBe(401);
      expect((await call(decide, request('POST', '/decide', { body, query: 'v=3' }))).status).toBe(401);
      expect(
        (await call(remoteConfig, request('GET', '/array/phc_nobody/config', { token: 'phc_nobody' }))).status,
      ).toBe(404);
    }
    expect(table.calls()).toHaveLength(1);
    expect((table.call(0).args[0] as GetCommand).input.Key).toEqual({ pk: 'TOKEN#phc_nobody', sk: 'TOKEN' });
  });
});
