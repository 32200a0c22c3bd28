import { describe, expect, it } from 'vitest';
import { keyRoutes } from '#functions/routes.ts';
import { expectErrorShape, newKey, useApi } from '../support/api.ts';

const api = useApi();

describe('paths', () => {
  it.each(keyRoutes.map((r) => [r.operationId, r]))('%s answers with and without a trailing slash', async (_, route) => {
    const { key } = await newKey();
    const c = api.as(key);
    const org = (await c.post('/api/organizations', { name: 'Slashes' })).body;
    const path = route.path.replace(':id', org.id);
    const body = route.method === 'POST' || route.method === 'PATCH' ? { name: 'Slashed' } : undefined;
    const bare = await c.request(route.method, path, { body });
    expect(bare.status).toBeLessThan(300);
    const org2 = (await c.post('/api/organizations', { name: 'Slashes' })).body;
    const slashed = await c.request(route.method, `${route.path.replace(':id', org2.id)}/`, { body });
    expect(slashed.status).toBe(bare.status);
  });

  it('answers 404 in the error shape for an unknown path', async () => {
    const res = await api.as().get('/api/does-not-exist/');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
  });

  it('answers 405 in the error shape with Allow for a known path and another method', async () => {
    const res = await api.as().request('PUT', '/api/organizations/');
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ type: 'invalid_request', code: 'method_not_allowed', detail: 'Method "PUT" not allowed.', attr: null });
    expect(res.headers.get('allow')).toBe('GET, POST');
  });
});

describe('request bodies', () => {
  it('answers 400 parse_error for malformed JSON and creates nothing', async () => {
    const { key } = await newKey();
    const c = api.as(key);
    const res = await c.request('POST', '/api/organizations', { raw: '{"name": "x",', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'invalid_request', code: 'parse_error', attr: null });
    expect(res.body.detail).toMatch(/^JSON parse error - /);
    expect((await c.get('/api/organizations')).body.count).toBe(0);
  });

  it('answers 415 for a body that is not JSON', async () => {
    const { key } = await newKey();
    const res = await api.as(key).request('POST', '/api/organizations', { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      type: 'invalid_request',
      code: 'unsupported_media_type',
      detail: 'Unsupported media type "application/x-www-form-urlencoded" in request.',
      attr: null,
    });
  });

  it('answers 413 for a body over 1 MiB', async () => {
    const { key } = await newKey();
    const res = await api.as(key).post('/api/organizations', { name: 'big', padding: 'x'.repeat(1024 * 1024) });
    expect(res.status).toBe(413);
    expectErrorShape(res.body);
  });

  it.each([['[]', 'list'], ['"text"', 'string'], ['null', 'null'], ['7', 'number']])('answers 400 for a JSON %s body', async (raw, got) => {
    const { key } = await newKey();
    const res = await api.as(key).request('POST', '/api/organizations', { raw, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ type: 'validation_error', code: 'invalid_input', detail: `Invalid data. Expected a dictionary, but got ${got}.`, attr: null });
  });

  it('accepts a JSON content type with a charset', async () => {
    const { key } = await newKey();
    const res = await api.as(key).request('POST', '/api/organizations', { raw: '{"name":"charset"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(res.status).toBe(201);
  });
});
