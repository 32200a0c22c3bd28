import { organizationMembership, projectAccess, requireOrganizationLevelKey } from '../../domain/access.ts';
import { logger } from '../../observability.ts';
import { tenancyOf } from '../tenancy.ts';
import { established, type Middleware, type PublicRouteInfo } from './pipeline.ts';

export interface TenantLookups {
  organizationMembership: typeof organizationMembership;
  projectAccess: typeof projectAccess;
}

/**
 * The tenant the path names (`:organization_id`/`:id` under /api/organizations, `:project_id` under
 * /api/environments and /api/projects) and the caller's membership of it: another tenant's (or an
 * unknown, or a malformed) id is a 404, a key restricted elsewhere a 403 (shared/domain/access.ts).
 * Organization-level routes refuse keys scoped to projects. Routes naming no tenant get `none`.
 */
export const tenancy = (
  route: PublicRouteInfo,
  lookups: TenantLookups = { organizationMembership, projectAccess },
): Middleware => {
  const named = tenancyOf(route.path);
  return {
    before: async (request) => {
      const caller = established(request, 'caller', 'authentication');
      if (named.kind === 'organization' || named.kind === 'organization-collection')
        requireOrganizationLevelKey(caller);
      if (named.kind === 'organization') {
        const membership = await lookups.organizationMembership(
          caller,
          request.event.pathParameters?.[named.param] ?? '',
        );
        logger.appendKeys({ organization_id: membership.organization_id });
        request.internal.tenant = { kind: 'organization', membership, organizationId: membership.organization_id };
      } else if (named.kind === 'project') {
        const { membership, projectId } = await lookups.projectAccess(
          caller,
          request.event.pathParameters?.[named.param] ?? '',
        );
        logger.appendKeys({ organization_id: membership.organization_id, project_id: projectId });
        request.internal.tenant = { kind: 'project', membership, projectId };
      } else {
        request.internal.tenant = { kind: 'none' };
      }
    },
  };
};
