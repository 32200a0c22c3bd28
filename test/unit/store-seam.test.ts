import { describe, expect, it } from 'vitest';
import { personsPosition } from '#shared/db/persons.ts';

describe('persons positions (opaque list cursors)', () => {
  const key = {
    pk: 'PERSON#7#12',
    sk: 'PERSON',
    parent_pk: 'PROJECT#7#PERSONS',
    parent_sk: '2024-01-01T00:00:00.000Z#000000000012',
  };

  it('reads back a position of the same project, as a string or as the key object older cursors carried', () => {
    const position = personsPosition(7, JSON.stringify(key));
    expect(typeof position).toBe('string');
    expect(personsPosition(7, key)).toBe(position);
  });

  it('refuses a position of another project, a forged shape or garbage', () => {
    expect(personsPosition(8, JSON.stringify(key))).toBeUndefined();
    expect(personsPosition(7, JSON.stringify({ ...key, extra: 1 }))).toBeUndefined();
    expect(personsPosition(7, '{not json')).toBeUndefined();
    expect(personsPosition(7, 12)).toBeUndefined();
    expect(personsPosition(7, undefined)).toBeUndefined();
  });
});
