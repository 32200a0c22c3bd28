import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { fallbackHandler, routePaths, type Route } from '#functions/routes.ts';
import { normalizePath, resolveRoute } from '#shared/http/router.ts';
import { lambdaContext } from './lambda-context.ts';

type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

const MAX_REQUEST_BYTES = 25 * 1024 * 1024;
const TEXT_TYPES = /^(application\/(json|[\w.+-]+\+json|x-www-form-urlencoded|xml)|text\/)/i;

const modules = new Map<string, Promise<LambdaHandler>>();

/** The same module the route table names and CDK bundles: imported once, like a warm Lambda. */
function loadHandler(file: string): Promise<LambdaHandler> {
  let loaded = modules.get(file);
  if (!loaded) {
    const url = new URL(`../../functions/${file}.ts`, import.meta.url).href;
    loaded = import(/* @vite-ignore */ url).then((m: { handler: LambdaHandler }) => m.handler);
    modules.set(file, loaded);
  }
  return loaded;
}

async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** An HTTP request as API Gateway (HTTP API, payload v2) hands it to Lambda, after CloudFront removed a trailing slash. */
export function toApiGatewayEvent(
  req: IncomingMessage,
  body: Buffer,
  route: Route | undefined,
  pathParameters: Record<string, string> | undefined,
): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const rawPath = normalizePath(url.pathname);
  const rawQueryString = url.search.slice(1);
  const queryStringParameters: Record<string, string> = {};
  for (const [k, v] of url.searchParams) queryStringParameters[k] = queryStringParameters[k] ? `${queryStringParameters[k]},${v}` : v;
  const method = (req.method ?? 'GET').toUpperCase();
  const routeKey = route ? `${route.method} ${route.path.replace(/:([a-z_]+)/g, '{$1}')}` : '$default';
  // Text bodies arrive as strings, anything else base64-encoded. posthog-js labels gzip as text/plain,
  // so bytes that are not valid UTF-8 are treated as binary whatever their label.
  const textual = TEXT_TYPES.test(headers['content-type'] ?? '') && !headers['content-encoding'] && isUtf8(body);
  const now = new Date();
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString,
    cookies: headers.cookie?.split(';').map((c) => c.trim()),
    headers,
    queryStringParameters: rawQueryString ? queryStringParameters : undefined,
    pathParameters: pathParameters && Object.keys(pathParameters).length ? pathParameters : undefined,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: req.socket.remoteAddress ?? '127.0.0.1', userAgent: headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: body.length ? (textual ? body.toString('utf8') : body.toString('base64')) : undefined,
    isBase64Encoded: body.length > 0 && !textual,
  };
}

function send(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
  if (result.cookies?.length) headers['set-cookie'] = result.cookies;
  const body = result.body ? Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8') : undefined;
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}

async function dispatch(req: IncomingMessage, res: ServerResponse, routeTable: readonly Route[]): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  const path = new URL(req.url ?? '/', 'http://local').pathname;
  const resolution = resolveRoute(routeTable, method, path);
  const body = await readBody(req);
  if (body === 'too-large') {
    send(res, {
      statusCode: 413,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'invalid_request', code: 'payload_too_large', detail: 'Request body is too large.', attr: null }),
    });
    return;
  }
  const matched = resolution.kind === 'match' ? resolution : undefined;
  const event = toApiGatewayEvent(req, body, matched?.route, matched?.params);
  const file = matched ? matched.route.handler : fallbackHandler;
  const handler = await loadHandler(file);
  send(res, await handler(event, lambdaContext(matched?.route.operationId ?? 'fallback')));
}

export interface ApiServer {
  server: Server;
  baseUrl: string;
  close(): Promise<void>;
}

/** Serves the route table over HTTP on 127.0.0.1 (port 0 = any free port). */
export async function startApiServer(options: { port?: number; routes?: readonly Route[] } = {}): Promise<ApiServer> {
  const routeTable = options.routes ?? routePaths;
  const server = createServer((req, res) => {
    dispatch(req, res, routeTable).catch((error: unknown) => {
      console.error('local server: unhandled error', error);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null }));
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
