import { describe, expect, it } from 'vitest';
import { normalizePath, resolveRoute } from '#shared/http/router.ts';

const table = [
  { method: 'GET', path: '/api/environments/:project_id/persons' },
  { method: 'GET', path: '/api/environments/:project_id/persons/:id' },
  { method: 'PATCH', path: '/api/environments/:project_id/persons/:id' },
  { method: 'POST', path: '/api/environments/:project_id/persons/bulk_delete' },
];

describe('route resolution', () => {
  it('treats a trailing slash as the same path', () => {
    expect(normalizePath('/api/x/')).toBe('/api/x');
    expect(normalizePath('/')).toBe('/');
    const r = resolveRoute(table, 'GET', '/api/environments/7/persons/');
    expect(r).toMatchObject({ kind: 'match', route: table[0], params: { project_id: '7' } });
  });

  it('prefers a literal segment over a parameter', () => {
    const r = resolveRoute(table, 'POST', '/api/environments/7/persons/bulk_delete');
    expect(r).toMatchObject({ kind: 'match', route: table[3] });
  });

  it('falls back to a parameter route when the literal route has another method', () => {
    const r = resolveRoute(table, 'GET', '/api/environments/7/persons/bulk_delete');
    expect(r).toMatchObject({ kind: 'match', route: table[1], params: { id: 'bulk_delete' } });
  });

  it('answers method_not_allowed with the allowed methods when only the path matches', () => {
    expect(resolveRoute(table, 'DELETE', '/api/environments/7/persons/3')).toEqual({
      kind: 'method_not_allowed',
      allowed: ['GET', 'PATCH'],
    });
  });

  it('answers not_found for unknown paths, empty parameters and bad percent-encoding', () => {
    expect(resolveRoute(table, 'GET', '/api/nope').kind).toBe('not_found');
    expect(resolveRoute(table, 'GET', '/api/environments//persons').kind).toBe('not_found');
    expect(resolveRoute(table, 'GET', '/api/environments/%E0%A4%A/persons').kind).toBe('not_found');
  });

  it('decodes percent-encoded parameters', () => {
    expect(resolveRoute(table, 'GET', '/api/environments/a%20b/persons')).toMatchObject({
      params: { project_id: 'a b' },
    });
  });
});
