import type middy from '@middy/core';
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type * as v from 'valibot';
import type { Scope } from '../../auth/scopes.ts';
import type { KeyRateLimitClass } from '../../config.ts';
import type { RateLimitVerdict } from '../../db/rate-limits.ts';
import type { Caller } from '../../domain/access.ts';
import type { MembershipRecord } from '../../db/organizations.ts';
import type { HttpResponse } from '../responses.ts';

/**
 * The types the API pipeline's middlewares share (docs/http-pipeline.md): the route they serve, the
 * state they hand each other on middy's `request.internal`, and what the handler finally receives.
 */

export interface PublicRouteInfo {
  operationId: string;
  method: string;
  path: string;
}

export interface RouteInfo extends PublicRouteInfo {
  scope: Scope;
  /** Other scopes that grant the operation too. */
  alsoAccepts?: readonly Scope[];
  /** Accepts `format=json|csv`. */
  csv?: boolean;
  /** The body may be a JSON list (./json-body.ts). */
  listBody?: boolean;
  /** Rate-limit class of the personal key's requests (./rate-limit.ts); `crud` when absent. */
  rateLimit?: KeyRateLimitClass;
}

export type AnySchema = v.GenericSchema<unknown, unknown>;

export interface Schemas {
  params?: AnySchema;
  query?: AnySchema;
  body?: AnySchema;
}

export type HttpEvent = APIGatewayProxyEventV2;

/** The tenant the path names, as the tenancy middleware resolved it (shared/http/tenancy.ts says which kind a path is). */
export type Tenant =
  | { kind: 'organization'; membership: MembershipRecord; organizationId: string }
  | { kind: 'project'; membership: MembershipRecord; projectId: number }
  | { kind: 'none' };

export type ResponseFormat = 'json' | 'csv';

/** The request's input, checked against the route's schemas (valibot outputs; typed per route by the factory). */
export interface ValidatedInput {
  format: ResponseFormat;
  params: unknown;
  query: unknown;
  body: unknown;
}

/**
 * What the middlewares tell each other, on middy's `request.internal` (a fresh object per invocation).
 * Each field has exactly one writer, named here; a later middleware reads it with `established()`.
 * A type alias, not an interface: middy's `TInternal` must be assignable to `Record<string, unknown>`.
 */
export type PipelineState = {
  /** completion: `performance.now()` when the request started. */
  startedAt?: number;
  /** jsonBody: the parsed JSON object (`{}` for an empty body); only on routes with a body schema. */
  body?: unknown;
  /** authentication: the key's owner and the key. */
  caller?: Caller;
  /** countRequest: this request's count against the key's limits, still pending while the tenant is resolved. */
  rateLimit?: Promise<RateLimitVerdict>;
  /** enforceRateLimit: X-RateLimit-* sent with whatever the response turns out to be (completion adds them). */
  rateLimitHeaders?: Record<string, string>;
  /** authentication: the tenant's lookups, started once the key was found (the tenancy middleware awaits them). */
  tenantLookup?: Promise<Tenant>;
  /** tenancy */
  tenant?: Tenant;
  /** validation */
  input?: ValidatedInput;
};

export type PipelineRequest = middy.Request<HttpEvent, HttpResponse, Error, Context, PipelineState>;
export type Middleware = MiddlewareObj<HttpEvent, HttpResponse, Error, Context, PipelineState>;

/**
 * A field an earlier middleware must have set. Missing means the pipeline is composed in the wrong
 * order: a programming error (500), never the client's.
 */
export function established<K extends keyof PipelineState>(
  request: PipelineRequest,
  field: K,
  writer: string,
): NonNullable<PipelineState[K]> {
  const value = request.internal[field];
  if (value === undefined || value === null)
    throw new Error(`pipeline order: '${field}' is set by the ${writer} middleware, which must run before this one`);
  return value;
}

/** Everything the pipeline established for the handler, complete. */
export interface Established {
  caller: Caller;
  tenant: Tenant;
  input: ValidatedInput;
}

/**
 * The handler's context. middy calls the handler with `(event, context)` only, never the request, so
 * the last middleware (handoff) puts what the pipeline established on the context, the way middy's
 * own middlewares hand values to a handler (`setToContext`). Optional: the runtime's context lacks it.
 */
export type HandlerContext = Context & { pipeline?: Established };
