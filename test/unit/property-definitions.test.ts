import { describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { MAX_RECORDED_KEY_BYTES, inferPropertyType, sightingsOf } from '#shared/domain/property-definitions.ts';
import { propertyDefinitionsQuery } from '#shared/schemas/definitions.ts';

const event = (name: string, properties: Record<string, unknown>) => ({
  uuid: 'u',
  event: name,
  distinct_id: 'd',
  project_id: 7,
  properties,
  timestamp: '2026-11-27T00:00:00.000Z',
  inserted_at: '2026-11-27T00:00:00.000Z',
});

describe('property definitions: what ingestion records', () => {
  it('infers the type of a first value as PostHog does', () => {
    expect(inferPropertyType(3.5)).toBe('Numeric');
    expect(inferPropertyType(Number.NaN)).toBeNull();
    expect(inferPropertyType(true)).toBe('Boolean');
    expect(inferPropertyType('False')).toBe('Boolean');
    expect(inferPropertyType('2026-11-27')).toBe('DateTime');
    expect(inferPropertyType('2026-11-27T10:00:00.123Z')).toBe('DateTime');
    expect(inferPropertyType('2026-13-45')).toBe('String');
    expect(inferPropertyType('12')).toBe('String');
    expect(inferPropertyType(null)).toBeNull();
    expect(inferPropertyType({ a: 1 })).toBeNull();
    expect(inferPropertyType([1])).toBeNull();
  });

  it("records each event key overall and per event name, person keys from $set/$set_once, and skips what a sort key can't hold", () => {
    const long = 'k'.repeat(MAX_RECORDED_KEY_BYTES + 1);
    const sightings = sightingsOf([
      event('view', { a: 1, $set: { plan: 'pro' }, $set_once: { first: '2026-01-01' }, $unset: ['x'], [long]: 1 }),
      event('e'.repeat(MAX_RECORDED_KEY_BYTES + 1), { b: 'x' }),
    ]);
    expect(sightings).toEqual([
      { projectId: 7, kind: 'event', key: 'a', type: 'Numeric' },
      { projectId: 7, kind: 'event', key: 'a', event: 'view', type: 'Numeric' },
      { projectId: 7, kind: 'person', key: 'first', type: 'DateTime' },
      { projectId: 7, kind: 'person', key: 'plan', type: 'String' },
      { projectId: 7, kind: 'event', key: 'b', type: 'String' },
    ]);
  });
});

describe('property definitions: the query', () => {
  const parse = (q: Record<string, string>) => v.safeParse(propertyDefinitionsQuery, q);
  const refusedAt = (q: Record<string, string>) => {
    const r = parse(q);
    return r.success ? null : r.issues[0].path?.map((p) => p.key).join('__');
  };

  it("reads PostHog's parameters", () => {
    const r = parse({
      event_names: '["a","b"]',
      properties: 'x,y,',
      type: 'group',
      group_type_index: '2',
      is_numerical: 'true',
    });
    expect(r.success && r.output).toEqual({
      limit: 100,
      offset: 0,
      type: 'group',
      group_type_index: 2,
      event_names: ['a', 'b'],
      properties: ['x', 'y'],
      is_numerical: true,
    });
    expect(parse({}).success && parse({}).output).toMatchObject({ type: 'event' });
  });

  it('refuses malformed and oversized lists, naming the field', () => {
    expect(refusedAt({ event_names: 'x' })).toBe('event_names');
    expect(refusedAt({ event_names: '[1]' })).toBe('event_names');
    expect(refusedAt({ event_names: JSON.stringify(Array.from({ length: 51 }, (_, i) => `e${i}`)) })).toBe(
      'event_names',
    );
    expect(refusedAt({ excluded_properties: '{}' })).toBe('excluded_properties');
    expect(refusedAt({ search: 'x'.repeat(401) })).toBe('search');
    expect(refusedAt({ properties: Array.from({ length: 201 }, (_, i) => `k${i}`).join(',') })).toBe('properties');
  });
});
