/**
 * The parser and the evaluator together, over the real function catalog: what a request's text
 * means, end to end. The examples are the and PostHog's documented ones.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import {
  CATALOG,
  type CheckOptions,
  compileAggregate,
  compileScalar,
  type FieldReader,
  HogDateTime,
  type HogValue,
  parseExpr,
  parseOrderExpr,
  parseSelectColumn,
} from '#shared/hogql/index.ts';

const ctx = { timezone: 'UTC', now: new Date('2026-11-26T12:00:00Z') };
const scalar: CheckOptions = { scope: 'events', aggregates: 'forbidden', catalog: CATALOG };
const aggregate: CheckOptions = { scope: 'events', aggregates: 'required', catalog: CATALOG };

interface Row {
  event: string;
  timestamp: string;
  properties: Record<string, unknown>;
  person?: Record<string, unknown>;
}

function reader(row: Row): FieldReader {
  return (chain) => {
    const [head, ...rest] = chain;
    const dig = (value: unknown, path: readonly string[]): HogValue => {
      let v = value;
      for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
      if (v === undefined) return null;
      return typeof v === 'object' && v !== null ? JSON.stringify(v) : (v as HogValue);
    };
    if (head === 'event') return row.event;
    if (head === 'timestamp') return new HogDateTime(Date.parse(row.timestamp), ctx.timezone);
    if (head === 'properties') return dig(row.properties, rest);
    if (head === '$session_id') return dig(row.properties, ['$session_id']);
    if (head === 'person' && rest[0] === 'properties') return dig(row.person ?? {}, rest.slice(1));
    return null;
  };
}

const rows: Row[] = [
  {
    event: '$pageview',
    timestamp: '2026-11-26T08:59:59Z',
    properties: { $os: 'Mac OS X', $browser: 'Chrome', price: '10.5', $current_url: 'https://x.io/pricing?a=1' },
  },
  {
    event: '$pageview',
    timestamp: '2026-11-26T09:00:00Z',
    properties: { $os: 'Windows', price: 4, $current_url: 'https://x.io/PRICING' },
  },
  {
    event: 'signup',
    timestamp: '2026-11-26T17:30:00Z',
    properties: { $browser: 'Firefox', price: 'n/a', nested: { a: { b: 7 } } },
  },
];

const valuesOf = (text: string) => {
  const run = compileScalar(parseExpr(text, 'attr', scalar), ctx, 'attr');
  return rows.map((r) => run(reader(r)));
};

describe('HogQL text to values', () => {
  it('concatenates two properties as PostHog breaks down by them (a missing part is empty)', () => {
    expect(valuesOf("concat(properties.$os, ' ', properties.$browser)")).toEqual([
      'Mac OS X Chrome',
      'Windows ',
      ' Firefox',
    ]);
  });

  it('filters by ILIKE, case-insensitively, and a missing property does not match', () => {
    expect(valuesOf("properties.$current_url ILIKE '%/pricing%'")).toEqual([true, true, false]);
  });

  it('reads the hour of the timestamp in the project time zone', () => {
    expect(valuesOf('toHour(timestamp) >= 9')).toEqual([false, true, true]);
  });

  it('reads nested JSON and quoted keys', () => {
    expect(valuesOf('properties.nested.a.b + 1')).toEqual([null, null, 8]);
    expect(valuesOf("properties['$browser'] = 'Firefox'")).toEqual([false, false, true]);
  });

  it('adds and subtracts INTERVALs as ClickHouse does (dateAdd / dateSub): days on the calendar, hours as time', () => {
    const at = (v: HogValue) => (v instanceof HogDateTime ? new Date(v.ms).toISOString() : v);
    expect(valuesOf('timestamp + INTERVAL 1 DAY').map(at)).toEqual([
      '2026-11-27T08:59:59.000Z',
      '2026-11-27T09:00:00.000Z',
      '2026-11-27T17:30:00.000Z',
    ]);
    expect(valuesOf('INTERVAL 30 MINUTE + timestamp').map(at)[0]).toBe('2026-11-26T09:29:59.000Z');
    expect(valuesOf('timestamp - INTERVAL 1 MONTH').map(at)[2]).toBe('2026-10-26T17:30:00.000Z');
    expect(valuesOf('timestamp > now() - INTERVAL 3 HOUR')).toEqual([false, false, true]);
    expect(valuesOf("toDate(timestamp) - INTERVAL 1 WEEK = toDate('2026-11-19')")).toEqual([true, true, true]);
    // An interval is no value of its own.
    expect(() => valuesOf('timestamp * INTERVAL 1 DAY')).toThrow(/Unsupported function "toIntervalDay"/);
  });

  it('desugars CASE, the ternary and ||', () => {
    expect(valuesOf("CASE WHEN event = 'signup' THEN 'new' ELSE 'old' END")).toEqual(['old', 'old', 'new']);
    expect(valuesOf("event = 'signup' ? 1 : 0")).toEqual([0, 0, 1]);
    expect(valuesOf("event || '!'")).toEqual(['$pageview!', '$pageview!', 'signup!']);
  });

  it('aggregates a math expression per group: avg(toFloat(properties.price)) skips values that are not numbers', () => {
    const make = compileAggregate(parseExpr('avg(toFloat(properties.price))', 'attr', aggregate), ctx, 'attr');
    const group = make();
    for (const r of rows) group.add(reader(r));
    expect(group.result()).toBe(7.25);
  });

  it('combines aggregates in one expression', () => {
    const make = compileAggregate(
      parseExpr("round(countIf(event = '$pageview') / count(), 2)", 'attr', aggregate),
      ctx,
      'attr',
    );
    const group = make();
    for (const r of rows) group.add(reader(r));
    expect(group.result()).toBe(0.67);
  });

  it('reads select labels and order directions', () => {
    expect(parseSelectColumn('count() -- Total', 'attr').label).toBe('Total');
    expect(parseSelectColumn('properties.$browser AS browser', 'attr').label).toBe('browser');
    expect(parseOrderExpr('toHour(timestamp) DESC', 'attr').direction).toBe('DESC');
  });

  it('refuses what it does not support with a 400 naming the caller field and the construct', () => {
    const refusal = (text: string, options: CheckOptions = scalar) => {
      try {
        parseExpr(text, 'query__where__0', options);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return { attr: (error as ValidationError).attr, detail: (error as ValidationError).detail };
      }
      throw new Error(`${text} was accepted`);
    };
    expect(refusal('sleep(3)')).toMatchObject({
      attr: 'query__where__0',
      detail: expect.stringContaining('Unsupported function "sleep"'),
    });
    expect(refusal('sleep(3)').detail).toContain('concat');
    expect(refusal('count()')).toMatchObject({ detail: expect.stringMatching(/aggregate/i) });
    expect(refusal('properties.x', aggregate)).toMatchObject({ detail: expect.stringMatching(/aggregate/i) });
    expect(refusal('x'.repeat(10_001)).detail).toContain('10,000');
    expect(refusal('secret_table.column').detail).toMatch(/field|column/i);
  });
});
