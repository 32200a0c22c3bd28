import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Context } from 'aws-lambda';
import type * as v from 'valibot';
import type { Caller } from '../domain/access.ts';
import type { MembershipRecord } from '../db/organizations.ts';
import { PayloadTooLarge } from '../errors.ts';
import { logger, metrics, tracedHandler } from '../observability.ts';
import { authentication } from './middleware/authentication.ts';
import { completion } from './middleware/completion.ts';
import { cors } from './middleware/cors.ts';
import { handedOff, handoff } from './middleware/handoff.ts';
import { jsonBody, jsonListBody, MAX_BODY_BYTES } from './middleware/json-body.ts';
import type {
  AnySchema,
  HandlerContext,
  HttpEvent,
  PipelineState,
  PublicRouteInfo,
  RouteInfo,
  Schemas,
} from './middleware/pipeline.ts';
import { preload } from './middleware/preload.ts';
import { countRequest, enforceRateLimit } from './middleware/rate-limit.ts';
import { scope } from './middleware/scope.ts';
import { tenancy, tenantResolver } from './middleware/tenancy.ts';
import { validation } from './middleware/validation.ts';
import { httpResponse, publicBaseUrl, queryParameters, type HttpResponse, type Reply } from './responses.ts';
import type { TenancyKind } from './tenancy.ts';

export type { PublicRouteInfo, RouteInfo, Schemas } from './middleware/pipeline.ts';

type Out<S> = S extends AnySchema ? v.InferOutput<S> : undefined;

/** What the path's tenant adds to a handler's request: project routes a project, organization routes an organization. */
type TenantFields<R extends PublicRouteInfo> = {
  organization: { membership: MembershipRecord; organizationId: string };
  project: { membership: MembershipRecord; projectId: number };
  'organization-collection': unknown;
  user: unknown;
}[TenancyKind<R['path']>];

/**
 * What a handler receives, typed by its route row: `projectId` exists only on project routes and
 * `organizationId` only on organization routes (both with the caller's `membership` of it).
 */
export type ApiRequest<R extends RouteInfo, S extends Schemas> = {
  params: Out<S['params']>;
  query: Out<S['query']>;
  body: Out<S['body']>;
  caller: Caller;
  /** Absolute URL of this request as the client sent it (for pagination links). */
  url: URL;
  /** When the handler must have answered (epoch ms): the invocation's remaining time less a margin. Retries stop there. */
  deadline: number;
} & TenantFields<R>;

/** Time kept back from the invocation's remaining time for the last attempt and the reply. */
const ANSWER_MARGIN_MS = 2_000;

function answerBy(context: Context | undefined): number {
  const remaining =
    typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : 10_000;
  return Date.now() + Math.max(1_000, remaining - ANSWER_MARGIN_MS);
}

const requestUrl = (event: HttpEvent) =>
  new URL(`${publicBaseUrl(event)}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`);

/**
 * The only way to build an API handler, and the one place its pipeline is composed (each middleware
 * in shared/http/middleware/, docs/http-pipeline.md): Powertools logger context and metrics ->
 * completion (log keys; on the way out: errors mapped, rate-limit headers, log line, metrics) -> JSON
 * body (routes with a body schema) -> authentication -> rate-limit count -> scope -> tenancy ->
 * rate-limit verdict -> lazily loaded libraries -> validation -> handoff -> the handler, which gets typed, validated input and returns a Reply.
 */
export function apiHandler<R extends RouteInfo, S extends Schemas>(
  route: R,
  schemas: S,
  fn: (request: ApiRequest<R, S>) => Promise<Reply>,
) {
  const respond = async (event: HttpEvent, context: HandlerContext): Promise<HttpResponse> => {
    const { caller, tenant, input } = handedOff(context);
    const { kind: _kind, ...tenantFields } = tenant;
    // The one cast: valibot's outputs and the tenant's fields, known here only as values, meet the route's
    // types. tenancyOf (which the tenancy middleware follows) and TenancyKind derive both from the same prefixes.
    const request = {
      params: input.params,
      query: input.query,
      body: input.body,
      caller,
      ...tenantFields,
      url: requestUrl(event),
      deadline: answerBy(context),
    } as ApiRequest<R, S>;
    return httpResponse(await fn(request), input.format);
  };
  const middyHandler = middy<HttpEvent, HttpResponse, Error, Context, PipelineState>()
    // First, so the handler's trace segment, named by its route, holds every call the pipeline makes.
    .use(tracedHandler(route.operationId))
    // Outermost of the rest, so the request's log keys are still set when errors are mapped and the request is logged.
    .use(injectLambdaContext(logger, { resetKeys: true }))
    // Flushes the metrics once per invocation, after completion recorded the request's.
    .use(logMetrics(metrics))
    .use([
      completion(route),
      ...(schemas.body ? [route.listBody ? jsonListBody : jsonBody] : []),
      authentication(undefined, tenantResolver(route)),
      countRequest(route),
      scope(route),
      tenancy(route),
      enforceRateLimit,
      preload,
      validation(route, schemas),
      handoff,
    ])
    .handler(respond);
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
  /** When the handler must have answered (epoch ms), as ApiRequest.deadline. */
  deadline: number;
}

export interface PublicHandlerOptions {
  /**
   * `origin` (default): the caller's origin mirrored with credentials, like capture (beacons send
   * cookies). `any`: `Access-Control-Allow-Origin: *`, for cacheable answers that are the same for every site.
   */
  cors?: 'origin' | 'any';
  /**
   * The largest body the route takes (default 1 MiB, as every JSON route): anything larger is a 413
   * before the body is decoded or the handler runs. Capture takes PostHog's 20 MiB.
   */
  maxBodyBytes?: number;
}

/** The body's size in bytes without decoding it (API Gateway hands binary bodies over as base64). */
function bodyBytes(event: HttpEvent): number {
  const body = event.body ?? '';
  if (!event.isBase64Encoded) return Buffer.byteLength(body);
  const padding = body.endsWith('==') ? 2 : body.endsWith('=') ? 1 : 0;
  return Math.floor((body.length * 3) / 4) - padding;
}

/**
 * The factory for public endpoints authenticated by a token inside the payload (capture): logger
 * context -> CORS -> completion -> lazily loaded libraries -> body size -> handler, with no JSON parser and no personal-key auth.
 */
export function publicHandler(
  route: PublicRouteInfo,
  fn: (request: PublicRequest) => Promise<Reply>,
  options: PublicHandlerOptions = {},
) {
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const respond = async (event: HttpEvent, context: Context): Promise<HttpResponse> => {
    if (bodyBytes(event) > maxBodyBytes) throw new PayloadTooLarge(`Request body exceeds ${maxBodyBytes} bytes.`);
    return httpResponse(
      await fn({
        params: event.pathParameters ?? {},
        body: Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8'),
        headers: event.headers ?? {},
        query: queryParameters(event),
        url: requestUrl(event),
        deadline: answerBy(context),
      }),
    );
  };
  const middyHandler = middy<HttpEvent, HttpResponse, Error, Context, PipelineState>()
    .use(tracedHandler(route.operationId))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    // Used before completion, so it runs after it on the way out (middy unwinds in reverse): error responses carry CORS too.
    .use(cors(options.cors ?? 'origin'))
    .use(completion(route))
    .use(preload)
    .handler(respond);
  // No valibot schemas: the raw request goes to the domain. Attached for the OpenAPI generator all the same.
  return Object.assign(middyHandler, { route, schemas: {} as Schemas });
}
