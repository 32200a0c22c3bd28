import { randomUUID } from 'node:crypto';
import { PostHog } from 'posthog-node';
import { describe, expect, it } from 'vitest';
import { getEvent } from '#shared/db/events.ts';
import { listGroupChanges } from '#shared/db/groups.ts';
import { personIdOf } from '#shared/db/persons.ts';
import { eventually, expectErrorShape, newProject, useApi } from '../support/api.ts';

const api = useApi();

const identify = (type: string, key: string, set: Record<string, unknown>, extra = {}) => ({
  event: '$groupidentify',
  distinct_id: `$${type}_${key}`,
  properties: { $group_type: type, $group_key: key, $group_set: set, ...extra },
});

describe('groups', () => {
  it('posthog-node groupIdentify and capture with groups: the group, its type and its events', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    const client = new PostHog(token, { host: api.baseUrl, flushAt: 10, flushInterval: 0, fetchRetryCount: 0 });
    const errors: unknown[] = [];
    client.on('error', (e) => errors.push(e));
    client.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { name: 'Acme', plan: 'free' } });
    client.capture({ distinctId: 'ada', event: 'report opened', groups: { company: 'acme', workspace: 'ws-1' } });
    // posthog-node stamps events with the time of the call: keep the two $group_set apart by at least a millisecond.
    await new Promise((r) => setTimeout(r, 5));
    client.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { plan: 'enterprise' } });
    client.groupIdentify({ groupType: 'company', groupKey: 'globex', properties: { name: 'Globex' } });
    await client.shutdown();
    expect(errors).toEqual([]);

    const types = (await c.get(`/api/projects/${projectId}/groups_types`)).body;
    expect(types.map((t: any) => [t.group_type, t.group_type_index, t.name_singular, t.name_plural])).toEqual([
      ['company', 0, null, null],
      ['workspace', 1, null, null],
    ]);

    const acme = await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/groups/find?group_type_index=0&group_key=acme`);
      expect(res.status).toBe(200);
      expect(res.body.group_properties).toEqual({ name: 'Acme', plan: 'enterprise' });
      return res.body;
    });
    expect(Object.keys(acme).sort()).toEqual(['created_at', 'group_key', 'group_properties', 'group_type_index']);

    const list = await eventually(async () => {
      const res = await c.get(`/api/projects/${projectId}/groups?group_type_index=0`);
      expect(res.body.results.map((g: any) => g.group_key).sort()).toEqual(['acme', 'globex']);
      return res.body;
    });
    expect(list.next).toBeNull();
    expect(list.previous).toBeNull();
    // The workspace was only named on an event: a type, but no group until it is identified (as PostHog).
    expect((await c.get(`/api/projects/${projectId}/groups?group_type_index=1`)).body.results).toEqual([]);

    const defs = (await c.get(`/api/projects/${projectId}/groups/property_definitions`)).body;
    expect(defs).toEqual({
      '0': [
        { name: 'name', count: 2 },
        { name: 'plan', count: 1 },
      ],
    });

    // Events carry the project's $group_N; a $groupidentify creates no person for its `$company_acme` distinct id.
    const events = await c.post(`/api/environments/${projectId}/query`, {
      query: { kind: 'EventsQuery', select: ['uuid', 'event'], event: 'report opened' },
    });
    const uuid = events.body.results[0][0] as string;
    const stored = await getEvent(projectId, uuid);
    expect(stored?.properties).toMatchObject({ $group_0: 'acme', $group_1: 'ws-1' });
    await eventually(async () => expect(await personIdOf(projectId, 'ada')).toBeDefined());
    expect(await personIdOf(projectId, '$company_acme')).toBeUndefined();

    // The history of $group_set, as person changes are kept.
    const changes = await listGroupChanges(projectId, 0, 'acme');
    expect(changes.map((ch) => [ch.kind, ch.changed.sort(), ch.properties])).toEqual([
      ['create', ['name', 'plan'], { name: 'Acme', plan: 'free' }],
      ['update', ['plan'], { name: 'Acme', plan: 'enterprise' }],
    ]);
  }, 90_000);

  it("serves a group's properties timeline over a range, 404 for a group never identified", async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    const at = (day: number) => `2026-03-0${day}T10:00:00.000Z`;
    const batch = [1, 2, 3].map((day) => ({
      ...identify('company', 'acme', { plan: `plan-${day}` }),
      timestamp: at(day),
    }));
    expect((await api.as().post('/batch', { api_key: token, batch })).status).toBe(200);
    const path = `/api/environments/${projectId}/groups/property_timeline`;
    const all = await eventually(async () => {
      const res = await c.get(`${path}?group_type_index=0&group_key=acme`);
      expect(res.status).toBe(200);
      expect(res.body.points).toHaveLength(3);
      return res.body;
    }, 30_000);
    expect(all.points.map((p: any) => [p.timestamp, p.properties.plan, p.changed_keys])).toEqual([
      [at(1), 'plan-1', ['plan']],
      [at(2), 'plan-2', ['plan']],
      [at(3), 'plan-3', ['plan']],
    ]);
    expect(all.crucial_property_keys).toEqual(['plan']);
    // Both ends inclusive, read as a key range (not filtered after reading the whole history).
    const middle = await c.get(`${path}?group_type_index=0&group_key=acme&from=${at(2)}&to=${at(2)}`);
    expect(middle.body.points.map((p: any) => p.properties.plan)).toEqual(['plan-2']);
    const later = await c.get(
      `${path}?group_type_index=0&group_key=acme&from=${encodeURIComponent('2026-03-02T00:00:00+00:00')}`,
    );
    expect(later.body.points.map((p: any) => p.properties.plan)).toEqual(['plan-2', 'plan-3']);
    expect((await c.get(`${path}?group_type_index=0&group_key=nobody`)).status).toBe(404);
    const bad = await c.get(`${path}?group_type_index=0&group_key=acme&from=yesterday`);
    expect([bad.status, bad.body.attr]).toEqual([400, 'from']);
  });

  it('assigns at most 5 types in order of first use; a sixth is dropped, the batch still accepted', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    const names = ['t0', 't1', 't2', 't3', 't4', 't5'];
    const sixth = randomUUID();
    const res = await api.as().post('/batch', {
      api_key: token,
      batch: [
        ...names.map((t) => identify(t, `${t}-key`, { n: t })),
        { event: 'used', distinct_id: 'u', uuid: sixth, properties: { $groups: { t5: 'x', t4: 'y' } } },
      ],
    });
    expect(res.status).toBe(200);
    const types = (await c.get(`/api/environments/${projectId}/groups_types`)).body;
    expect(types.map((t: any) => [t.group_type, t.group_type_index])).toEqual(names.slice(0, 5).map((t, i) => [t, i]));
    const stored = await getEvent(projectId, sixth);
    expect(stored?.properties.$group_4).toBe('y');
    expect(Object.keys(stored!.properties).filter((k) => k.startsWith('$group_'))).toEqual(['$group_4']);
    await eventually(async () => {
      const found = await c.get(`/api/environments/${projectId}/groups/find?group_type_index=4&group_key=t4-key`);
      expect(found.status).toBe(200);
    });
    // The dropped type's group is nowhere (no index to hold it).
    for (let i = 0; i <= 4; i += 1)
      expect(
        (await c.get(`/api/environments/${projectId}/groups?group_type_index=${i}&search=t5-key`)).body.results,
      ).toEqual([]);
  });

  it('names group types with update_metadata (a list, as PostHog)', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    await api.as().post('/batch', { api_key: token, batch: [identify('company', 'acme', {})] });
    const res = await c.patch(`/api/projects/${projectId}/groups_types/update_metadata`, [
      { group_type_index: 0, name_singular: 'Company', name_plural: 'Companies' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject([{ group_type: 'company', name_singular: 'Company', name_plural: 'Companies' }]);
    expect((await c.get(`/api/projects/${projectId}/groups_types`)).body[0].name_plural).toBe('Companies');
    const missing = await c.patch(`/api/projects/${projectId}/groups_types/update_metadata`, [
      { group_type_index: 3, name_singular: 'X' },
    ]);
    expect(missing.status).toBe(404);
  });

  it('refuses group type names with control characters: capture keeps the event without the type, the API answers 400', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    const viewed = randomUUID();
    const batch = [
      {
        event: 'viewed',
        distinct_id: 'ada',
        uuid: viewed,
        properties: { $groups: { 'com\npany': 'acme', team: 't1' } },
      },
      identify('bad\u0000type', 'k1', { name: 'Hidden' }),
      identify('esc\u001b[31m', 'k2', { name: 'Red' }),
      identify('team', 't1', { name: 'Team one' }),
    ];
    expect((await api.as().post('/batch', { api_key: token, batch })).status).toBe(200);
    // The valid type is assigned and its group made; the refused names are neither.
    await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/groups/find?group_type_index=0&group_key=t1`);
      expect(res.body.group_properties).toEqual({ name: 'Team one' });
    }, 20_000);
    const types = (await c.get(`/api/projects/${projectId}/groups_types`)).body;
    expect(types.map((t: any) => t.group_type)).toEqual(['team']);
    const stored = await eventually(async () => (await getEvent(projectId, viewed))!);
    expect(stored.properties).toMatchObject({ $group_0: 't1', $groups: { 'com\npany': 'acme', team: 't1' } });
    expect(Object.keys(stored.properties).filter((k) => k.startsWith('$group_'))).toEqual(['$group_0']);

    for (const row of [
      { group_type_index: 0, name_singular: 'Te\u0000am' },
      { group_type_index: 0, name_plural: 'Te\nams' },
      { group_type_index: 0, name_singular: '\u001b[2JTeam' },
    ]) {
      const res = await c.patch(`/api/projects/${projectId}/groups_types/update_metadata`, [row]);
      expect(res.status).toBe(400);
      expectErrorShape(res.body);
      expect(res.body).toMatchObject({
        type: 'validation_error',
        detail: expect.stringMatching(/control characters/),
        attr: expect.stringMatching(/name_(singular|plural)$/),
      });
    }
    const after = (await c.get(`/api/projects/${projectId}/groups_types`)).body;
    expect([after[0].name_singular, after[0].name_plural]).toEqual([null, null]);
    const named = await c.patch(`/api/projects/${projectId}/groups_types/update_metadata`, [
      { group_type_index: 0, name_singular: 'Équipe 🏢', name_plural: ' Teams ' },
    ]);
    expect(named.body[0]).toMatchObject({ name_singular: 'Équipe 🏢', name_plural: 'Teams' });
  });

  it('lists a type newest first, 100 a page with a cursor; searches keys exactly and properties by text', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    const base = Date.parse('2026-01-01T00:00:00Z');
    const batch = Array.from({ length: 105 }, (_, i) => ({
      ...identify('company', `co-${i}`, { name: i === 42 ? 'The Answer Inc' : `Company ${i}` }),
      timestamp: new Date(base + i * 60_000).toISOString(),
    }));
    expect((await api.as().post('/batch', { api_key: token, batch })).status).toBe(200);
    await eventually(async () => {
      const defs = (await c.get(`/api/environments/${projectId}/groups/property_definitions`)).body;
      expect(defs['0']).toEqual([{ name: 'name', count: 105 }]);
    }, 30_000);
    const first = (await c.get(`/api/environments/${projectId}/groups?group_type_index=0`)).body;
    expect(first.results).toHaveLength(100);
    expect(first.next).toContain('cursor=');
    expect(first.results[0].group_key).toBe('co-104');
    const next = new URL(first.next);
    const second = (await c.get(`${next.pathname}${next.search}`)).body;
    expect(second.results.map((g: any) => g.group_key)).toEqual(['co-4', 'co-3', 'co-2', 'co-1', 'co-0']);
    expect(second.next).toBeNull();

    const search = (q: string) => c.get(`/api/environments/${projectId}/groups?group_type_index=0&search=${q}`);
    expect((await search('answer')).body.results.map((g: any) => g.group_key)).toEqual(['co-42']);
    expect((await search('CO-7')).body.results.map((g: any) => g.group_key)).toEqual(['co-7']);

    const missing = await c.get(`/api/environments/${projectId}/groups`);
    expect(missing.status).toBe(400);
    expect(missing.body.attr).toBe('group_type_index');
    expect((await c.get(`/api/environments/${projectId}/groups?group_type_index=0&cursor=nonsense`)).status).toBe(400);
    expect((await c.get(`/api/environments/${projectId}/groups/find?group_type_index=0&group_key=nope`)).status).toBe(
      404,
    );
  }, 90_000);
});
