import { describe, expect, it } from 'vitest';
import { newerSet } from '#shared/domain/group-ingest.ts';
import { groupKeyOf, groupTypesNamed, isGroupTypeName } from '#shared/domain/group-types.ts';
import { hasControlCharacter } from '#shared/schemas/groups.ts';

describe('groupTypesNamed', () => {
  it('names the $groups types and, on $groupidentify, its own type first', () => {
    expect(
      groupTypesNamed('$groupidentify', { $group_type: 'company', $groups: { workspace: 'w', company: 'a' } }),
    ).toEqual(['company', 'workspace', 'company']);
    expect(groupTypesNamed('viewed', { $groups: { company: 42 } })).toEqual(['company']);
  });

  it('skips keys that are no group key, and events without person processing (as PostHog)', () => {
    expect(
      groupTypesNamed('viewed', { $groups: { a: '', b: null, c: { x: 1 }, d: 'x'.repeat(401), e: 'ok' } }),
    ).toEqual(['e']);
    expect(groupTypesNamed('viewed', { $groups: ['company'] })).toEqual([]);
    expect(groupTypesNamed('viewed', { $groups: { company: 'a' }, $process_person_profile: false })).toEqual([]);
    expect(groupTypesNamed('viewed', { $group_type: 'company' })).toEqual([]);
    // Type names, like keys, are at most 400 characters.
    expect(groupTypesNamed('viewed', { $groups: { ['t'.repeat(401)]: 'a', ['t'.repeat(400)]: 'b' } })).toEqual([
      't'.repeat(400),
    ]);
  });
});

describe('group type names refuse control characters', () => {
  const controls = ['\u0000', '\t', '\n', '\r', '\u001b', '\u007f', '\u0085', '\u009f'];

  it('hasControlCharacter: C0, DEL and C1 (Unicode Cc), nothing else', () => {
    for (const c of controls) expect([c, hasControlCharacter(`com${c}pany`)]).toEqual([c, true]);
    for (const ok of ['company', 'Société', 'チーム', '🏢 org', 'a b', '\u00a0nbsp', '\u2028'])
      expect([ok, hasControlCharacter(ok)]).toEqual([ok, false]);
  });

  it('capture assigns no type to such a name, in $groups or as a $groupidentify type, and keeps the others', () => {
    for (const c of controls) {
      const bad = `com${c}pany`;
      expect(isGroupTypeName(bad)).toBe(false);
      expect(groupTypesNamed('viewed', { $groups: { [bad]: 'acme', workspace: 'w' } })).toEqual(['workspace']);
      expect(groupTypesNamed('$groupidentify', { $group_type: bad, $groups: { company: 'a' } })).toEqual(['company']);
    }
    expect(isGroupTypeName('company')).toBe(true);
  });
});

describe('groupKeyOf', () => {
  it('takes strings and finite numbers (as text)', () => {
    expect(groupKeyOf('acme')).toBe('acme');
    expect(groupKeyOf(7)).toBe('7');
    expect(groupKeyOf(Number.NaN)).toBeUndefined();
    expect(groupKeyOf(true)).toBeUndefined();
  });
});

describe('newerSet', () => {
  it('keeps only the keys no later event has set, so arrival order does not matter', () => {
    const last = { plan: '2026-01-02T00:00:00.000Z', name: '2025-12-01T00:00:00.000Z' };
    expect(newerSet({ plan: 'free', name: 'Acme', size: 3 }, last, '2026-01-01T00:00:00.000Z')).toEqual({
      name: 'Acme',
      size: 3,
    });
    expect(newerSet({ plan: 'pro' }, last, '2026-01-02T00:00:00.000Z')).toEqual({ plan: 'pro' });
  });
});
