import { describe, expect, it } from 'vitest';
import type { KeyHolder } from '#shared/domain/access.ts';
import { NotFound, PermissionDenied } from '#shared/errors.ts';
import { scope } from '#shared/http/middleware/scope.ts';
import { tenancy, tenantResolver, type TenantLookups } from '#shared/http/middleware/tenancy.ts';
import { fakeCaller, fakeRequest, membership, thrownBy } from './fake-request.ts';

const ORG = '0190a7a0-0000-7000-8000-0000000000aa';

/** Lookups standing in for DynamoDB: one organization, one project (7) in it; anything else is a 404. */
function lookups(): TenantLookups & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    organizationMembership: async (_caller: KeyHolder, orgId: string) => {
      asked.push(`organization ${orgId}`);
      if (orgId.toLowerCase() !== ORG) throw new NotFound();
      return membership(ORG);
    },
    projectAccess: async (_caller: KeyHolder, rawProjectId: string) => {
      asked.push(`project ${rawProjectId}`);
      if (rawProjectId !== '7') throw new NotFound();
      return { projectId: 7, membership: membership(ORG) };
    },
  };
}

const route = (path: string) => ({ operationId: 'op', method: 'GET', path, scope: 'person:read' as const });

describe('scope middleware', () => {
  it("refuses a key without the route's scope with 403 in PostHog's wording, and lets write imply read", async () => {
    const refused = await thrownBy(
      scope(route('/api/x')),
      fakeRequest({}, { caller: fakeCaller({ scopes: ['organization:read'] }) }),
    );
    expect(refused).toBeInstanceOf(PermissionDenied);
    expect(refused).toMatchObject({ status: 403, detail: "API key missing required scope 'person:read'" });
    expect(
      await thrownBy(scope(route('/api/x')), fakeRequest({}, { caller: fakeCaller({ scopes: ['person:write'] }) })),
    ).toBeUndefined();
  });
});

describe('tenancy middleware', () => {
  it('resolves a project route to its project and membership, never an organizationId', async () => {
    const request = fakeRequest({ pathParameters: { project_id: '7' } }, { caller: fakeCaller() });
    await tenancy(route('/api/environments/:project_id/persons'), lookups()).before?.(request);
    expect(request.internal.tenant).toEqual({ kind: 'project', projectId: 7, membership: membership(ORG) });
  });

  it('resolves an organization route (either parameter name) to its canonical organization id, never a projectId', async () => {
    for (const [path, param] of [
      ['/api/organizations/:id', 'id'],
      ['/api/organizations/:organization_id/batch_exports', 'organization_id'],
    ] as const) {
      const request = fakeRequest({ pathParameters: { [param]: ORG.toUpperCase() } }, { caller: fakeCaller() });
      await tenancy(route(path), lookups()).before?.(request);
      expect(request.internal.tenant).toEqual({
        kind: 'organization',
        organizationId: ORG,
        membership: membership(ORG),
      });
    }
  });

  it("answers another tenant's id with the lookup's 404 and sets no tenant", async () => {
    const request = fakeRequest({ pathParameters: { project_id: '8' } }, { caller: fakeCaller() });
    expect(await thrownBy(tenancy(route('/api/environments/:project_id'), lookups()), request)).toBeInstanceOf(
      NotFound,
    );
    expect(request.internal.tenant).toBeUndefined();
  });

  it('refuses project-scoped keys on organization-level routes before any lookup', async () => {
    for (const path of ['/api/organizations', '/api/organizations/:id']) {
      const found = lookups();
      const request = fakeRequest({ pathParameters: { id: ORG } }, { caller: fakeCaller({ scoped_teams: [7] }) });
      const error = await thrownBy(tenancy(route(path), found), request);
      expect(error).toMatchObject({
        status: 403,
        detail: 'API keys with scoped projects are only supported on project-based endpoints.',
      });
      expect(found.asked).toEqual([]);
    }
  });

  it('gives routes that name no tenant (the organization collection) the tenant none, with no lookup', async () => {
    const found = lookups();
    const request = fakeRequest({}, { caller: fakeCaller() });
    await tenancy(route('/api/organizations'), found).before?.(request);
    expect(request.internal.tenant).toEqual({ kind: 'none' });
    expect(found.asked).toEqual([]);
  });

  it('uses the lookup authentication started with the key, and surfaces its refusal here, not before', async () => {
    const found = lookups();
    const resolve = tenantResolver(route('/api/environments/:project_id'), found);
    const started = fakeRequest({ pathParameters: { project_id: '7' } }, { caller: fakeCaller() });
    started.internal.tenantLookup = resolve(fakeCaller(), started.event);
    const other = lookups();
    await tenancy(route('/api/environments/:project_id'), other).before?.(started);
    expect(started.internal.tenant).toEqual({ kind: 'project', projectId: 7, membership: membership(ORG) });
    expect([found.asked, other.asked]).toEqual([['project 7'], []]);

    const refused = fakeRequest({ pathParameters: { project_id: '8' } }, { caller: fakeCaller() });
    refused.internal.tenantLookup = resolve(fakeCaller(), refused.event);
    refused.internal.tenantLookup.catch(() => undefined);
    expect(await thrownBy(tenancy(route('/api/environments/:project_id'), other), refused)).toBeInstanceOf(NotFound);
    expect(refused.internal.tenant).toBeUndefined();
  });

  it('needs the caller that authentication sets', async () => {
    expect(String(await thrownBy(tenancy(route('/api/organizations'), lookups()), fakeRequest()))).toContain(
      'pipeline order',
    );
  });
});
