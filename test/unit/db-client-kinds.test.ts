import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '#shared/aws/dynamodb.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { workers } from '#functions/routes.ts';
import { DYNAMODB_TIMEOUTS } from '#shared/config.ts';
import { lambdaContext } from '../../infra/local/lambda-context.ts';

/**
 * API requests and workers share one Node process in the local runtime: each invocation must get its
 * own DynamoDB limits. A stand-in DynamoDB answers every call with a retryable 500 after a short
 * delay, so the two invocations below overlap; it counts the attempts each makes (by the key asked for).
 */
let server: Server;
const attempts = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const pk = (JSON.parse(body) as { Key: { pk: { S: string } } }).Key.pk.S;
      attempts.set(pk, (attempts.get(pk) ?? 0) + 1);
      setTimeout(() => {
        res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'InternalServerError' });
        res.end(
          JSON.stringify({
            __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
            message: 'stand-in failure',
          }),
        );
      }, 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  vi.resetModules(); // fresh clients, built against the stand-in
});

afterAll(async () => {
  vi.unstubAllEnvs();
  vi.resetModules();
  await new Promise((r) => server.close(r));
});

interface Seen {
  attempts: number;
  requestTimeout: number | undefined;
}

describe('DynamoDB client per invocation kind', () => {
  it('gives a worker invocation the worker limits and a concurrent API invocation the API limits', async () => {
    const { db } = await import('#shared/db/client.ts');
    const { workerHandler } = await import('#shared/workers/handler.ts');
    const { publicHandler } = await import('#shared/http/handler.ts');
    const { ok } = await import('#shared/http/responses.ts');

    // One failing GetItem, then what the client used: attempts seen by the stand-in, its request timeout.
    const probe = async (pk: string): Promise<Seen> => {
      const client = db();
      const error = await client
        .send(new GetCommand({ TableName: 't', Key: { pk, sk: 'x' } }))
        .catch((e: unknown) => e);
      expect((error as Error).name).toBe('InternalServerError');
      const handler = client.config.requestHandler as unknown as { httpHandlerConfigs(): { requestTimeout?: number } };
      return { attempts: attempts.get(pk)!, requestTimeout: handler.httpHandlerConfigs().requestTimeout };
    };

    const worker = workerHandler('probe', () => probe('worker'));
    const api = publicHandler({ operationId: 'probe', method: 'GET', path: '/probe' }, async () =>
      ok(await probe('api')),
    );
    const event = {
      version: '2.0',
      routeKey: 'GET /probe',
      rawPath: '/probe',
      rawQueryString: '',
      headers: { host: '127.0.0.1:1' },
      requestContext: { requestId: 'r', http: { method: 'GET', path: '/probe' } },
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;

    const [fromWorker, response] = await Promise.all([
      worker({}, lambdaContext('probe', 60_000)),
      api(event, lambdaContext('probe', 10_000)),
    ]);
    const fromApi = JSON.parse(response.body!) as Seen;

    expect(fromWorker).toEqual({
      attempts: DYNAMODB_TIMEOUTS.worker.maxAttempts,
      requestTimeout: DYNAMODB_TIMEOUTS.worker.requestTimeoutMs,
    });
    expect(fromApi).toEqual({
      attempts: DYNAMODB_TIMEOUTS.api.maxAttempts,
      requestTimeout: DYNAMODB_TIMEOUTS.api.requestTimeoutMs,
    });
  }, 20_000);
});

describe('DYNAMODB_TIMEOUTS', () => {
  // Worst case of one table call: each attempt but the last either runs into the request timeout (its
  // timer starts with the request, so it covers connecting too) and the SDK waits at most 50 ms x 2^n
  // before retry n, or is throttled (an answer at once) and the SDK waits at most 1 s x 2^n
  // (@smithy/core's retry: its transient and throttling delay bases); the last runs into the timeout.
  const worstMs = (t: (typeof DYNAMODB_TIMEOUTS)['api']) =>
    t.requestTimeoutMs +
    Array.from({ length: t.maxAttempts - 1 }, (_, n) =>
      Math.max(t.requestTimeoutMs + 50 * 2 ** n, 1_000 * 2 ** n),
    ).reduce((a, b) => a + b, 0);

  it('keeps API calls within the API functions 10 s timeout, and gives workers longer, more patient calls', () => {
    expect(worstMs(DYNAMODB_TIMEOUTS.api)).toBeLessThan(10_000);
    expect(DYNAMODB_TIMEOUTS.worker.requestTimeoutMs).toBeGreaterThan(DYNAMODB_TIMEOUTS.api.requestTimeoutMs);
    expect(DYNAMODB_TIMEOUTS.worker.maxAttempts).toBeGreaterThan(DYNAMODB_TIMEOUTS.api.maxAttempts);
    for (const w of workers)
      expect(worstMs(DYNAMODB_TIMEOUTS.worker), w.name).toBeLessThan((w.timeoutSeconds * 1000) / 4);
  });
});
