import type { Scope } from '#shared/auth/scopes.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/**
 * One row per API operation. CDK (one Lambda + one API route each), the local HTTP server, the
 * OpenAPI document and the scope/tenant test matrices are all generated from this table.
 */
export interface Route {
  operationId: string;
  method: HttpMethod;
  /** PostHog-style path with `:param` segments, no trailing slash (both forms are served). */
  path: string;
  /** Scope the personal API key must carry. */
  scope: Scope;
  /** Handler module under functions/, without extension; it exports `handler`. */
  handler: string;
  /** What the function may do to the table: `read` gets read-only IAM, `write` read/write. */
  access: 'read' | 'write';
  summary: string;
}

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
] as const satisfies readonly Route[];

export type OperationId = (typeof routes)[number]['operationId'];

/** Answers requests no route matches (404) or matches by path only (405), in the API's error shape. */
export const fallbackHandler = 'system/fallback';

export function route(operationId: OperationId): Route {
  const found = routes.find((r) => r.operationId === operationId);
  if (!found) throw new Error(`unknown operation ${operationId}`);
  return found;
}
