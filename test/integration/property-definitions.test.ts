import { describe, expect, it } from 'vitest';
import { eventually, newKey, newProject, useApi } from '../support/api.ts';

const api = useApi();
const hoursAgo = (n: number) => new Date(Date.now() - n * 3_600_000).toISOString();
const names = (body: any) => body.results.map((d: any) => d.name);

describe('property_definitions', () => {
  it("lists event, person and group keys as ingestion saw them, in PostHog's shape", async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const batch = [
      {
        event: '$pageview',
        distinct_id: 'u1',
        timestamp: hoursAgo(1),
        properties: { $browser: 'Chrome', $screen_width: 1280, $set: { plan: 'pro', seats: 3 } },
      },
      {
        event: 'signed up',
        distinct_id: 'u2',
        timestamp: hoursAgo(2),
        properties: { referrer: 'ad', trial: true, signed_at: '2026-11-01T10:00:00Z', $browser: 'Safari' },
      },
      {
        event: '$groupidentify',
        distinct_id: '$company_acme',
        timestamp: hoursAgo(1),
        properties: { $group_type: 'company', $group_key: 'acme', $group_set: { industry: 'tech' } },
      },
    ];
    expect((await api.as().post('/batch', { api_key: p.token, batch })).status).toBe(200);
    const path = `/api/projects/${p.projectId}/property_definitions/`;
    // Today's events, before any compaction: the keys are there once the ingest worker has run.
    const all = await eventually(async () => {
      const res = await c.get(path);
      expect(res.status).toBe(200);
      // Every event's keys, all of them (the events may reach the worker in different stream batches,
      // and an event's keys are written in more than one request): the paging below slices this list.
      expect(names(res.body)).toEqual(
        expect.arrayContaining([
          '$browser',
          '$screen_width',
          'referrer',
          'signed_at',
          'trial',
          '$group_key',
          '$group_type',
          '$group_set',
        ]),
      );
      return res.body;
    }, 60_000);
    expect(all).toMatchObject({ next: null, previous: null });
    expect(all.count).toBe(all.results.length);
    expect(names(all)).not.toContain('$set');
    const byName = Object.fromEntries(all.results.map((d: any) => [d.name, d]));
    expect(byName.$browser).toMatchObject({
      id: '$browser',
      property_type: 'String',
      is_numerical: false,
      is_seen_on_filtered_events: null,
      tags: [],
    });
    expect(byName.$screen_width).toMatchObject({ property_type: 'Numeric', is_numerical: true });
    expect(byName.trial.property_type).toBe('Boolean');
    expect(byName.signed_at.property_type).toBe('DateTime');

    // event_names: keys seen on those events first and marked; filter_by_event_names keeps only them.
    const onSignup = await c.get(`${path}?event_names=${encodeURIComponent('["signed up"]')}`);
    expect(onSignup.status).toBe(200);
    const seen = onSignup.body.results.filter((d: any) => d.is_seen_on_filtered_events).map((d: any) => d.name);
    expect(seen).toEqual(expect.arrayContaining(['$browser', 'referrer', 'signed_at', 'trial']));
    expect(seen).not.toContain('$screen_width');
    expect(names(onSignup.body).slice(0, seen.length)).toEqual(seen);
    expect(names(onSignup.body)).toContain('$screen_width');
    const only = await c.get(`${path}?event_names=${encodeURIComponent('["signed up"]')}&filter_by_event_names=true`);
    expect(names(only.body)).toEqual(seen);

    // search, properties, is_numerical, paging.
    expect(names((await c.get(`${path}?search=SCREEN`)).body)).toEqual(['$screen_width']);
    expect(names((await c.get(`${path}?properties=trial,referrer`)).body)).toEqual(['referrer', 'trial']);
    const numerical = names((await c.get(`${path}?is_numerical=true`)).body);
    expect(numerical).toContain('$screen_width');
    expect(numerical).not.toContain('$browser');
    const paged = await c.get(`${path}?limit=2&offset=1`);
    expect(names(paged.body)).toEqual(names(all).slice(1, 3));
    expect(paged.body.next).toContain('offset=3');
    expect(paged.body.previous).not.toBeNull();

    // Person keys from $set; group keys of one type from the group counts.
    const persons = await eventually(async () => {
      const res = await c.get(`/api/environments/${p.projectId}/property_definitions/?type=person`);
      expect(names(res.body)).toEqual(expect.arrayContaining(['plan', 'seats']));
      return res.body;
    }, 60_000);
    expect(persons.results.find((d: any) => d.name === 'seats').property_type).toBe('Numeric');
    const groups = await eventually(async () => {
      const res = await c.get(`${path}?type=group&group_type_index=0`);
      expect(names(res.body)).toEqual(['industry']);
      return res.body;
    }, 60_000);
    expect(groups.results[0].property_type).toBeNull();
    expect(names((await c.get(`${path}?type=group&group_type_index=1`)).body)).toEqual([]);
  });

  it('records person keys an API edit sets', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const batch = [{ event: '$pageview', distinct_id: 'edited', timestamp: hoursAgo(1) }];
    expect((await api.as().post('/batch', { api_key: p.token, batch })).status).toBe(200);
    const person = await eventually(async () => {
      const res = await c.get(`/api/environments/${p.projectId}/persons/?distinct_id=edited`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0];
    }, 60_000);
    const patched = await c.patch(`/api/environments/${p.projectId}/persons/${person.id}/`, {
      properties: { favourite_colour: 'blue' },
    });
    expect(patched.status).toBe(200);
    const res = await c.get(`/api/environments/${p.projectId}/property_definitions/?type=person`);
    expect(names(res.body)).toContain('favourite_colour');
  });

  it('refuses hostile input with a 400 naming the field, wrong scopes with 403, other projects with 404', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const path = `/api/environments/${p.projectId}/property_definitions/`;
    const refused = async (query: string, attr: string) => {
      const res = await c.get(`${path}?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', attr });
    };
    await refused(`search=${'x'.repeat(401)}`, 'search');
    const many = JSON.stringify(Array.from({ length: 51 }, (_, i) => `e${i}`));
    await refused(`event_names=${encodeURIComponent(many)}`, 'event_names');
    await refused('event_names=not-json', 'event_names');
    await refused(`event_names=${encodeURIComponent('[1]')}`, 'event_names');
    await refused('limit=1001', 'limit');
    await refused('type=session', 'type');
    await refused('type=group', 'group_type_index');
    await refused('type=group&group_type_index=5', 'group_type_index');
    await refused(`properties=${Array.from({ length: 201 }, (_, i) => `k${i}`).join(',')}`, 'properties');
    await refused('is_numerical=maybe', 'is_numerical');

    const readOnly = await newKey({ email: p.email, scopes: ['property_definition:read'] });
    expect((await api.as(readOnly.key).get(path)).status).toBe(200);
    const wrong = await newKey({ email: p.email, scopes: ['event_definition:read'] });
    expect((await api.as(wrong.key).get(path)).status).toBe(403);
    const other = await newProject(api.as);
    expect((await api.as(other.key).get(path)).status).toBe(404);
  });
});
