import middy, { type MiddlewareObj } from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type * as v from 'valibot';
import type { Scope } from '../auth/scopes.ts';
import { extractPersonalApiKey } from '../auth/api-keys.ts';
import {
  authenticate,
  organizationMembership,
  projectAccess,
  requireOrganizationLevelKey,
  requireScope,
  type Caller,
} from '../domain/access.ts';
import type { MembershipRecord } from '../db/organizations.ts';
import { ParseError, PayloadTooLarge, Throttled, UnsupportedMediaType, ValidationError } from '../errors.ts';
import { flatCsv, omissionNote, rowsOf } from '../csv.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../json.ts';
import { logger, METRIC, metrics, MetricUnit } from '../observability.ts';
import { captureCorsHeaders, PUBLIC_ASSET_CORS_HEADERS } from './cors.ts';
import { errorResponse } from './errors.ts';
import { limitKey, type KeyRateLimitClass } from './rate-limit.ts';
import { jsonResponse, publicBaseUrl, queryParameters, type HttpResponse, type Reply } from './responses.ts';
import { tenancyOf } from './tenancy.ts';
import { parseWith } from './validation.ts';

type AnySchema = v.GenericSchema<unknown, unknown>;
type Out<S> = S extends AnySchema ? v.InferOutput<S> : undefined;

export interface PublicRouteInfo {
  operationId: string;
  method: string;
  path: string;
}

export interface RouteInfo extends PublicRouteInfo {
  scope: Scope;
  /** Accepts `format=json|csv`. */
  csv?: boolean;
  /** Rate-limit class of the personal key's requests (shared/http/rate-limit.ts); `crud` when absent. */
  rateLimit?: KeyRateLimitClass;
}

export interface Schemas {
  params?: AnySchema;
  query?: AnySchema;
  body?: AnySchema;
}

export interface ApiRequest<S extends Schemas> {
  params: Out<S['params']>;
  query: Out<S['query']>;
  body: Out<S['body']>;
  caller: Caller;
  /** The caller's membership of the organization the path names, directly or through its project. */
  membership: MembershipRecord;
  /** The project the path names (project routes only). */
  projectId: number;
  /** Absolute URL of this request as the client sent it (for pagination links). */
  url: URL;
  /** When the handler must have answered (epoch ms): the invocation's remaining time less a margin. Retries stop there. */
  deadline: number;
}

export const MAX_BODY_BYTES = 1024 * 1024;

/** Time kept back from the invocation's remaining time for the last attempt and the reply. */
const ANSWER_MARGIN_MS = 2_000;

function answerBy(context: Context | undefined): number {
  const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : 10_000;
  return Date.now() + Math.max(1_000, remaining - ANSWER_MARGIN_MS);
}

interface State {
  rawQuery: Record<string, string>;
  body?: unknown;
  caller?: Caller;
  membership?: MembershipRecord;
  projectId?: number;
  startedAt: number;
  /** X-RateLimit-* of this request's key, sent with whatever the response turns out to be. */
  rateLimitHeaders?: Record<string, string>;
}

type Request = middy.Request<APIGatewayProxyEventV2, HttpResponse, Error, Context>;
type Middleware = MiddlewareObj<APIGatewayProxyEventV2, HttpResponse, Error, Context>;

/** Per-invocation state, keyed by the event object (middy passes the handler only event and context). */
const states = new WeakMap<APIGatewayProxyEventV2, State>();
const stateOf = (event: APIGatewayProxyEventV2): State => {
  let s = states.get(event);
  if (!s) {
    s = { rawQuery: queryParameters(event), startedAt: performance.now() };
    states.set(event, s);
  }
  return s;
};
const state = (request: Request): State => stateOf(request.event);

function responseFormat(raw: string | undefined): 'json' | 'csv' {
  if (raw === undefined || raw === 'json' || raw === 'csv') return raw ?? 'json';
  throw new ValidationError(`"${raw}" is not a valid choice.`, 'format', 'invalid_choice');
}

const errorMapping = (route: PublicRouteInfo): Middleware => ({
  before: (request) => {
    stateOf(request.event);
  },
  after: (request) => complete(route, request),
  onError: (request) => {
    request.response = errorResponse(request.error);
    complete(route, request);
  },
});

/**
 * Every API request ends here, success or error: rate-limit headers on the response, one log line,
 * and the request metrics (flushed by `logMetrics`, outside this middleware): RequestCount,
 * RequestLatency, ServerErrors and ClientErrors (0 or 1 each, so their average is the error rate) and,
 * for a 429 of the rate limiter, Throttled; all with dimension `operation` = the operationId.
 */
function complete(route: PublicRouteInfo, request: Request): void {
  const s = state(request);
  const response = request.response;
  if (response && s.rateLimitHeaders) response.headers = { ...response.headers, ...s.rateLimitHeaders };
  const status = response?.statusCode ?? 500;
  const elapsedMs = performance.now() - s.startedAt;
  logger.info('request completed', { status: response?.statusCode, duration_ms: Math.round(elapsedMs * 10) / 10 });
  metrics.addDimension('operation', route.operationId);
  metrics.addMetric(METRIC.requestCount, MetricUnit.Count, 1);
  metrics.addMetric(METRIC.requestLatency, MetricUnit.Milliseconds, Math.round(elapsedMs * 100) / 100);
  metrics.addMetric(METRIC.serverErrors, MetricUnit.Count, status >= 500 ? 1 : 0);
  metrics.addMetric(METRIC.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0);
  if (request.error instanceof Throttled) metrics.addMetric(METRIC.throttled, MetricUnit.Count, 1);
}

const requestLogKeys = (route: PublicRouteInfo): Middleware => ({
  before: (request) => {
    logger.appendKeys({
      operation_id: route.operationId,
      route: `${route.method} ${route.path}`,
      request_id: request.event.requestContext?.requestId,
    });
  },
});

/** JSON bodies only, at most 1 MiB, and a JSON object when present. */
const jsonBody = (expectsBody: boolean): Middleware => ({
  before: (request) => {
    if (!expectsBody) return;
    const { event } = request;
    const raw = event.body ? (event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body) : '';
    if (Buffer.byteLength(raw) > MAX_BODY_BYTES) throw new PayloadTooLarge(`Request body exceeds ${MAX_BODY_BYTES} bytes.`);
    if (raw.trim() === '') {
      state(request).body = {};
      return;
    }
    const contentType = (event.headers?.['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json' && !contentType.endsWith('+json')) throw new UnsupportedMediaType(contentType);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (error) {
      throw new ParseError(`JSON parse error - ${(error as Error).message}`);
    }
    if (parsed !== null && typeof parsed === 'object' && nestedDeeperThan(parsed)) throw new ParseError(`JSON parse error - nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      const got = Array.isArray(parsed) ? 'list' : parsed === null ? 'null' : typeof parsed;
      throw new ValidationError(`Invalid data. Expected a dictionary, but got ${got}.`, null);
    }
    state(request).body = parsed;
  },
});

/**
 * Key -> caller -> (rate limit, concurrently with) scope -> tenant. Order matters: 401 before 429
 * before 403 before 404. The key's request is counted as soon as it authenticates; the count runs
 * beside the scope and tenant checks so it costs no extra round trip, and a 429 wins over their refusals.
 */
const authorization = (route: RouteInfo): Middleware => ({
  before: async (request) => {
    const s = state(request);
    const found = extractPersonalApiKey(request.event.headers?.authorization, s.rawQuery.personal_api_key);
    const caller = await authenticate(found?.key, found?.source);
    logger.appendKeys({ user_id: caller.user.id });
    const limited = limitKey(caller, route.rateLimit);
    const access = await authorizeCaller(route, request, caller).then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const { headers, throttled } = await limited;
    s.rateLimitHeaders = headers;
    if (throttled) throw throttled;
    if (access) throw access.error;
    s.caller = caller;
  },
});

async function authorizeCaller(route: RouteInfo, request: Request, caller: Caller): Promise<void> {
  const s = state(request);
  requireScope(caller, route.scope);
  const tenancy = tenancyOf(route.path);
  if (tenancy.kind === 'organization' || tenancy.kind === 'organization-collection') requireOrganizationLevelKey(caller);
  if (tenancy.kind === 'organization') {
    const orgId = request.event.pathParameters?.[tenancy.param] ?? '';
    s.membership = await organizationMembership(caller, orgId);
    logger.appendKeys({ organization_id: s.membership.organization_id });
  }
  if (tenancy.kind === 'project') {
    const access = await projectAccess(caller, request.event.pathParameters?.[tenancy.param] ?? '');
    s.membership = access.membership;
    s.projectId = access.projectId;
    logger.appendKeys({ organization_id: access.membership.organization_id, project_id: access.projectId });
  }
}

/**
 * The only way to build an API handler: logger context -> metrics -> JSON body -> auth (with the
 * rate limit) -> validation -> handler -> error mapping. Handlers receive typed, validated input and return a Reply.
 */
export function apiHandler<S extends Schemas>(route: RouteInfo, schemas: S, fn: (request: ApiRequest<S>) => Promise<Reply>) {
  const core = async (event: APIGatewayProxyEventV2, context?: Context): Promise<HttpResponse> => {
    const s = stateOf(event);
    if (route.csv) responseFormat(s.rawQuery.format);
    const params = schemas.params ? parseWith(schemas.params, event.pathParameters ?? {}, null) : undefined;
    const query = schemas.query ? parseWith(schemas.query, s.rawQuery, null) : undefined;
    const body = schemas.body ? parseWith(schemas.body, s.body ?? {}, null) : undefined;
    const url = new URL(`${publicBaseUrl(event)}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`);
    const reply = await fn({
      params,
      query,
      body,
      caller: s.caller!,
      membership: s.membership!,
      projectId: s.projectId!,
      url,
      deadline: answerBy(context),
    } as ApiRequest<S>);
    if (route.csv && responseFormat(s.rawQuery.format) === 'csv' && reply.status !== 204) {
      const flat = reply.csv ? undefined : flatCsv(rowsOf(reply.body));
      const note = flat && omissionNote(flat);
      const headers = { 'Content-Type': 'text/csv; charset=utf-8', ...(note ? { 'X-CSV-Truncated': note } : {}), ...reply.headers };
      return { statusCode: reply.status, headers, body: flat ? flat.text : reply.csv!() };
    }
    return jsonResponse(reply.status, reply.status === 204 ? undefined : reply.body, reply.headers);
  };
  const middyHandler = middy<APIGatewayProxyEventV2, HttpResponse, Error, Context>()
    // Outermost, so the request's log keys are still set when errors are mapped and the request is logged.
    .use(injectLambdaContext(logger, { resetKeys: true }))
    // Flushes the metrics once per invocation, after the error mapping recorded the request's.
    .use(logMetrics(metrics))
    .use(errorMapping(route))
    .use(requestLogKeys(route))
    .use(jsonBody(schemas.body !== undefined))
    .use(authorization(route))
    .handler(core);
  // The route and schemas travel with the handler: the OpenAPI generator (infra/cli/openapi.ts) reads them.
  return Object.assign(middyHandler, { route, schemas });
}

/** What a public (project-token) handler gets: the raw request, undecoded; the domain decides the format. */
export interface PublicRequest {
  /** Path parameters (`:token`, `:file`), as the router or API Gateway decoded them. */
  params: Record<string, string | undefined>;
  body: Buffer;
  headers: Record<string, string | undefined>;
  query: Record<string, string>;
  url: URL;
}

export interface PublicHandlerOptions {
  /**
   * `origin` (default): the caller's origin mirrored with credentials, like capture (beacons send
   * cookies). `any`: `Access-Control-Allow-Origin: *`, for cacheable answers that are the same for every site.
   */
  cors?: 'origin' | 'any';
}

/**
 * The factory for public endpoints authenticated by a token inside the payload (capture): logger
 * context -> handler -> error mapping, with no JSON parser and no personal-key auth.
 */
export function publicHandler(route: PublicRouteInfo, fn: (request: PublicRequest) => Promise<Reply>, options: PublicHandlerOptions = {}) {
  const core = async (event: APIGatewayProxyEventV2): Promise<HttpResponse> => {
    const raw = event.body ?? '';
    const reply = await fn({
      params: event.pathParameters ?? {},
      body: Buffer.from(raw, event.isBase64Encoded ? 'base64' : 'utf8'),
      headers: event.headers ?? {},
      query: stateOf(event).rawQuery,
      url: new URL(`${publicBaseUrl(event)}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`),
    });
    if (reply.text) return { statusCode: reply.status, headers: { 'Content-Type': reply.text.contentType, ...reply.headers }, body: reply.text.body };
    return jsonResponse(reply.status, reply.status === 204 ? undefined : reply.body, reply.headers);
  };
  const corsHeaders = (origin: string | undefined) => (options.cors === 'any' ? PUBLIC_ASSET_CORS_HEADERS : captureCorsHeaders(origin));
  const cors = (request: Request) => {
    if (request.response) Object.assign(request.response.headers, corsHeaders(request.event.headers?.origin));
  };
  const middyHandler = middy<APIGatewayProxyEventV2, HttpResponse, Error, Context>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    // Runs after the error mapping (middy unwinds in reverse), so error responses carry CORS too.
    .use({ after: cors, onError: cors })
    .use(errorMapping(route))
    .use(requestLogKeys(route))
    .handler(core);
  // No valibot schemas: the raw request goes to the domain. Attached for the OpenAPI generator all the same.
  return Object.assign(middyHandler, { route, schemas: {} as Schemas });
}
