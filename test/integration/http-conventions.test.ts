import { describe, expect, it } from 'vitest';
import { keyRoutePaths, type KeyRoute } from '#functions/routes.ts';
import { client, eventually, expectErrorShape, newKey, useApi, type Client } from '../support/api.ts';
import { validBatchExportBody } from '../support/batch-export.ts';
import { ownDeletionQueues } from '../support/isolation.ts';

// Its delete_events requests succeed: they go to deletion queues of this file's own.
ownDeletionQueues('conventions');
const api = useApi();

/** A request that succeeds for the route, against resources made for it (a fresh set for each call). */
async function sampleRequest(route: KeyRoute, c: Client, token: string, projectId: number, org: { id: string }) {
  const distinctId = `slash-${Math.random().toString(36).slice(2)}`;
  const exportBody = validBatchExportBody();
  let personId: number | string = org.id;
  let memberId = 0;
  if (route.path.includes('/actions/:id')) {
    const action = await c.post(`/api/environments/${projectId}/actions`, { name: 'A', steps: [{ event: 'x' }] });
    personId = action.body.id;
  } else if (route.path.includes('/query/:id')) {
    // A query run in the background, complete: its status answers 200 however often it is asked.
    const query = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'x' }] };
    personId = (await c.post(`/api/environments/${projectId}/query`, { query, refresh: 'force_async' })).body
      .query_status.id;
    await eventually(
      async () => expect((await c.get(`/api/environments/${projectId}/query/${personId}`)).status).toBe(200),
      30_000,
    );
  } else if (route.path.includes('/batch_exports/:id')) {
    personId = (await c.post(`/api/organizations/${org.id}/batch_exports`, exportBody)).body.id;
  } else if (route.path.includes('/cohorts/:id')) {
    // A person in the cohort, for the routes that remove one.
    await client(api.baseUrl).post('/batch', { api_key: token, batch: [{ event: 'x', distinct_id: distinctId }] });
    const member = await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/persons?distinct_id=${distinctId}`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0].id as number;
    });
    personId = (
      await c.post(`/api/environments/${projectId}/cohorts`, {
        name: 'Slashes',
        is_static: true,
        _create_static_person_ids: [member],
      })
    ).body.id;
    memberId = member;
  } else if (route.path.includes('/groups')) {
    await client(api.baseUrl).post('/batch', {
      api_key: token,
      batch: [
        {
          event: '$groupidentify',
          distinct_id: distinctId,
          properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme' } },
        },
      ],
    });
    await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/groups/find?group_type_index=0&group_key=acme`);
      expect(res.status).toBe(200);
    });
  }
  if (route.path.includes('/persons')) {
    await client(api.baseUrl).post('/batch', {
      api_key: token,
      batch: [{ event: 'x', distinct_id: distinctId, properties: { $set: { a: 1 } } }],
    });
    personId = await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/persons?distinct_id=${distinctId}`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0].id as number;
    });
  }
  let backfillId = '';
  let runId = '';
  if (route.path.includes('/backfills/:backfill_id') || route.path.includes('/runs/:run_id')) {
    // A backfill queues its runs at once: real backfill and run ids for the paths.
    const exportPath = `/api/organizations/${org.id}/batch_exports/${personId}`;
    backfillId = (
      await c.post(`${exportPath}/backfills`, { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-01T02:00:00Z' })
    ).body.backfill_id;
    runId = (await c.get(`${exportPath}/runs`)).body.results[0].id;
  }
  const path = route.path
    .replace(':project_id', String(projectId))
    .replace(':organization_id', org.id)
    .replace(':backfill_id', backfillId)
    .replace(':run_id', runId)
    .replace(':id', String(personId));
  const bodies: Record<string, unknown> = {
    persons_partial_update: { properties: { b: 2 } },
    persons_split: {},
    persons_delete_property: { $unset: 'a' },
    persons_bulk_delete: { distinct_ids: [distinctId] },
    projects_partial_update: { name: 'Renamed' },
    actions_create: { name: 'Signups', steps: [{ event: 'signed up' }] },
    actions_partial_update: { name: 'Renamed' },
    insights_trend: { events: [{ id: 'x' }] },
    query_create: { query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'x' }] } },
    batch_exports_create: exportBody,
    batch_exports_partial_update: { name: 'Renamed' },
    batch_exports_backfill: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-01T02:00:00Z' },
    batch_exports_backfills_create: { start_at: '2024-01-02T00:00:00Z', end_at: '2024-01-02T02:00:00Z' },
    batch_exports_test: { destination: exportBody.destination },
    batch_exports_unpause: {},
    persons_update_property: { key: 'a', value: 2 },
    persons_reset_person_distinct_id: { distinct_id: distinctId },
    groups_types_update_metadata: [{ group_type_index: 0, name_singular: 'Company' }],
    cohorts_create: { name: 'Slashed', is_static: true },
    cohorts_partial_update: { name: 'Renamed' },
    cohorts_add_persons_to_static_cohort: { person_ids: [memberId] },
    cohorts_remove_person_from_static_cohort: { person_id: memberId },
    cohorts_duplicate_as_static_cohort: {},
  };
  const body =
    bodies[route.operationId] ??
    (route.method === 'POST' || route.method === 'PATCH' ? { name: 'Slashed' } : undefined);
  const queries: Record<string, string> = {
    insights_trend_retrieve: `?events=${encodeURIComponent('[{"id":"x"}]')}`,
    persons_values: '?key=a',
    persons_cohorts: `?person_id=${personId}`,
    groups_list: '?group_type_index=0',
    groups_find: '?group_type_index=0&group_key=acme',
    groups_property_timeline: '?group_type_index=0&group_key=acme',
  };
  const query = queries[route.operationId] ?? '';
  return { path, body, query };
}

describe('paths', () => {
  it.each(keyRoutePaths.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s answers with and without a trailing slash',
    async (_, route) => {
      const { key } = await newKey();
      const c = api.as(key);
      const newOrg = async () => (await c.post('/api/organizations', { name: 'Slashes' })).body;
      const org1 = await newOrg();
      const bare = await sampleRequest(route, c, org1.teams[0].api_token, org1.teams[0].id, org1);
      const bareRes = await c.request(route.method, bare.path + bare.query, { body: bare.body });
      expect(bareRes.status).toBeLessThan(300);
      const org2 = await newOrg();
      const slashed = await sampleRequest(route, c, org2.teams[0].api_token, org2.teams[0].id, org2);
      const slashedRes = await c.request(route.method, `${slashed.path}/${slashed.query}`, { body: slashed.body });
      expect(slashedRes.status).toBe(bareRes.status);
    },
  );

  it('answers a path of slashes (`//`, `//x//`) below 500, as API Gateway reads it: a path, not a host', async () => {
    for (const path of ['//', '//api//organizations', '//x//']) {
      const res = await api.as().get(path);
      expect([path, res.status < 500]).toEqual([path, true]);
    }
  });

  it('answers 404 in the error shape for an unknown path', async () => {
    const res = await api.as().get('/api/does-not-exist/');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
  });

  it('answers 405 in the error shape with Allow for a known path and another method', async () => {
    const res = await api.as().request('PUT', '/api/organizations/');
    expect(res.status).toBe(405);
    expect(res.body).toEqual({
      type: 'invalid_request',
      code: 'method_not_allowed',
      detail: 'Method "PUT" not allowed.',
      attr: null,
    });
    expect(res.headers.get('allow')).toBe('GET, POST');
  });
});

describe('request bodies', () => {
  it('answers 400 parse_error for malformed JSON and creates nothing', async () => {
    const { key } = await newKey();
    const c = api.as(key);
    const res = await c.request('POST', '/api/organizations', {
      raw: '{"name": "x",',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'invalid_request', code: 'parse_error', attr: null });
    expect(res.body.detail).toMatch(/^JSON parse error - /);
    expect((await c.get('/api/organizations')).body.count).toBe(0);
  });

  it('answers 415 for a body that is not JSON', async () => {
    const { key } = await newKey();
    const res = await api.as(key).request('POST', '/api/organizations', {
      raw: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
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

  it.each([
    ['[]', 'list'],
    ['"text"', 'string'],
    ['null', 'null'],
    ['7', 'number'],
  ])('answers 400 for a JSON %s body', async (raw, got) => {
    const { key } = await newKey();
    const res = await api
      .as(key)
      .request('POST', '/api/organizations', { raw, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      type: 'validation_error',
      code: 'invalid_input',
      detail: `Invalid data. Expected a dictionary, but got ${got}.`,
      attr: null,
    });
  });

  it('accepts a JSON content type with a charset', async () => {
    const { key } = await newKey();
    const res = await api.as(key).request('POST', '/api/organizations', {
      raw: '{"name":"charset"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
  });
});
