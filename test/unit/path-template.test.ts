import { describe, expect, it } from 'vitest';
import { routePaths } from '#functions/routes.ts';
import { bracedPath, matchPath, pathParamNames } from '#shared/http/path-template.ts';

describe('path templates', () => {
  it('spells parameters {name} for API Gateway and OpenAPI, literals untouched', () => {
    expect(bracedPath('/api/projects/:project_id/persons/:id')).toBe('/api/projects/{project_id}/persons/{id}');
    expect(bracedPath('/api/organizations/:organization_id2/batch_exports')).toBe(
      '/api/organizations/{organization_id2}/batch_exports',
    );
    expect(bracedPath('/i/v0/e')).toBe('/i/v0/e');
    // Only a whole segment is a parameter.
    expect(bracedPath('/static/a:b')).toBe('/static/a:b');
  });

  it('lists the parameter names in path order', () => {
    expect(pathParamNames('/api/projects/:project_id/persons/:id/activity')).toEqual(['project_id', 'id']);
    expect(pathParamNames('/capture')).toEqual([]);
  });

  it('matches a path segment by segment, decoding parameters', () => {
    expect(matchPath('/api/projects/:project_id/persons/:id', '/api/projects/7/persons/a%2Fb')).toEqual({
      project_id: '7',
      id: 'a/b',
    });
    expect(matchPath('/api/projects/:project_id', '/api/projects/7/persons')).toBeUndefined();
    expect(matchPath('/api/projects/:project_id', '/api/other/7')).toBeUndefined();
    expect(matchPath('/api/projects/:project_id/persons', '/api/projects//persons')).toBeUndefined();
    expect(matchPath('/api/projects/:project_id', '/api/projects/%E0%A4%A')).toBeUndefined();
  });

  it('gives every route-table path the same parameters in both spellings', () => {
    for (const { path } of routePaths) {
      const braced = [...bracedPath(path).matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect([path, braced]).toEqual([path, pathParamNames(path)]);
      const sample = path.replace(/:(\w+)/g, (_, name: string) => `x-${name}`);
      expect([path, matchPath(path, sample)]).toEqual([
        path,
        Object.fromEntries(pathParamNames(path).map((n) => [n, `x-${n}`])),
      ]);
    }
  });
});
