import { beforeAll, describe, expect, it } from 'vitest';
import { keyRoutePaths, type KeyRoute } from '#functions/routes.ts';
import { revokeApiKey } from '#shared/domain/api-keys.ts';
import { findUserIdByEmail } from '#shared/db/users.ts';
import { SCOPE_OBJECTS } from '#shared/auth/scopes.ts';
import { tenancyOf } from '#shared/http/tenancy.ts';
import { eventually, expectErrorShape, newKey, uniqueEmail, useApi, type Reply } from '../support/api.ts';
import { retryingUnavailable } from '../support/retry.ts';
import { diffSnapshots, snapshotTenant, type Snapshot, type TenantScope } from '../support/tenant-snapshot.ts';
import { ownDeletionQueues } from '../support/isolation.ts';

/**
 * Every row of the route table, at every path it answers on (aliases included), x every way a caller
 * can be refused: no key, a malformed key, a revoked key, a key without the route's scope, a
 * read-only key on a write route, another organization's key, a key scoped to another project and one
 * scoped to another organization. Each request would succeed for the owner (real resources, valid
 * bodies), so the refusal is the auth rule's and nothing else's; no response carries the victim's
 * data, and the victim's items in the table are unchanged at the end. A row added to the table is
 * covered here without touching this file.
 */
// Its delete_events requests succeed: they go to deletion queues of this file's own.
ownDeletionQueues('matrix');
const api = useApi();

interface Victim {
  email: string;
  key: string;
  org: { id: string; name: string; teams: { id: number; api_token: string }[] };
  other: { id: string; teams: { id: number }[] };
  personId: number;
  actionId: number;
  exportId: string;
  backfillId: string;
  runId: string;
  queryId: string;
  cohortId: number;
  /** Strings only the victim's data holds: none may appear in a refused response. */
  secrets: string[];
}

let victim: Victim;
let scope: TenantScope;
let before: Snapshot;
/** Organizations legitimately created by collection routes during the matrix (their membership items are expected). */
const createdOrgs: string[] = [];
const keys: Record<string, string> = {};

const SECRET = `s3cr3t-${Math.random().toString(36).slice(2, 10)}`;

beforeAll(async () => {
  const owner = await newKey({ email: uniqueEmail('victim') });
  const c = api.as(owner.key);
  const org = (await c.post('/api/organizations', { name: `Victim Org ${SECRET}` })).body;
  const other = (await c.post('/api/organizations', { name: 'Victim second org' })).body;
  const projectId = org.teams[0].id as number;
  await api.as().post('/batch', {
    api_key: org.teams[0].api_token,
    batch: [
      {
        event: 'signed up',
        distinct_id: `did-${SECRET}`,
        properties: {
          $set: { email: `${SECRET}@victim.example`, plan: `plan-${SECRET}` },
          $groups: { company: `co-${SECRET}` },
        },
      },
      {
        event: '$groupidentify',
        distinct_id: `did-${SECRET}`,
        properties: { $group_type: 'company', $group_key: `co-${SECRET}`, $group_set: { name: `Company ${SECRET}` } },
      },
    ],
  });
  await eventually(async () => {
    const res = await c.get(`/api/environments/${projectId}/groups/find?group_type_index=0&group_key=co-${SECRET}`);
    expect(res.status).toBe(200);
  });
  const personId = await eventually(async () => {
    const res = await c.get(`/api/environments/${projectId}/persons?distinct_id=did-${SECRET}`);
    expect(res.body.results).toHaveLength(1);
    return res.body.results[0].id as number;
  });
  const action = (
    await c.post(`/api/environments/${projectId}/actions`, {
      name: `Action ${SECRET}`,
      steps: [{ event: 'signed up' }],
    })
  ).body;
  const exp = (
    await c.post(`/api/organizations/${org.id}/batch_exports`, {
      name: `Export ${SECRET}`,
      interval: 'hour',
      paused: true,
      destination: {
        type: 'S3',
        config: {
          bucket_name: `bucket-${SECRET}`,
          region: 'us-east-1',
          prefix: '',
          aws_access_key_id: `AKIA-${SECRET}`,
          aws_secret_access_key: `secret-${SECRET}`,
        },
      },
    })
  ).body;
  const cohort = (
    await c.post(`/api/environments/${projectId}/cohorts`, {
      name: `Cohort ${SECRET}`,
      is_static: true,
      _create_static_person_ids: [personId],
    })
  ).body;
  // A backfill of the export queues its runs at once: real backfill and run ids for their paths.
  const backfillId = (
    await c.post(`/api/organizations/${org.id}/batch_exports/${exp.id}/backfills`, {
      start_at: '2024-01-01T00:00:00Z',
      end_at: '2024-01-01T02:00:00Z',
    })
  ).body.backfill_id as string;
  const runId = (await c.get(`/api/organizations/${org.id}/batch_exports/${exp.id}/runs`)).body.results[0].id as string;
  victim = {
    cohortId: cohort.id,
    email: owner.email,
    key: owner.key,
    org,
    other,
    personId,
    actionId: action.id,
    exportId: exp.id,
    backfillId,
    runId,
    queryId: await completedQuery(owner.key, projectId),
    secrets: [SECRET, org.teams[0].api_token],
  };

  // The victim's own keys, each refused for its own reason (at most 10 per user).
  const revoked = await newKey({ email: owner.email });
  expect(await revokeApiKey(owner.email, `${revoked.key.slice(0, 4)}...${revoked.key.slice(-4)}`)).toBe(1);
  keys.revoked = revoked.key;
  for (const s of ['organization:write', 'organization_member:write'])
    keys[s] = (await newKey({ email: owner.email, scopes: [s] })).key;
  keys.readOnly = (await newKey({ email: owner.email, scopes: SCOPE_OBJECTS.map((o) => `${o}:read`) })).key;
  keys.otherProject = (await newKey({ email: owner.email, scopedTeams: [other.teams[0].id] })).key;
  keys.otherOrganization = (await newKey({ email: owner.email, scopedOrganizations: [other.id] })).key;
  // Someone else entirely, with an organization of their own.
  const stranger = await newKey({ email: uniqueEmail('stranger') });
  await api.as(stranger.key).post('/api/organizations', { name: 'Stranger org' });
  keys.stranger = stranger.key;

  scope = {
    userId: (await findUserIdByEmail(owner.email))!,
    organizationIds: [org.id, other.id],
    projectIds: [projectId, other.teams[0].id],
  };
  // Settled: the ingest worker has finished with the victim's person before the first snapshot.
  before = await snapshotTenant(scope);
  await eventually(async () => {
    await new Promise((r) => setTimeout(r, 200));
    const again = await snapshotTenant(scope);
    const same = diffSnapshots(before, again).length === 0;
    before = again;
    expect(same).toBe(true);
  });
}, 60_000);

/** The id of a query the owner ran in the background, once complete. */
async function completedQuery(key: string, projectId: number): Promise<string> {
  const c = api.as(key);
  const query = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'signed up' }] };
  const id = (await c.post(`/api/environments/${projectId}/query`, { query, refresh: 'force_async' })).body.query_status
    .id as string;
  await eventually(
    async () => expect((await c.get(`/api/environments/${projectId}/query/${id}`)).status).toBe(200),
    30_000,
  );
  return id;
}

/** The path of the route naming the victim's real resources. */
function pathFor(route: KeyRoute): string {
  const segments = route.path.split('/');
  return segments
    .map((segment, i) => {
      if (!segment.startsWith(':')) return segment;
      if (segment === ':project_id') return String(victim.org.teams[0]!.id);
      if (segment === ':organization_id') return victim.org.id;
      const collection = segments[i - 1];
      if (collection === 'organizations') return victim.org.id;
      if (collection === 'persons') return String(victim.personId);
      if (collection === 'actions') return String(victim.actionId);
      if (collection === 'batch_exports') return victim.exportId;
      if (collection === 'backfills') return victim.backfillId;
      if (collection === 'runs') return victim.runId;
      if (collection === 'query') return victim.queryId;
      if (collection === 'cohorts') return String(victim.cohortId);
      // A resource kind added later: auth and tenancy are decided before any lookup of it.
      return '1';
    })
    .join('/');
}

/** A body the owner's request would succeed with (destructive where the route is: refusing it is the point). */
function bodyFor(route: KeyRoute): unknown {
  const bodies: Record<string, unknown> = {
    organizations_create: { name: 'Created in the matrix' },
    persons_partial_update: { properties: { plan: 'hijacked' } },
    persons_split: {},
    persons_delete_property: { $unset: 'plan' },
    persons_bulk_delete: { distinct_ids: [`did-${SECRET}`] },
    persons_update_property: { key: 'plan', value: 'hijacked' },
    persons_reset_person_distinct_id: { distinct_id: `did-${SECRET}` },
    projects_partial_update: { name: 'Hijacked' },
    groups_types_update_metadata: [{ group_type_index: 0, name_singular: 'Hijacked' }],
    actions_create: { name: 'Hijacked', steps: [{ event: 'x' }] },
    actions_partial_update: { name: 'Hijacked' },
    insights_trend: { events: [{ id: 'signed up' }] },
    query_create: { query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'signed up' }] } },
    batch_exports_create: {
      name: 'Hijacked',
      interval: 'hour',
      paused: true,
      destination: {
        type: 'S3',
        config: {
          bucket_name: 'evil',
          region: 'us-east-1',
          prefix: '',
          role_arn: 'arn:aws:iam::123456789012:role/exports',
        },
      },
    },
    batch_exports_partial_update: { name: 'Hijacked', paused: false },
    batch_exports_backfill: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-01T02:00:00Z' },
    batch_exports_backfills_create: { start_at: '2024-01-02T00:00:00Z', end_at: '2024-01-02T02:00:00Z' },
    batch_exports_unpause: { backfill: true },
  };
  return (
    bodies[route.operationId] ??
    (route.method === 'POST' || route.method === 'PATCH' ? { name: 'Hijacked' } : undefined)
  );
}

/** The query string a GET needs to succeed for the owner (required parameters naming the victim's data). */
function queryFor(route: KeyRoute): string {
  if (route.operationId === 'insights_trend_retrieve') return `?events=${encodeURIComponent('[{"id":"signed up"}]')}`;
  if (route.operationId === 'persons_cohorts') return `?person_id=${victim.personId}`;
  if (route.operationId === 'groups_list') return '?group_type_index=0';
  if (route.operationId === 'groups_find' || route.operationId === 'groups_property_timeline')
    return `?group_type_index=0&group_key=co-${SECRET}`;
  return '';
}

async function send(route: KeyRoute, headers: Record<string, string>): Promise<Reply> {
  const query = queryFor(route);
  // A 503 (DynamoDB Local too slow on a loaded machine) is retried as a client would; refusals never are.
  const res = await retryingUnavailable(() =>
    api.as().request(route.method, pathFor(route) + query, { body: bodyFor(route), headers }),
  );
  for (const secret of victim.secrets)
    expect(res.text, `${route.operationId} leaked the victim's data`).not.toContain(secret);
  if (res.status >= 400) expectErrorShape(res.body);
  return res;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const otherObjectScope = (route: KeyRoute) => `${SCOPE_OBJECTS.find((o) => !route.scope.startsWith(`${o}:`))!}:write`;
function expectRefusal(res: Reply, status: number, code: string, detail: string): void {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ type: 'authentication_error', code, detail, attr: null });
}

describe.each(keyRoutePaths.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_, route) => {
  const tenancy = tenancyOf(route.path).kind;

  if (route.method === 'GET') {
    it("answers 200 to the owner's own key (the path names real resources)", async () => {
      expect(
        (await api.as().request('GET', pathFor(route) + queryFor(route), { headers: bearer(victim.key) })).status,
      ).toBe(200);
    });
  }

  it('answers 401 without a key', async () => {
    const res = await send(route, {});
    expectRefusal(res, 401, 'not_authenticated', 'Authentication credentials were not provided.');
  });

  it.each([
    ['an unknown well-formed key', 'phx_ThisKeyWasNeverIssuedByThisServiceAtAll0123456'],
    ['a malformed key', 'phx_%%% not even base64url'],
    ['a project token', 'phc_notAPersonalApiKeyButAProjectTokenXXXXXXXXX'],
  ])('answers 401 for %s', async (_, value) => {
    const res = await send(route, bearer(value));
    expectRefusal(res, 401, 'not_authenticated', 'Personal API key found in request Authorization header is invalid.');
  });

  it('answers 401 for a revoked key', async () => {
    const res = await send(route, bearer(keys.revoked!));
    expectRefusal(res, 401, 'not_authenticated', 'Personal API key found in request Authorization header is invalid.');
  });

  it(`answers 403 for the owner's key without ${route.scope}`, async () => {
    const res = await send(route, bearer(keys[otherObjectScope(route)]!));
    expectRefusal(res, 403, 'permission_denied', `API key missing required scope '${route.scope}'`);
  });

  if (route.scope.endsWith(':write')) {
    it("answers 403 for the owner's key with only read scopes", async () => {
      const res = await send(route, bearer(keys.readOnly!));
      expectRefusal(res, 403, 'permission_denied', `API key missing required scope '${route.scope}'`);
    });
  }

  if (tenancy === 'organization' || tenancy === 'project') {
    it("answers 404 for another organization's key", async () => {
      const res = await send(route, bearer(keys.stranger!));
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
    });
  } else {
    it("shows another organization's key nothing of the victim's", async () => {
      const res = await send(route, bearer(keys.stranger!));
      expect(res.status).toBeLessThan(300);
      if (route.method === 'POST' && res.body?.id) createdOrgs.push(res.body.id);
    });
  }

  if (tenancy === 'project') {
    it("answers 403 for the owner's key scoped to another project", async () => {
      const res = await send(route, bearer(keys.otherProject!));
      expectRefusal(
        res,
        403,
        'permission_denied',
        `API key does not have access to the requested project: ID ${victim.org.teams[0]!.id}.`,
      );
    });
  } else {
    it("answers 403 for the owner's key scoped to a project (organization-level route)", async () => {
      const res = await send(route, bearer(keys.otherProject!));
      expectRefusal(
        res,
        403,
        'permission_denied',
        'API keys with scoped projects are only supported on project-based endpoints.',
      );
    });
  }

  if (tenancy === 'organization' || tenancy === 'project') {
    it("answers 403 for the owner's key scoped to another organization", async () => {
      const res = await send(route, bearer(keys.otherOrganization!));
      expectRefusal(
        res,
        403,
        'permission_denied',
        `API key does not have access to the requested organization: ID ${victim.org.id}.`,
      );
    });
  } else {
    it("shows the owner's key scoped to another organization nothing of the victim organization's", async () => {
      const res = await send(route, bearer(keys.otherOrganization!));
      expect(res.status).toBeLessThan(300);
      if (route.method === 'GET') expect(res.body.results.map((o: { id: string }) => o.id)).toEqual([victim.other.id]);
      if (route.method === 'POST' && res.body?.id) createdOrgs.push(res.body.id);
    });
  }
});

describe('after the matrix', () => {
  it("left every item of the victim's unchanged", async () => {
    const after = await snapshotTenant(scope);
    // Organizations the victim's org-scoped key created through the collection route are its own, new memberships.
    const expected = (line: string) => createdOrgs.some((id) => line.startsWith(`+ USER#${scope.userId} | ORG#${id}`));
    expect(diffSnapshots(before, after).filter((line) => !expected(line))).toEqual([]);
    // And the owner still sees everything as it was.
    const c = api.as(victim.key);
    expect((await c.get(`/api/organizations/${victim.org.id}`)).body.name).toBe(`Victim Org ${SECRET}`);
    const person = (await c.get(`/api/environments/${victim.org.teams[0]!.id}/persons/${victim.personId}`)).body;
    expect(person.properties.plan).toBe(`plan-${SECRET}`);
  });
});
