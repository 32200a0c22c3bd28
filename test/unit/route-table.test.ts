import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  aliasesOf,
  fallbackHandler,
  keyRoutes,
  projectLevelPath,
  routes,
  routePaths,
  workers,
  type Route,
} from '#functions/routes.ts';
import { tenancyOf } from '#shared/http/tenancy.ts';

const FUNCTIONS = join(import.meta.dirname, '..', '..', 'functions');

function handlerFiles(dir = FUNCTIONS): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return handlerFiles(full);
    return entry.name.endsWith('.ts') && full !== join(FUNCTIONS, 'routes.ts')
      ? [relative(FUNCTIONS, full).replace(/\.ts$/, '')]
      : [];
  });
}

describe('route table', () => {
  it('names every handler file exactly once and every named file exists', () => {
    const named = [...routes.map((r) => r.handler), ...workers.map((w) => w.handler), fallbackHandler];
    expect(new Set(named).size).toBe(named.length);
    expect([...handlerFiles()].sort()).toEqual([...named].sort());
  });

  it('has unique operation ids and unique method + path pairs', () => {
    expect(new Set(routes.map((r) => r.operationId)).size).toBe(routes.length);
    expect(new Set(routePaths.map((r) => `${r.method} ${r.path}`)).size).toBe(routePaths.length);
  });

  it('writes paths without a trailing slash, under /api (capture and SDK paths at the root, as PostHog serves them)', () => {
    for (const r of keyRoutes) expect(r.path).toMatch(/^\/api(\/[a-z_:]+)+$/);
    // Only posthog-js's script path `/array/:token/config.js` ends in an extension; `/` is the console's page.
    for (const r of routePaths) if (r.path !== '/') expect(r.path).toMatch(/^(\/[a-z0-9_:]+)+(\.js)?$/);
  });

  it('gives read scopes read-only table access and write scopes write access (POST may compute with a read scope)', () => {
    for (const r of keyRoutes) {
      if (r.method === 'GET' || r.scope.endsWith(':read'))
        expect([r.operationId, r.access]).toEqual([r.operationId, 'read']);
      // Cancelling a query is a read of the query scope too, as PostHog has it.
      if (r.method !== 'GET' && r.scope.endsWith(':read'))
        expect([r.operationId, r.method]).toEqual([
          r.operationId,
          r.operationId === 'query_destroy' ? 'DELETE' : 'POST',
        ]);
      if (r.scope.endsWith(':write')) expect([r.operationId, r.access]).toEqual([r.operationId, 'write']);
    }
  });

  it('builds every handler with the factory and keeps handler files free of try/catch, SDK imports and JSON.parse', () => {
    for (const r of routes as readonly Route[]) {
      const source = readFileSync(join(FUNCTIONS, `${r.handler}.ts`), 'utf8');
      const factory = r.auth === 'project_token' || r.auth === 'public' ? 'publicHandler' : 'apiHandler';
      expect(source, r.handler).toMatch(new RegExp(`${factory}\\(\\s*route\\('${r.operationId}'\\)`));
      expect(source, r.handler).not.toMatch(/\btry\s*\{|@aws-sdk|JSON\.parse/);
    }
  });

  it('derives the tenant from the path', () => {
    expect(tenancyOf('/api/organizations/:id')).toEqual({ kind: 'organization', param: 'id' });
    expect(tenancyOf('/api/organizations/:organization_id/batch_exports/:id')).toEqual({
      kind: 'organization',
      param: 'organization_id',
    });
    expect(tenancyOf('/api/environments/:project_id/persons')).toEqual({ kind: 'project', param: 'project_id' });
    expect(tenancyOf('/api/organizations')).toEqual({ kind: 'organization-collection' });
  });

  it('serves every environment-level row under /api/projects too, as the same operation and tenant', () => {
    const environmentLevel = (routes as readonly Route[]).filter((r) => r.path.startsWith('/api/environments/'));
    expect(environmentLevel.length).toBeGreaterThanOrEqual(19);
    for (const r of environmentLevel) {
      const projectLevel = r.path.replace('/api/environments/', '/api/projects/');
      const served = routePaths.filter((p) => p.method === r.method && p.path === projectLevel);
      expect(served, `${r.method} ${projectLevel}`).toEqual([{ ...r, path: projectLevel }]);
      expect(tenancyOf(projectLevel)).toEqual(tenancyOf(r.path));
    }
    // And nothing else gains a project-level path.
    expect(routePaths.filter((p) => p.path.startsWith('/api/projects/'))).toHaveLength(environmentLevel.length);
  });

  it('gives a row added later under /api/environments its project-level path without declaring it', () => {
    const later: Route = {
      operationId: 'query_status',
      method: 'GET',
      path: '/api/environments/:project_id/query/:id',
      scope: 'query:read',
      handler: 'query/status',
      access: 'read',
      summary: 'A later row',
    };
    expect(aliasesOf(later)).toEqual(['/api/projects/:project_id/query/:id']);
    expect(aliasesOf({ ...later, path: '/capture', aliases: ['/e'] })).toEqual(['/e']);
    expect(projectLevelPath('/api/environments/:project_id')).toBe('/api/projects/:project_id');
    expect(projectLevelPath('/api/environments/:project_idx/persons')).toBeUndefined();
    expect(projectLevelPath('/api/organizations/:id')).toBeUndefined();
  });
});
