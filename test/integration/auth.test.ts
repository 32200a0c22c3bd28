import { describe, expect, it } from 'vitest';
import { revokeApiKey } from '#shared/domain/api-keys.ts';
import { expectErrorShape, newKey, useApi } from '../support/api.ts';

const api = useApi();

describe('personal API key authentication', () => {
  it('answers 401 not_authenticated without a key', async () => {
    const res = await api.as().get('/api/organizations/');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      type: 'authentication_error',
      code: 'not_authenticated',
      detail: 'Authentication credentials were not provided.',
      attr: null,
    });
  });

  it.each([
    ['an unknown key', 'Bearer phx_thisKeyDoesNotExistAnywhereInTheTable1234567'],
    ['a project token', 'Bearer phc_notAPersonalKeyButAProjectTokenXXXXXXXXXXXXX'],
    ['garbage', 'Bearer ???'],
  ])('answers 401 for %s', async (_, header) => {
    const res = await api.as().request('GET', '/api/organizations', { headers: { authorization: header } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      type: 'authentication_error',
      code: 'not_authenticated',
      detail: 'Personal API key found in request Authorization header is invalid.',
      attr: null,
    });
  });

  it('treats a malformed Authorization header as no credentials', async () => {
    const res = await api.as().request('GET', '/api/organizations', { headers: { authorization: 'Token abc' } });
    expect(res.status).toBe(401);
    expect(res.body.detail).toBe('Authentication credentials were not provided.');
  });

  it('accepts the key in the personal_api_key query parameter', async () => {
    const { key } = await newKey();
    const res = await api.as().get(`/api/organizations/?personal_api_key=${key}`);
    expect(res.status).toBe(200);
  });

  it('stops accepting a revoked key', async () => {
    const { key, email } = await newKey();
    expect((await api.as(key).get('/api/organizations')).status).toBe(200);
    expect(await revokeApiKey(email, `${key.slice(0, 4)}...${key.slice(-4)}`)).toBe(1);
    expect((await api.as(key).get('/api/organizations')).status).toBe(401);
  });
});

describe('scopes', () => {
  it('answers 403 naming the missing scope', async () => {
    const { key } = await newKey({ scopes: ['person:read'] });
    const res = await api.as(key).get('/api/organizations');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      type: 'authentication_error',
      code: 'permission_denied',
      detail: "API key missing required scope 'organization:read'",
      attr: null,
    });
  });

  it('lets write imply read but not the other way round', async () => {
    const writer = await newKey({ scopes: ['organization:write'] });
    expect((await api.as(writer.key).get('/api/organizations')).status).toBe(200);
    expect((await api.as(writer.key).post('/api/organizations', { name: 'W' })).status).toBe(201);
    const reader = await newKey({ scopes: ['organization:read'] });
    const denied = await api.as(reader.key).post('/api/organizations', { name: 'R' });
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toBe("API key missing required scope 'organization:write'");
    expect((await api.as(reader.key).get('/api/organizations')).body.count).toBe(0);
  });
});

describe('scoped keys', () => {
  it('restricts a key with scoped_organizations to those organizations', async () => {
    const full = await newKey();
    const c = api.as(full.key);
    const allowed = (await c.post('/api/organizations', { name: 'Allowed' })).body;
    const other = (await c.post('/api/organizations', { name: 'Other' })).body;
    const scoped = await newKey({
      email: full.email,
      scopes: ['organization:read'],
      scopedOrganizations: [allowed.id],
    });
    const s = api.as(scoped.key);
    expect((await s.get(`/api/organizations/${allowed.id}`)).status).toBe(200);
    const denied = await s.get(`/api/organizations/${other.id}`);
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toBe(`API key does not have access to the requested organization: ID ${other.id}.`);
    const list = await s.get('/api/organizations');
    expect(list.body.count).toBe(1);
    expect(list.body.results[0].id).toBe(allowed.id);
  });

  it('refuses project-scoped keys on organization endpoints', async () => {
    const { key } = await newKey({ scopedTeams: [1] });
    const res = await api.as(key).get('/api/organizations');
    expect(res.status).toBe(403);
    expectErrorShape(res.body);
    expect(res.body.detail).toBe('API keys with scoped projects are only supported on project-based endpoints.');
  });
});
