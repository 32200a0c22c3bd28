import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { API_TIMEOUT_SECONDS, fallbackHandler, routePaths, type Route } from '#functions/routes.ts';
import { bracedPath } from '#shared/http/path-template.ts';
import { normalizePath, resolveRoute } from '#shared/http/router.ts';
import { FunctionTimeout, invokeWithTimeout } from './lambda-context.ts';

export type LambdaHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

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
  const url = requestUrl(req);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const rawPath = normalizePath(url.pathname);
  const rawQueryString = url.search.slice(1);
  const queryStringParameters: Record<string, string> = {};
  for (const [k, v] of url.searchParams)
    queryStringParameters[k] = queryStringParameters[k] ? `${queryStringParameters[k]},${v}` : v;
  const method = (req.method ?? 'GET').toUpperCase();
  const routeKey = route ? `${route.method} ${bracedPath(route.path)}` : '$default';
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
      http: {
        method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
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

/** What API Gateway (HTTP API) answers when the Lambda behind a route fails or runs past its timeout. */
const FUNCTION_FAILED: APIGatewayProxyStructuredResultV2 = {
  statusCode: 500,
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ message: 'Internal Server Error' }),
};

/**
 * The request's URL with its target read as a path, as API Gateway reads it: `//` or `//x/y` is a
 * path, where `new URL('//', base)` reads a host and throws.
 */
function requestUrl(req: IncomingMessage): URL {
  const target = req.url ?? '/';
  return new URL(target.startsWith('/') ? `http://local${target}` : target, 'http://local');
}

interface DispatchOptions {
  routes: readonly Route[];
  timeoutMs: number;
  load: (file: string) => Promise<LambdaHandler>;
}

async function dispatch(req: IncomingMessage, res: ServerResponse, options: DispatchOptions): Promise<void> {
  const routeTable = options.routes;
  const method = (req.method ?? 'GET').toUpperCase();
  const path = requestUrl(req).pathname;
  const resolution = resolveRoute(routeTable, method, path);
  const body = await readBody(req);
  if (body === 'too-large') {
    send(res, {
      statusCode: 413,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        type: 'invalid_request',
        code: 'payload_too_large',
        detail: 'Request body is too large.',
        attr: null,
      }),
    });
    return;
  }
  const matched = resolution.kind === 'match' ? resolution : undefined;
  const event = toApiGatewayEvent(req, body, matched?.route, matched?.params);
  const file = matched ? matched.route.handler : fallbackHandler;
  const handler = await options.load(file);
  const functionName = matched?.route.operationId ?? 'fallback';
  try {
    send(res, await invokeWithTimeout(functionName, options.timeoutMs, (context) => handler(event, context)));
  } catch (error) {
    if (!(error instanceof FunctionTimeout)) throw error;
    console.error(`local server: ${functionName} ${error.message}`);
    send(res, FUNCTION_FAILED);
  }
}

export interface ApiServer {
  server: Server;
  baseUrl: string;
  close(): Promise<void>;
}

export interface ApiServerOptions {
  /** Port to listen on (0 = any free port). */
  port?: number;
  routes?: readonly Route[];
  /** The functions' timeout (API_TIMEOUT_SECONDS, as deployed). */
  timeoutMs?: number;
  /** How a handler module is loaded (tests of the runtime itself substitute their own). */
  loadHandler?: (file: string) => Promise<LambdaHandler>;
}

/** Serves the route table over HTTP on 127.0.0.1, each request in its function's timeout as Lambda runs it. */
export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const dispatchOptions: DispatchOptions = {
    routes: options.routes ?? routePaths,
    timeoutMs: options.timeoutMs ?? API_TIMEOUT_SECONDS * 1000,
    load: options.loadHandler ?? loadHandler,
  };
  const server = createServer((req, res) => {
    dispatch(req, res, dispatchOptions).catch((error: unknown) => {
      console.error('local server: unhandled error', error);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null }));
    });
  });
  // Idle keep-alive sockets outlive the client's (undici keeps them 4 s unless told more), so the client
  // is the one to close them. At 5 s, a process lagging a few seconds (the tests share it with the
  // server) ran the server's idle timer before reading a request already written to the socket: the
  // client saw ECONNRESET (18 in one fuzz run at load 15). 65 s, as load balancers advise their backends.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
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
