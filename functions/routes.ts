import type { Scope } from '#shared/auth/scopes.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

interface RouteBase {
  operationId: string;
  method: HttpMethod;
  /** PostHog-style path with `:param` segments, no trailing slash (both forms are served). */
  path: string;
  /** Further paths served by the same operation (capture answers on several). */
  aliases?: readonly string[];
  /** Handler module under functions/, without extension; it exports `handler`. */
  handler: string;
  /** What the function may do to the table: `read` gets read-only IAM, `write` read/write. */
  access: 'read' | 'write';
  summary: string;
}

/** Authenticated by a personal API key carrying `scope`. */
export interface KeyRoute extends RouteBase {
  auth?: 'personal_api_key';
  scope: Scope;
}

/** Public, authenticated by a project token in the payload (capture). */
export interface TokenRoute extends RouteBase {
  auth: 'project_token';
  scope?: undefined;
}

/**
 * One row per API operation. CDK (one Lambda + one API route per path), the local HTTP server, the
 * OpenAPI document and the scope/tenant test matrices are all generated from this table.
 */
export type Route = KeyRoute | TokenRoute;

export const routes = [
  {
    operationId: 'organizations_list',
    method: 'GET',
    path: '/api/organizations',
    scope: 'organization:read',
    handler: 'organizations/list',
    access: 'read',
    summary: "List the caller's organizations",
  },
  {
    operationId: 'organizations_create',
    method: 'POST',
    path: '/api/organizations',
    scope: 'organization:write',
    handler: 'organizations/create',
    access: 'write',
    summary: 'Create an organization with a default project; the caller becomes its owner',
  },
  {
    operationId: 'organizations_retrieve',
    method: 'GET',
    path: '/api/organizations/:id',
    scope: 'organization:read',
    handler: 'organizations/retrieve',
    access: 'read',
    summary: 'Retrieve an organization',
  },
  {
    operationId: 'organizations_partial_update',
    method: 'PATCH',
    path: '/api/organizations/:id',
    scope: 'organization:write',
    handler: 'organizations/update',
    access: 'write',
    summary: 'Update an organization (admins and owners)',
  },
  {
    operationId: 'organizations_destroy',
    method: 'DELETE',
    path: '/api/organizations/:id',
    scope: 'organization:write',
    handler: 'organizations/delete',
    access: 'write',
    summary: 'Delete an organization (owner only)',
  },
  {
    operationId: 'capture',
    method: 'POST',
    path: '/capture',
    aliases: ['/batch', '/e', '/i/v0/e'],
    auth: 'project_token',
    handler: 'capture/capture',
    access: 'write',
    summary: 'Capture events (PostHog SDK ingestion), authenticated by the project token',
  },
] as const satisfies readonly Route[];

type RouteRow = (typeof routes)[number];
export type OperationId = RouteRow['operationId'];

/** Every (method, path) the API answers, aliases included, each pointing at its route. */
export const routePaths: readonly Route[] = (routes as readonly Route[]).flatMap((r) => [r, ...(r.aliases ?? []).map((path) => ({ ...r, path }))]);

export const keyRoutes = (routes as readonly Route[]).filter((r): r is KeyRoute => r.auth !== 'project_token');

/** Functions that are not API operations: fed by the table stream or by schedules. */
export interface Worker {
  name: string;
  handler: string;
  trigger: 'table-stream';
  access: 'write';
  summary: string;
}

export const workers = [
  {
    name: 'ingest_events',
    handler: 'workers/ingest-events',
    trigger: 'table-stream',
    access: 'write',
    summary: 'Keeps persons and hourly rollups from raw events on the table stream',
  },
] as const satisfies readonly Worker[];

/** Answers requests no route matches (404) or matches by path only (405), in the API's error shape. */
export const fallbackHandler = 'system/fallback';

export function route<Id extends OperationId>(operationId: Id): Extract<RouteRow, { operationId: Id }> {
  const found = routes.find((r) => r.operationId === operationId);
  if (!found) throw new Error(`unknown operation ${operationId}`);
  return found as Extract<RouteRow, { operationId: Id }>;
}
