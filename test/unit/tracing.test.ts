import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lambdaContext } from '../../infra/local/lambda-context.ts';

/**
 * Tracing as it runs in Lambda: the environment Lambda gives a function with active tracing (its
 * execution environment, a sampled trace header, the X-Ray daemon's address), with a UDP listener as
 * the daemon and a stand-in DynamoDB. What the daemon receives is what an operator opens in X-Ray.
 * Set before anything loads the tracer (it reads the environment once).
 */
const DAEMON_PORT = vi.hoisted(() => {
  const port = 40_000 + Math.floor(Math.random() * 20_000);
  Object.assign(process.env, {
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
    LAMBDA_TASK_ROOT: '/var/task',
    _HANDLER: 'index.handler',
    _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
    AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${port}`,
    AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
    POWERTOOLS_TRACE_ENABLED: 'true',
  });
  return port;
});

interface Document {
  id: string;
  /** Set on a subsegment sent on its own (Lambda streams each as it closes). */
  parent_id?: string;
  name: string;
  annotations?: Record<string, unknown>;
  subsegments?: Document[];
  aws?: { operation?: string };
  namespace?: string;
}
const documents: Document[] = [];
let daemon: Socket;
let table: Server;

beforeAll(async () => {
  daemon = createSocket('udp4');
  daemon.on('message', (m) => {
    // `{"format":"json","version":1}\n{...the (sub)segment...}`
    const [, body] = m.toString('utf8').split('\n');
    if (body) documents.push(JSON.parse(body) as Document);
  });
  await new Promise<void>((r) => daemon.bind(DAEMON_PORT, '127.0.0.1', r));
  table = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => table.listen(0, '127.0.0.1', r));
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', `http://127.0.0.1:${(table.address() as AddressInfo).port}`);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  daemon.close();
  await new Promise((r) => table.close(r));
});

/** Every (sub)segment the daemon received, flattened. */
const flat = (docs: Document[]): Document[] => docs.flatMap((d) => [d, ...flat(d.subsegments ?? [])]);

/** The subsegments under `root`, whether sent inside it or on their own with a parent_id. */
function under(root: Document): Document[] {
  const all = flat(documents);
  const ids = new Set([root.id]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const d of all) {
      const inside = (d.parent_id && ids.has(d.parent_id)) || flat(root.subsegments ?? []).some((s) => s.id === d.id);
      if (inside && !ids.has(d.id)) {
        ids.add(d.id);
        grew = true;
      }
    }
  }
  return [...new Map(all.filter((d) => d.id !== root.id && ids.has(d.id)).map((d) => [d.id, d])).values()];
}

describe('X-Ray tracing', () => {
  it("annotates each handler's segment with its route and records its DynamoDB calls inside it", async () => {
    const { GetCommand } = await import('#shared/aws/dynamodb.ts');
    const { db } = await import('#shared/db/client.ts');
    const { publicHandler } = await import('#shared/http/handler.ts');
    const { workerHandler } = await import('#shared/workers/handler.ts');
    const { ok } = await import('#shared/http/responses.ts');
    const { tracer } = await import('#shared/observability.ts');
    expect(tracer.isTracingEnabled()).toBe(true);

    const read = () => db().send(new GetCommand({ TableName: 't', Key: { pk: 'a', sk: 'b' } }));
    const api = publicHandler({ operationId: 'probe_route', method: 'GET', path: '/probe' }, async () => {
      await read();
      return ok({});
    });
    const event = {
      version: '2.0',
      routeKey: 'GET /probe',
      rawPath: '/probe',
      rawQueryString: '',
      headers: { host: '127.0.0.1:1' },
      requestContext: { requestId: 'r', http: { method: 'GET', path: '/probe' } },
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    expect((await api(event, lambdaContext('probe_route'))).statusCode).toBe(200);
    const worker = workerHandler('probe_worker', async () => {
      await read();
    });
    await worker({}, lambdaContext('probe_worker'));

    const handlers = await vi.waitFor(() => {
      const found = [
        ...new Map(
          flat(documents)
            .filter((d) => d.name === '## index.handler')
            .map((d) => [d.id, d]),
        ).values(),
      ];
      expect(found).toHaveLength(2);
      return found;
    });
    expect(handlers.map((h) => h.annotations?.route)).toEqual(['probe_route', 'probe_worker']);
    for (const h of handlers) expect(h.annotations).toHaveProperty('ColdStart');
    for (const h of handlers) {
      await vi.waitFor(() =>
        expect(
          under(h)
            .filter((d) => d.namespace === 'aws')
            .map((c) => [c.name, c.aws?.operation]),
        ).toEqual([['DynamoDB', 'GetItem']]),
      );
    }
  });
});
