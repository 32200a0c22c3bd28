import { describe, expect, it } from 'vitest';
import {
  cellOf,
  compareKeys,
  compareValues,
  jsonValue,
  propertyPathValue,
  TopK,
  truthy,
  typeOf,
} from '#shared/domain/query/expressions.ts';
import { type Expr, HogDate, HogDateTime, HogTuple } from '#shared/hogql/index.ts';

const field: Expr = { kind: 'field', chain: ['properties', 'x'] };
const call = (name: string): Expr => ({ kind: 'call', name, args: [] });

describe('values as answer cells', () => {
  it('DateTime in its zone with the offset, Date as a day, tuples as arrays, non-finite numbers as null', () => {
    const t = Date.parse('2024-03-10T12:00:00Z');
    expect(cellOf(new HogDateTime(t, 'UTC'))).toBe('2024-03-10T12:00:00+00:00');
    expect(cellOf(new HogDateTime(t, 'America/New_York'))).toBe('2024-03-10T08:00:00-04:00');
    expect(cellOf(new HogDate(19_792))).toBe('2024-03-10');
    expect(cellOf(new HogTuple(['a', 1, null]))).toEqual(['a', 1, null]);
    expect(cellOf([1, [2, new HogDate(0)]])).toEqual([1, [2, '1970-01-01']]);
    expect([Number.NaN, Number.POSITIVE_INFINITY, 1.5, 'x', true, null].map(cellOf)).toEqual([
      null,
      null,
      1.5,
      'x',
      true,
      null,
    ]);
  });

  it('property values keep their JSON type; objects read as their JSON text; nested keys by path', () => {
    expect([jsonValue(3), jsonValue('a'), jsonValue(false), jsonValue(undefined)]).toEqual([3, 'a', false, null]);
    expect(jsonValue({ a: [1] })).toBe('{"a":[1]}');
    const props = { $a: { b: { c: 7 } }, s: '{"k":"v"}', list: [1, 2] };
    expect(propertyPathValue(props, ['$a', 'b', 'c'])).toBe(7);
    expect(propertyPathValue(props, ['$a', 'b'])).toBe('{"c":7}');
    expect(propertyPathValue(props, ['s', 'k'])).toBe('v');
    expect(propertyPathValue(props, ['$a', 'nope'])).toBeNull();
    expect(propertyPathValue(props, ['list', '0'])).toBeNull();
    expect(propertyPathValue(props, ['__proto__'])).toBeNull();
  });

  it('truthy as a ClickHouse filter: true and non-zero numbers', () => {
    expect([true, 1, -2, 0.5].every(truthy)).toBe(true);
    expect([false, 0, null, 'yes', Number.NaN].some(truthy)).toBe(false);
  });
});

describe('types', () => {
  it('fixed by the function, else from the values; Nullable when a value is null', () => {
    expect(typeOf(call('count'), [3, 4])).toBe('UInt64');
    expect(typeOf(call('avg'), [3])).toBe('Float64');
    expect(typeOf(call('avg'), [null])).toBe('Nullable(Float64)');
    expect(typeOf(field, [1, 2])).toBe('Int64');
    expect(typeOf(field, [1, 2.5])).toBe('Float64');
    expect(typeOf(field, ['a', null])).toBe('Nullable(String)');
    expect(typeOf(field, ['a', 1])).toBe('String');
    expect(typeOf(field, [true])).toBe('Bool');
    expect(typeOf(field, [new HogDateTime(0, 'Europe/Paris')])).toBe("DateTime64(6, 'Europe/Paris')");
    expect(typeOf(field, [new HogDate(0)])).toBe('Date');
    expect(typeOf(field, [[1, 2]])).toBe('Array(Int64)');
    expect(typeOf(field, [new HogTuple(['a', 1])])).toBe('Tuple(String, Int64)');
    expect(typeOf(field, [])).toBe('Nullable(Nothing)');
  });
});

describe('order', () => {
  it('numbers by value, text by code point, times by instant, lists item by item; kinds apart', () => {
    expect(compareValues(2, 10)).toBeLessThan(0);
    expect(compareValues('10', '2')).toBeLessThan(0);
    expect(compareValues(true, 0)).toBeGreaterThan(0);
    expect(compareValues(new HogDateTime(5, 'UTC'), new HogDateTime(3, 'Asia/Tokyo'))).toBeGreaterThan(0);
    expect(compareValues(new HogDate(1), new HogDateTime(86_400_000 + 1, 'UTC'))).toBeLessThan(0);
    expect(compareValues([1, 2], [1, 3])).toBeLessThan(0);
    expect(compareValues(new HogTuple([1]), new HogTuple([1, 0]))).toBeLessThan(0);
    expect(compareValues(99, 'a')).toBeLessThan(0);
    expect(compareValues(Number.NaN, 1)).toBeGreaterThan(0);
  });

  it('several terms, each its own direction, nulls last either way', () => {
    const rows = [
      ['b', 1],
      [null, 5],
      ['a', 2],
      ['b', null],
      ['b', 3],
      ['a', 1],
    ] as const;
    const sorted = [...rows].sort(compareKeys([false, true]));
    expect(sorted).toEqual([
      ['a', 2],
      ['a', 1],
      ['b', 3],
      ['b', 1],
      ['b', null],
      [null, 5],
    ]);
    expect([...rows].sort(compareKeys([true, false]))[0]).toEqual(['b', 1]);
    expect([...rows].sort(compareKeys([true, false])).at(-1)).toEqual([null, 5]);
  });

  it('TopK keeps the first k in order, holding at most 2k', () => {
    const top = new TopK<number>(3, (a, b) => a - b);
    const values = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000);
    for (const v of values) top.push(v);
    expect(top.sorted()).toEqual([0, 1, 2]);
    const none = new TopK<number>(5, (a, b) => a - b);
    none.push(2);
    none.push(1);
    expect(none.sorted()).toEqual([1, 2]);
  });
});
