import { describe, expect, it } from 'vitest';
import { countActions } from '#shared/db/actions.ts';
import { batchPut } from '#shared/db/batch.ts';
import { keys } from '#shared/db/keys.ts';
import { MAX_ACTIONS_PER_PROJECT } from '#shared/domain/actions.ts';
import { expectErrorShape, newProject, useApi } from '../support/api.ts';

const api = useApi();

describe('project settings', () => {
  it('reads and updates name, timezone, week start and test account filters', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const path = `/api/environments/${p.projectId}/`;
    const before = await c.get(path);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({
      id: p.projectId,
      api_token: p.token,
      timezone: 'UTC',
      week_start_day: 0,
      name: 'Default project',
    });
    const res = await c.patch(path, {
      timezone: 'America/New_York',
      week_start_day: 1,
      test_account_filters: [{ key: 'email', value: '@acme.io', operator: 'not_icontains', type: 'person' }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ timezone: 'America/New_York', week_start_day: 1, name: 'Default project' });
    expect(res.body.test_account_filters).toEqual([
      { key: 'email', value: '@acme.io', operator: 'not_icontains', type: 'person' },
    ]);
    const org = await c.get(`/api/organizations/${p.org.id}`);
    expect(org.body.teams[0].timezone).toBe('America/New_York');
  });

  it.each([
    [{ timezone: 'Mars/Olympus' }, 'timezone'],
    [{ timezone: '' }, 'timezone'],
    [{ week_start_day: 3 }, 'week_start_day'],
    [{ test_account_filters: [{ key: 'x', operator: 'regex', value: '(' }] }, 'test_account_filters__0__value'],
    [{ name: '' }, 'name'],
  ])('rejects %j with 400 naming %s, changing nothing', async (body, attr) => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const res = await c.patch(`/api/environments/${p.projectId}`, body);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(attr);
    expect((await c.get(`/api/environments/${p.projectId}`)).body).toMatchObject({
      timezone: 'UTC',
      week_start_day: 0,
      name: 'Default project',
    });
  });
});

describe('actions', () => {
  it('creates, lists, retrieves, updates and deletes actions', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const base = `/api/environments/${p.projectId}/actions/`;
    const created = await c.post(base, {
      name: 'Signed up or paid',
      steps: [{ event: 'signed up' }, { event: 'paid', properties: [{ key: 'amount', value: 0, operator: 'gt' }] }],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: 1,
      name: 'Signed up or paid',
      steps: [{ event: 'signed up' }, { event: 'paid' }],
    });
    expect(created.body.steps[1].properties[0]).toMatchObject({ key: 'amount', operator: 'gt', type: 'event' });
    await c.post(base, { name: 'Any event', steps: [{ event: null }] });
    const list = await c.get(base);
    expect(list.body).toMatchObject({ count: 2, next: null });
    expect(list.body.results.map((a: any) => a.name)).toEqual(['Signed up or paid', 'Any event']);
    const patched = await c.patch(`${base}1/`, { name: 'Converted' });
    expect(patched.body).toMatchObject({ id: 1, name: 'Converted', steps: created.body.steps });
    expect((await c.delete(`${base}1/`)).status).toBe(204);
    expect((await c.get(`${base}1/`)).status).toBe(404);
    expect((await c.get(base)).body.count).toBe(1);
  });

  it(`a project has at most ${MAX_ACTIONS_PER_PROJECT} actions: the next is a 400 naming the cap, and nothing is stored`, async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const base = `/api/environments/${p.projectId}/actions/`;
    // Items standing in for actions (ids far from the counter's): the cap counts the project's action keys.
    await batchPut(
      Array.from({ length: MAX_ACTIONS_PER_PROJECT - 1 }, (_, i) => ({
        ...keys.action(p.projectId, 100_000 + i),
        entity: 'Action',
      })),
    );
    expect((await c.post(base, { name: 'Last', steps: [{ event: 'x' }] })).status).toBe(201);
    const over = await c.post(base, { name: 'Over', steps: [{ event: 'x' }] });
    expect([over.status, over.body.detail]).toEqual([
      400,
      `A project may have at most ${MAX_ACTIONS_PER_PROJECT} actions; delete one to create another.`,
    ]);
    expectErrorShape(over.body);
    expect(await countActions(p.projectId, MAX_ACTIONS_PER_PROJECT + 1)).toBe(MAX_ACTIONS_PER_PROJECT);
  });

  it('validates steps with the trend filter grammar', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const base = `/api/environments/${p.projectId}/actions/`;
    expect((await c.post(base, { name: 'x', steps: [] })).body).toMatchObject({ attr: 'steps' });
    expect(
      (
        await c.post(base, {
          name: 'x',
          steps: [{ event: 'a', properties: [{ key: 'k', operator: 'nope', value: 1 }] }],
        })
      ).body,
    ).toMatchObject({ attr: 'steps__0__properties__0__operator' });
    expect((await c.get(base)).body.count).toBe(0);
  });
});
