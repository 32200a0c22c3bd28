import { describe, expect, it } from 'vitest';
import { addMember } from '#shared/domain/organizations.ts';
import { authenticate } from '#shared/domain/access.ts';
import { findProjectById, findProjectByToken } from '#shared/db/organizations.ts';
import { expectErrorShape, newKey, useApi } from '../support/api.ts';

const api = useApi();

const SPEC_FIELDS = [
  'available_product_features',
  'created_at',
  'customer_id',
  'enforce_2fa',
  'id',
  'is_member_join_email_enabled',
  'logo_media_id',
  'member_count',
  'membership_level',
  'metadata',
  'name',
  'plugins_access_level',
  'projects',
  'slug',
  'teams',
  'updated_at',
];

async function owner() {
  const { key, email } = await newKey();
  return { key, email, c: api.as(key) };
}

describe('organization create', () => {
  it('answers 201 with exactly the spec fields, the caller as owner and a default project', async () => {
    const { c } = await owner();
    const res = await c.post('/api/organizations/', { name: 'Acme Analytics' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(SPEC_FIELDS);
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.body).toMatchObject({
      name: 'Acme Analytics',
      membership_level: 15,
      member_count: '1',
      is_member_join_email_enabled: true,
    });
    expect(res.body.slug).toMatch(/^acme-analytics(-[a-z]{4})?$/);
    expect(res.body.teams).toHaveLength(1);
    const team = res.body.teams[0];
    expect(Number.isInteger(team.id)).toBe(true);
    expect(team.api_token).toMatch(/^phc_[A-Za-z0-9_-]{40,}$/);
    expect(res.body.projects).toEqual([{ id: team.id, organization_id: res.body.id, name: 'Default project' }]);
    expect(await findProjectByToken(team.api_token)).toEqual({ project_id: team.id, organization_id: res.body.id });
    expect(res.body.created_at).toBe(res.body.updated_at);
  });

  it('ignores fields that are not writable', async () => {
    const { c } = await owner();
    const res = await c.post('/api/organizations', {
      name: 'Writable Only',
      slug: 'chosen-by-client',
      id: '00000000-0000-0000-0000-000000000000',
      member_count: 99,
      membership_level: 1,
      enforce_2fa: true,
      is_member_join_email_enabled: false,
    });
    expect(res.status).toBe(201);
    expect(res.body.slug).not.toBe('chosen-by-client');
    expect(res.body.id).not.toBe('00000000-0000-0000-0000-000000000000');
    expect(res.body).toMatchObject({
      member_count: '1',
      membership_level: 15,
      enforce_2fa: true,
      is_member_join_email_enabled: false,
    });
  });

  it('gives every organization a unique slug, adding a random suffix on a clash', async () => {
    const { c } = await owner();
    const name = `Clash ${Date.now()}`;
    const slugs = new Set<string>();
    const results = await Promise.all(Array.from({ length: 6 }, () => c.post('/api/organizations', { name })));
    for (const r of results) {
      expect(r.status).toBe(201);
      slugs.add(r.body.slug);
    }
    expect(slugs.size).toBe(6);
    const base = `clash-${name.split(' ')[1]}`;
    expect([...slugs].filter((s) => s === base)).toHaveLength(1);
    for (const s of slugs) expect(s).toMatch(new RegExp(`^${base}(-[a-z]{4})?$`));
  });

  it('slugifies like Django and caps the slug at 48 characters', async () => {
    const { c } = await owner();
    const res = await c.post('/api/organizations', { name: `Ünïcode & Co. ${'x'.repeat(50)}` });
    expect(res.status).toBe(201);
    expect(res.body.slug.startsWith('unicode-co-xxx')).toBe(true);
    expect(res.body.slug.length).toBeLessThanOrEqual(48);
  });

  it.each([
    [{}, 'name', 'required'],
    [{ name: '' }, 'name', 'blank'],
    [{ name: '   ' }, 'name', 'blank'],
    [{ name: 'x'.repeat(65) }, 'name', 'max_length'],
    [{ name: 42 }, 'name', 'invalid_input'],
    [{ name: null }, 'name', 'null'],
    [{ name: 'ok', enforce_2fa: 'yes' }, 'enforce_2fa', 'invalid_input'],
    [{ name: 'ok', is_member_join_email_enabled: 1 }, 'is_member_join_email_enabled', 'invalid_input'],
    [{ name: 'ok', logo_media_id: 'not-a-uuid' }, 'logo_media_id', 'invalid_input'],
  ])('rejects %j with 400 naming %s, and creates nothing', async (body, attr, code) => {
    const { c } = await owner();
    const before = await c.get('/api/organizations/');
    const res = await c.post('/api/organizations/', body);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr, code });
    const after = await c.get('/api/organizations/');
    expect(after.body.count).toBe(before.body.count);
  });

  it('accepts a 64-character name', async () => {
    const { c } = await owner();
    expect((await c.post('/api/organizations', { name: 'n'.repeat(64) })).status).toBe(201);
  });
});

describe('organization list', () => {
  it("returns only the caller's organizations with an exact count", async () => {
    const a = await owner();
    const b = await owner();
    await a.c.post('/api/organizations', { name: 'A one' });
    await a.c.post('/api/organizations', { name: 'A two' });
    await b.c.post('/api/organizations', { name: 'B one' });
    const res = await a.c.get('/api/organizations/');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ count: 2, next: null, previous: null });
    expect(res.body.results.map((o: any) => o.name)).toEqual(['A one', 'A two']);
  });

  it('pages with limit and offset and absolute next/previous links', async () => {
    const { c } = await owner();
    for (const name of ['P1', 'P2', 'P3', 'P4', 'P5']) await c.post('/api/organizations', { name });
    const first = await c.get('/api/organizations/?limit=2');
    expect(first.body.count).toBe(5);
    expect(first.body.results.map((o: any) => o.name)).toEqual(['P1', 'P2']);
    expect(first.body.previous).toBeNull();
    expect(first.body.next).toBe(`${api.baseUrl}/api/organizations?limit=2&offset=2`);
    const second = await c.get(new URL(first.body.next).pathname + new URL(first.body.next).search);
    expect(second.body.results.map((o: any) => o.name)).toEqual(['P3', 'P4']);
    expect(second.body.previous).toBe(`${api.baseUrl}/api/organizations?limit=2`);
    const last = await c.get('/api/organizations?limit=2&offset=4');
    expect(last.body.results.map((o: any) => o.name)).toEqual(['P5']);
    expect(last.body.next).toBeNull();
    expect(last.body.previous).toBe(`${api.baseUrl}/api/organizations?limit=2&offset=2`);
    const beyond = await c.get('/api/organizations?offset=50');
    expect(beyond.body).toMatchObject({ count: 5, results: [], next: null });
  });

  it.each(['limit=0', 'limit=abc', 'offset=-1', 'limit=1.5', 'limit=100000'])('rejects %s with 400', async (qs) => {
    const { c } = await owner();
    const res = await c.get(`/api/organizations/?${qs}`);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(qs.split('=')[0]);
  });
});

describe('organization retrieve', () => {
  it('returns the organization with its projects', async () => {
    const { c } = await owner();
    const created = await c.post('/api/organizations', { name: 'Retrievable' });
    const res = await c.get(`/api/organizations/${created.body.id}/`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
  });

  it("answers 404 for another organization's id, an unknown id and a malformed id", async () => {
    const a = await owner();
    const b = await owner();
    const theirs = await b.c.post('/api/organizations', { name: 'Private' });
    for (const id of [theirs.body.id, '01890000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const res = await a.c.get(`/api/organizations/${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
    }
  });
});

describe('organization partial update', () => {
  it('changes only the fields sent and moves updated_at', async () => {
    const { c } = await owner();
    const created = await c.post('/api/organizations', { name: 'Before', enforce_2fa: true });
    await new Promise((r) => setTimeout(r, 5));
    const res = await c.patch(`/api/organizations/${created.body.id}/`, { name: 'After', slug: 'ignored' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'After',
      slug: created.body.slug,
      enforce_2fa: true,
      created_at: created.body.created_at,
    });
    expect(res.body.updated_at > created.body.updated_at).toBe(true);
    expect((await c.get(`/api/organizations/${created.body.id}`)).body.name).toBe('After');
  });

  it('rejects invalid values with 400 and leaves the organization unchanged', async () => {
    const { c } = await owner();
    const created = await c.post('/api/organizations', { name: 'Stable' });
    for (const body of [{ name: '' }, { name: 'y'.repeat(65) }, { enforce_2fa: 'nope' }]) {
      const res = await c.patch(`/api/organizations/${created.body.id}`, body);
      expect(res.status).toBe(400);
      expectErrorShape(res.body);
    }
    expect((await c.get(`/api/organizations/${created.body.id}`)).body).toEqual(created.body);
  });

  it('refuses members below admin with 403 and lets admins update', async () => {
    const o = await owner();
    const created = await o.c.post('/api/organizations', { name: 'Levels' });
    const member = await newKey();
    const admin = await newKey();
    await addMember(created.body.id, (await authenticate(member.key)).user.id, 1);
    await addMember(created.body.id, (await authenticate(admin.key)).user.id, 8);
    const denied = await api.as(member.key).patch(`/api/organizations/${created.body.id}`, { name: 'Nope' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      type: 'authentication_error',
      code: 'permission_denied',
      detail: 'Your organization access level is insufficient.',
      attr: null,
    });
    const allowed = await api.as(admin.key).patch(`/api/organizations/${created.body.id}`, { name: 'By admin' });
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ name: 'By admin', membership_level: 8, member_count: '3' });
    expect((await api.as(member.key).get(`/api/organizations/${created.body.id}`)).body.membership_level).toBe(1);
  });
});

describe('organization delete', () => {
  it('lets only the owner delete; the organization, its memberships, project ids and token stop working', async () => {
    const o = await owner();
    const created = await o.c.post('/api/organizations', { name: 'Doomed' });
    const admin = await newKey();
    await addMember(created.body.id, (await authenticate(admin.key)).user.id, 8);
    const byAdmin = await api.as(admin.key).delete(`/api/organizations/${created.body.id}/`);
    expect(byAdmin.status).toBe(403);

    // A project route of the organization answered once (the container now knows the project's organization).
    const projectPath = `/api/environments/${created.body.teams[0].id}/persons/`;
    expect((await o.c.get(projectPath)).status).toBe(200);
    const res = await o.c.delete(`/api/organizations/${created.body.id}/`);
    expect(res.status).toBe(204);
    expect((await o.c.get(projectPath)).status).toBe(404);
    expect(res.text).toBe('');
    expect((await o.c.get(`/api/organizations/${created.body.id}`)).status).toBe(404);
    expect((await api.as(admin.key).get(`/api/organizations/${created.body.id}`)).status).toBe(404);
    expect((await api.as(admin.key).get('/api/organizations')).body.count).toBe(0);
    const team = created.body.teams[0];
    expect(await findProjectByToken(team.api_token)).toBeUndefined();
    expect(await findProjectById(team.id)).toBeUndefined();
    expect((await o.c.delete(`/api/organizations/${created.body.id}`)).status).toBe(404);
  });

  it('frees the slug for a new organization', async () => {
    const { c } = await owner();
    const name = `Reusable ${Date.now()}`;
    const first = await c.post('/api/organizations', { name });
    await c.delete(`/api/organizations/${first.body.id}`);
    const second = await c.post('/api/organizations', { name });
    expect(second.body.slug).toBe(first.body.slug);
  });
});
