// Relative trend dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, newProject, useApi, type Client } from '../support/api.ts';

/**
 * Every environment-level path also answers under /api/projects/:project_id (functions/routes.ts,
 * projectLevelPath): the same operation on the same data, so both paths give the same answers and a
 * write through one is read through the other. Scope and tenant refusals at both paths: the matrices.
 */
const api = useApi();

let c: Client;
let projectId: number;
let environments: string;
let projects: string;

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  projectId = p.projectId;
  environments = `/api/environments/${projectId}`;
  projects = `/api/projects/${projectId}`;
  const batch = ['ada', 'bob', 'cy'].map((id, i) => ({
    event: 'signed up',
    distinct_id: id,
    timestamp: `2024-03-1${i}T09:00:00Z`,
    properties: { $set: { name: id, plan: 'free' } },
  }));
  expect((await api.as().post('/batch', { api_key: p.token, batch })).status).toBe(200);
  await eventually(async () => expect((await c.get(`${environments}/persons`)).body.count).toBe(3));
}, 30_000);

/** Both paths' answers to the same request: status and body. */
async function both(method: string, rest: string, body?: unknown) {
  const [viaEnvironments, viaProjects] = await Promise.all([
    c.request(method, `${environments}${rest}`, { body }),
    c.request(method, `${projects}${rest}`, { body }),
  ]);
  return { viaEnvironments, viaProjects };
}

describe('/api/projects/:project_id', () => {
  it('lists persons as the environments path does, paging under the path the client used', async () => {
    const { viaEnvironments, viaProjects } = await both('GET', '/persons?limit=1&offset=1');
    expect(viaProjects.status).toBe(200);
    const links = (body: any) => ({ next: new URL(body.next), previous: new URL(body.previous) });
    const { next, previous } = links(viaProjects.body);
    expect([next.pathname, next.searchParams.get('offset')]).toEqual([`${projects}/persons`, '2']);
    expect(previous.pathname).toBe(`${projects}/persons`);
    expect(links(viaEnvironments.body).next.pathname).toBe(`${environments}/persons`);
    const withoutLinks = ({ next: _, previous: __, ...rest }: any) => rest;
    expect(withoutLinks(viaProjects.body)).toEqual(withoutLinks(viaEnvironments.body));
    expect(viaProjects.body.results).toHaveLength(1);
    // Following `next` stays on the projects path and answers the next page.
    const following = await c.get(next.pathname + next.search);
    expect(following.status).toBe(200);
    expect(new URL(following.body.previous).pathname).toBe(`${projects}/persons`);
  });

  it('retrieves and updates a person, the change read back through the environments path', async () => {
    const person = (await c.get(`${environments}/persons?distinct_id=ada`)).body.results[0];
    const { viaEnvironments, viaProjects } = await both('GET', `/persons/${person.id}`);
    expect(viaProjects.status).toBe(200);
    expect(viaProjects.body).toEqual(viaEnvironments.body);
    const patched = await c.patch(`${projects}/persons/${person.id}/`, { properties: { plan: 'pro' } });
    expect(patched.status).toBe(200);
    expect(patched.body.properties).toMatchObject({ name: 'ada', plan: 'pro' });
    const reread = await c.get(`${environments}/persons/${person.id}`);
    expect(reread.body).toEqual(patched.body);
  });

  it('computes the same trend, GET and POST', async () => {
    const events = JSON.stringify([{ id: 'signed up' }]);
    const get = await both('GET', `/insights/trend?events=${encodeURIComponent(events)}&date_from=-7d`);
    expect(get.viaProjects.status).toBe(200);
    expect(get.viaProjects.body.result[0].data).toEqual([0, 0, 0, 0, 0, 1, 1, 1]);
    expect(get.viaProjects.body.result).toEqual(get.viaEnvironments.body.result);
    const post = await both('POST', '/insights/trend', {
      events: [{ id: 'signed up', math: 'dau' }],
      date_from: '-7d',
    });
    expect(post.viaProjects.status).toBe(200);
    expect(post.viaProjects.body.result).toEqual(post.viaEnvironments.body.result);
  });

  it('creates, lists, retrieves, updates and deletes actions, each visible through the other path', async () => {
    const created = await c.post(`${projects}/actions`, { name: 'Signed up', steps: [{ event: 'signed up' }] });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    expect((await c.get(`${environments}/actions/${id}`)).body).toEqual(created.body);
    const list = await both('GET', '/actions');
    expect(list.viaProjects.status).toBe(200);
    expect(list.viaProjects.body).toEqual(list.viaEnvironments.body);
    expect(list.viaProjects.body.results.map((a: any) => a.id)).toContain(id);
    const patched = await c.patch(`${projects}/actions/${id}`, { name: 'Converted' });
    expect(patched.body).toMatchObject({ id, name: 'Converted' });
    const retrieved = await both('GET', `/actions/${id}`);
    expect(retrieved.viaProjects.body).toEqual(patched.body);
    expect(retrieved.viaEnvironments.body).toEqual(patched.body);
    expect((await c.delete(`${projects}/actions/${id}/`)).status).toBe(204);
    expect((await c.get(`${environments}/actions/${id}`)).status).toBe(404);
  });

  it("reads and updates the project's settings", async () => {
    const { viaEnvironments, viaProjects } = await both('GET', '');
    expect(viaProjects.status).toBe(200);
    expect(viaProjects.body).toMatchObject({ id: projectId, timezone: 'UTC' });
    expect(viaProjects.body).toEqual(viaEnvironments.body);
    const patched = await c.patch(`${projects}/`, { week_start_day: 1 });
    expect(patched.body).toMatchObject({ id: projectId, week_start_day: 1 });
    expect((await c.get(environments)).body).toEqual(patched.body);
  });
});
