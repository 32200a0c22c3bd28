import { describe, expect, it } from 'vitest';
import { keyRoutePaths, type KeyRoute as Route } from '#functions/routes.ts';
import { tenancyOf } from '#shared/http/tenancy.ts';
import { SCOPE_OBJECTS } from '#shared/auth/scopes.ts';
import { expectErrorShape, newKey, useApi } from '../support/api.ts';

const api = useApi();

/** A path for the route naming resources that belong to `org` (created per test): the org, its project, a person id. */
function pathFor(route: Route, org: { id: string; teams: { id: number }[] }): string {
  const project = tenancyOf(route.path).kind === 'project';
  return route.path
    .replace(':project_id', String(org.teams[0]!.id))
    .replace(/:(id|organization_id)/g, project ? '1' : org.id);
}

function sampleBody(route: Route): unknown {
  return route.method === 'POST' || route.method === 'PATCH' ? { name: 'Matrix' } : undefined;
}

/** A scope that grants neither the route's scope nor any it also accepts. */
const otherScope = (route: Route) => {
  const granting = [route.scope, ...(route.alsoAccepts ?? [])];
  const object = SCOPE_OBJECTS.find((o) => !granting.some((s) => s.startsWith(`${o}:`)))!;
  return `${object}:write`;
};

describe.each(keyRoutePaths.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_, route) => {
  it('answers 401 without a key', async () => {
    const { key } = await newKey();
    const org = (await api.as(key).post('/api/organizations', { name: 'Mine' })).body;
    const res = await api.as().request(route.method, pathFor(route, org), { body: sampleBody(route) });
    expect(res.status).toBe(401);
    expectErrorShape(res.body);
  });

  it(`answers 403 for a key without ${route.scope}`, async () => {
    const owner = await newKey();
    const org = (await api.as(owner.key).post('/api/organizations', { name: 'Mine' })).body;
    const limited = await newKey({ email: owner.email, scopes: [otherScope(route)] });
    const res = await api.as(limited.key).request(route.method, pathFor(route, org), { body: sampleBody(route) });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe(`API key missing required scope '${route.scope}'`);
    expect((await api.as(owner.key).get(`/api/organizations/${org.id}`)).body.name).toBe('Mine');
  });

  for (const accepted of route.alsoAccepts ?? []) {
    it(`lets a key with only ${accepted} through the scope check`, async () => {
      const owner = await newKey();
      const org = (await api.as(owner.key).post('/api/organizations', { name: 'Mine' })).body;
      const limited = await newKey({ email: owner.email, scopes: [accepted] });
      const res = await api.as(limited.key).request(route.method, pathFor(route, org), { body: sampleBody(route) });
      expect(res.status).not.toBe(401);
      expect(res.status).not.toBe(403);
    });
  }

  if (tenancyOf(route.path).kind === 'organization' || tenancyOf(route.path).kind === 'project') {
    it("answers 404 for another organization's key and leaks nothing", async () => {
      const owner = await newKey();
      const org = (await api.as(owner.key).post('/api/organizations', { name: 'Secret Org Name' })).body;
      const stranger = await newKey();
      const res = await api.as(stranger.key).request(route.method, pathFor(route, org), { body: sampleBody(route) });
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('Secret Org Name');
      expect(res.text).not.toContain(org.teams[0].api_token);
      expect((await api.as(owner.key).get(`/api/organizations/${org.id}`)).body.name).toBe('Secret Org Name');
    });
  }
});
