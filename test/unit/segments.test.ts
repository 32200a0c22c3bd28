import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  columnAttribute,
  decodeSegment,
  encodedSize,
  encodeSegment,
  readDictionaryColumn,
  type SegmentRow,
} from '#shared/segments/codec.ts';
import { addToTally, emptyTally, fingerprint, sameTally } from '#shared/segments/fingerprint.ts';

const DAY = Date.parse('2024-03-10T00:00:00Z');
const allKeys = (rows: readonly SegmentRow[]) => [...new Set(rows.flatMap((r) => Object.keys(r.properties)))];
/** Encode, then decode every column. */
const roundTrip = (rows: SegmentRow[]) =>
  decodeSegment(encodeSegment(rows, DAY), { properties: allKeys(rows), distinctIds: true });

describe('segment codec', () => {
  it('round-trips times, distinct ids and every kind of property value', () => {
    const rows: SegmentRow[] = [
      {
        distinct_id: 'a',
        t: DAY,
        properties: { $browser: 'Chrome', amount: 12.5, flag: true, none: null, nested: { x: [1, 'two'] } },
      },
      { distinct_id: 'b', t: DAY + 86_399_999, properties: {} },
      { distinct_id: 'a', t: DAY + 1, properties: { $browser: 'Safari', amount: '12.5', flag: false } },
    ];
    const decoded = roundTrip(rows);
    expect(decoded).toEqual(rows);
    // "12.5" the string and 12.5 the number are different values, as are true and "true".
    expect(typeof decoded[2]!.properties.amount).toBe('string');
    expect(decoded[0]!.properties.none).toBeNull();
    expect('none' in decoded[1]!.properties).toBe(false);
  });

  it('keeps a "__proto__" property as data', () => {
    const properties = JSON.parse('{"__proto__": "x", "a": 1}') as Record<string, unknown>;
    const [row] = roundTrip([{ distinct_id: 'd', t: DAY, properties }]);
    expect(Object.getPrototypeOf(row!.properties)).toBe(Object.prototype);
    expect(Object.keys(row!.properties).sort()).toEqual(['__proto__', 'a']);
    expect(JSON.stringify(row!.properties)).toBe(JSON.stringify(properties));
  });

  it('refuses a time outside its range', () => {
    expect(() => encodeSegment([{ distinct_id: 'a', t: DAY - 1, properties: {} }], DAY)).toThrow(RangeError);
  });

  it('round-trips any rows (property test)', () => {
    const json = fc.jsonValue({ maxDepth: 2 });
    const row = fc.record({
      distinct_id: fc.string({ maxLength: 8 }),
      t: fc.integer({ min: DAY, max: DAY + 86_399_999 }),
      properties: fc.dictionary(
        fc.constantFrom('$browser', '$os', 'amount', 'plan', '__proto__', 'constructor', ''),
        json,
        { maxKeys: 5 },
      ),
    });
    fc.assert(
      fc.property(fc.array(row, { maxLength: 40 }), (rows) => {
        const decoded = roundTrip(rows);
        // Key order within a row's properties may differ (columns are in first-seen order); values may not.
        const canonical = (rs: SegmentRow[]) =>
          JSON.stringify(
            rs.map((r) => [r.distinct_id, r.t, Object.entries(r.properties).sort(([a], [b]) => (a < b ? -1 : 1))]),
          );
        expect(canonical(decoded)).toBe(canonical(rows));
      }),
      { numRuns: 200 },
    );
  });

  it('is far smaller than one JSON item per event for repetitive properties', () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => ({
      distinct_id: `user-${i % 300}`,
      t: DAY + i * 40_000,
      properties: {
        $browser: ['Chrome', 'Safari', 'Firefox'][i % 3],
        $os: ['Windows', 'iOS'][i % 2],
        $current_url: `https://example.com/docs/${i % 40}`,
        $lib: 'web',
      },
    }));
    const json = rows.reduce((n, r) => n + JSON.stringify(r).length, 0);
    expect(encodedSize(encodeSegment(rows, DAY))).toBeLessThan(json / 10);
  });

  it('decodes only the projected columns', () => {
    const rows: SegmentRow[] = [
      { distinct_id: 'a', t: DAY + 5, properties: { $browser: 'Chrome', $os: 'iOS', amount: 3 } },
      { distinct_id: 'b', t: DAY + 9, properties: { $os: 'Windows' } },
    ];
    const encoded = encodeSegment(rows, DAY);
    expect(decodeSegment(encoded, { properties: ['$browser', 'missing'], distinctIds: false })).toEqual([
      { distinct_id: '', t: DAY + 5, properties: { $browser: 'Chrome' } },
      { distinct_id: '', t: DAY + 9, properties: {} },
    ]);
    // A reader that fetched only some column attributes decodes with the others absent.
    const fetched = { ...encoded, columns: new Map([['$os', encoded.columns.get('$os')]]) };
    expect(
      decodeSegment(fetched, { properties: ['$os', 'amount'], distinctIds: true }).map((r) => [
        r.distinct_id,
        r.properties,
      ]),
    ).toEqual([
      ['a', { $os: 'iOS' }],
      ['b', { $os: 'Windows' }],
    ]);
  });

  describe('column forms', () => {
    const column = (values: unknown[]) =>
      encodeSegment(
        values.map((v, i) => ({ distinct_id: 'a', t: DAY + i, properties: v === undefined ? {} : { v } })),
        DAY,
      ).columns.get('v')!;
    const firstWord = (blob: Uint8Array) => gunzipSync(blob).readUInt32LE(0);
    const NUMBERS = 0x80000000;
    const NARROW = 0x40000000;

    it('stores decimals as scaled integers (no JSON to parse) and reads back the very same numbers', () => {
      const prices = Array.from({ length: 5_000 }, (_, i) => ((i % 2 ? -1 : 1) * ((i * 7919) % 50_000)) / 100);
      const blob = column([...prices, undefined, 3]);
      expect(firstWord(blob) & NUMBERS).toBeTruthy();
      const { dictionary, indexes } = readDictionaryColumn(blob, prices.length + 2);
      expect(Array.from(indexes, (i) => (i === 0 ? undefined : dictionary[i - 1]))).toEqual([...prices, undefined, 3]);
    });

    it('keeps JSON for values that are not all decimals of at most 6 places under 2^31', () => {
      for (const values of [[1, '1'], [0.1 + 0.2], [2 ** 31], [1e-7], [1, null]]) {
        const blob = column(values);
        expect(firstWord(blob) & NUMBERS, JSON.stringify(values)).toBe(0);
        const { dictionary, indexes } = readDictionaryColumn(blob, values.length);
        expect(Array.from(indexes, (i) => dictionary[i - 1])).toEqual(values);
      }
    });

    it('reads any numbers as JSON would have stored them (property test)', () => {
      fc.assert(
        fc.property(
          fc.array(fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0.5, -0, 12.34)), { minLength: 1 }),
          (values) => {
            const { dictionary, indexes } = readDictionaryColumn(column(values), values.length);
            const read = Array.from(indexes, (i) => dictionary[i - 1]);
            expect(read).toEqual(JSON.parse(JSON.stringify(values)));
          },
        ),
        { numRuns: 300 },
      );
    });

    it('narrows indexes to 16 bits below 65,535 distinct values and keeps 32 bits above', () => {
      const few = column(Array.from({ length: 70_000 }, (_, i) => `v${i % 65_534}`));
      const many = column(Array.from({ length: 70_000 }, (_, i) => `v${i}`));
      expect(firstWord(few) & NARROW).toBeTruthy();
      expect(firstWord(many) & NARROW).toBe(0);
      for (const [blob, distinct] of [
        [few, 65_534],
        [many, 70_000],
      ] as const) {
        const { dictionary, indexes } = readDictionaryColumn(blob, 70_000);
        expect(indexes[69_999]).toBe((69_999 % distinct) + 1);
        expect(dictionary[indexes[69_999]! - 1]).toBe(`v${69_999 % distinct}`);
      }
    });

    it('still reads columns written before the flags (JSON dictionary, u32 indexes)', () => {
      const json = Buffer.from(JSON.stringify(['Chrome', 12.5]));
      const at = Math.ceil((4 + json.length) / 4) * 4;
      const raw = Buffer.alloc(at + 12);
      raw.writeUInt32LE(json.length, 0);
      json.copy(raw, 4);
      for (const [i, index] of [2, 0, 1].entries()) raw.writeUInt32LE(index, at + 4 * i);
      const { dictionary, indexes } = readDictionaryColumn(gzipSync(raw), 3);
      expect(dictionary).toEqual(['Chrome', 12.5]);
      expect([...indexes]).toEqual([2, 0, 1]);
    });
  });

  it('names columns after their keys, hashing long ones', () => {
    expect(columnAttribute('$browser')).toBe('p:$browser');
    const long = 'k'.repeat(300);
    expect(columnAttribute(long)).toMatch(/^h:[0-9a-f]{64}$/);
    expect(columnAttribute(long)).toBe(columnAttribute('k'.repeat(300)));
    expect(columnAttribute(long)).not.toBe(columnAttribute('k'.repeat(301)));
  });
});

describe('event fingerprints and tallies', () => {
  it('are 24-bit, deterministic and spread', () => {
    const uuids = Array.from({ length: 5_000 }, (_, i) => `0190c3e0-0000-7000-8000-${String(i).padStart(12, '0')}`);
    const prints = uuids.map(fingerprint);
    expect(prints.every((p) => Number.isInteger(p) && p >= 0 && p < 2 ** 24)).toBe(true);
    expect(fingerprint(uuids[0]!)).toBe(prints[0]);
    expect(new Set(prints).size).toBeGreaterThan(4_990);
  });

  it('tell a swapped event apart even when the count is unchanged', () => {
    const a = emptyTally();
    const b = emptyTally();
    for (const u of ['u1', 'u2', 'u3']) addToTally(a, u);
    for (const u of ['u1', 'u2', 'u4']) addToTally(b, u);
    expect(a.count).toBe(b.count);
    expect(sameTally(a, b)).toBe(false);
    const c = emptyTally();
    for (const u of ['u3', 'u1', 'u2']) addToTally(c, u);
    expect(sameTally(a, c)).toBe(true);
    expect(sameTally(undefined, emptyTally())).toBe(true);
  });
});
