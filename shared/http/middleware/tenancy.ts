import {
  organizationMembership,
  projectAccess,
  requireOrganizationLevelKey,
  type KeyHolder,
} from '../../domain/access.ts';
import { logger } from '../../observability.ts';
import { tenancyOf } from '../tenancy.ts';
import { established, type HttpEvent, type Middleware, type PublicRouteInfo, type Tenant } from './pipeline.ts';

export interface TenantLookups {
  organizationMembership: typeof organizationMembership;
  projectAccess: typeof projectAccess;
}

/** Resolves the tenant a route's path names for a key's holder: the one lookup both ways of running it share. */
export type TenantResolver = (holder: KeyHolder, event: HttpEvent) => Promise<Tenant>;

/**
 * The tenant the path names (`:organization_id`/`:id` under /api/organizations, `:project_id` under
 * /api/environments and /api/projects) and the caller's membership of it: another tenant's (or an
 * unknown, or a malformed) id is a 404, a key restricted elsewhere a 403 (shared/domain/access.ts).
 * Organization-level routes refuse keys scoped to projects. Routes naming no tenant get `none`.
 */
export function tenantResolver(
  route: PublicRouteInfo,
  lookups: TenantLookups = { organizationMembership, projectAccess },
): TenantResolver {
  const named = tenancyOf(route.path);
  return async (holder, event) => {
    if (named.kind === 'organization' || named.kind === 'organization-collection') requireOrganizationLevelKey(holder);
    if (named.kind === 'organization') {
      const membership = await lookups.organizationMembership(holder, event.pathParameters?.[named.param] ?? '');
      return { kind: 'organization', membership, organizationId: membership.organization_id };
    }
    if (named.kind === 'project') {
      const { membership, projectId } = await lookups.projectAccess(holder, event.pathParameters?.[named.param] ?? '');
      return { kind: 'project', membership, projectId };
    }
    return { kind: 'none' };
  };
}

/**
 * Sets `tenant`: the lookup authentication started beside the user's read (`tenantLookup`), or this
 * route's own when none was started. Either way its refusals surface here, after the scope check.
 */
export const tenancy = (route: PublicRouteInfo, lookups?: TenantLookups): Middleware => {
  const resolve = tenantResolver(route, lookups);
  return {
    before: async (request) => {
      const caller = established(request, 'caller', 'authentication');
      const tenant = await (request.internal.tenantLookup ?? resolve(caller, request.event));
      if (tenant.kind === 'organization') logger.appendKeys({ organization_id: tenant.organizationId });
      if (tenant.kind === 'project')
        logger.appendKeys({ organization_id: tenant.membership.organization_id, project_id: tenant.projectId });
      request.internal.tenant = tenant;
    },
  };
};
