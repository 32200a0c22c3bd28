/**
 * HogQL expressions over a batch's columns (shared/trends/columnar/expressions.ts): how often the
 * evaluator runs (once per dictionary entry, per distinct tuple, per row for `timestamp`) and what
 * each field reads. The evaluator here is a small stub over hand-built ASTs, counting its calls.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { Expr } from '#shared/hogql/ast.ts';
import { HogDateTime, type HogValue } from '#shared/hogql/values.ts';
import { batchOfEvents, batchOfRows, distinctIdsOnly } from '#shared/trends/columnar/batch.ts';
import { compileAggregate, fieldsOf } from '#shared/hogql/index.ts';
import {
  breakdownOf,
  columnExpr,
  compileColumnExpr,
  EXPR_MEMO_LIMIT,
  type FieldReader,
  jsonField,
  rowReaderOf,
  valuesOf,
} from '#shared/trends/columnar/expressions.ts';
import { AggregateCells, trendNumber } from '#shared/trends/columnar/hogql-math.ts';
import { evaluate } from '#shared/trends/columnar/masks.ts';
import { parseTrendExpr, unavailableField } from '#shared/trends/hogql.ts';
import type { TrendEvent } from '#shared/trends/types.ts';
import { hogqlText } from '../../support/hogql-arbitrary.ts';
import { trend } from './helpers.ts';

const field = (...chain: string[]): Expr => ({ kind: 'field', chain });
const str = (value: string): Expr => ({ kind: 'constant', value });
const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args });

/** A stub of the library's compileScalar: fields, constants, concat, ilike, toHour; counts its runs. */
function stub(expr: Expr): { run: (read: FieldReader) => HogValue; calls: () => number; fields: string[][] } {
  let calls = 0;
  const fields: string[][] = [];
  const walk = (e: Expr): ((read: FieldReader) => HogValue) => {
    switch (e.kind) {
      case 'constant':
        return () => e.value;
      case 'field':
        fields.push(e.chain);
        return (read) => read(e.chain);
      case 'compare': {
        const l = walk(e.left);
        const r = walk(e.right);
        if (e.op === 'eq') return (read) => l(read) === r(read);
        return (read) => {
          const v = l(read);
          const pattern = String(r(read)).toLowerCase().replaceAll('%', '');
          return typeof v === 'string' ? v.toLowerCase().includes(pattern) : null;
        };
      }
      case 'call': {
        const args = e.args.map(walk);
        if (e.name === 'concat') return (read) => args.map((a) => String(a(read) ?? '')).join('');
        if (e.name === 'toHour')
          return (read) => {
            const t = args[0]!(read) as HogDateTime;
            return new Date(t.ms).getUTCHours();
          };
        throw new Error(`stub: ${e.name}`);
      }
      default:
        throw new Error(`stub: ${e.kind}`);
    }
  };
  const f = walk(expr);
  return {
    run: (read) => {
      calls += 1;
      return f(read);
    },
    calls: () => calls,
    fields,
  };
}

const T0 = Date.parse('2024-03-01T00:00:00Z');
const PERSON_PROPERTIES = [{ plan: 'free' }, { plan: 'pro' }, { plan: 'pro' }];
const event = (i: number, properties: Record<string, unknown>, extra: Partial<TrendEvent> = {}): TrendEvent => ({
  event: i % 2 ? 'signup' : '$pageview',
  distinct_id: `d${i % 3}`,
  person_id: `p${i % 3}`,
  timestamp: T0 + i * 3_600_000,
  properties,
  person_properties: PERSON_PROPERTIES[i % 3]!,
  ...extra,
});

const rowsOf = (column: { table: HogValue[]; indexes: Uint32Array | null }, n: number) =>
  Array.from({ length: n }, (_, i) => column.table[column.indexes ? column.indexes[i]! : 0]!);

describe('HogQL expressions over columns', () => {
  it('one property column: evaluated once per dictionary entry, and not again for a value an earlier batch had', () => {
    const oses = ['Mac', 'Windows', 'Mac', undefined, 'Linux', 'Mac', 'Windows', 'Mac'];
    const events = oses.map((os, i) => event(i, os === undefined ? {} : { $os: os }));
    const s = stub(call('concat', str('os: '), field('properties', '$os')));
    const expr = columnExpr(s.run, s.fields, 'UTC');
    const batch = batchOfEvents(events, ['$os']);
    const values = valuesOf(expr, batch);
    expect(rowsOf(values, batch.n)).toEqual(oses.map((os) => `os: ${os ?? ''}`));
    // Mac, Windows, Linux and the missing entry.
    expect(s.calls()).toBe(4);
    valuesOf(expr, batchOfEvents(events.slice(0, 3), ['$os']));
    expect(s.calls()).toBe(4);
  });

  it('several columns: once per distinct tuple of their dictionary indexes', () => {
    const pairs = [
      ['Mac', 'Chrome'],
      ['Mac', 'Safari'],
      ['Mac', 'Chrome'],
      ['Windows', 'Chrome'],
      ['Mac', 'Chrome'],
      ['Windows', 'Chrome'],
    ];
    const events = pairs.map(([os, browser], i) => event(i, { $os: os, $browser: browser }));
    const s = stub(call('concat', field('properties', '$os'), str(' '), field('properties', '$browser')));
    const values = valuesOf(columnExpr(s.run, s.fields, 'UTC'), batchOfEvents(events, ['$os', '$browser']));
    expect(rowsOf(values, events.length)).toEqual(pairs.map(([os, browser]) => `${os} ${browser}`));
    expect(s.calls()).toBe(3);
  });

  it('past the memo limit every tuple is still right (evaluated per row), with a dense or hashed tuple table', () => {
    const n = EXPR_MEMO_LIMIT + 500;
    const rows = Array.from({ length: n }, (_, i) => ({
      event: 'e',
      distinct_id: 'd',
      t: T0 + i,
      properties: { a: i, b: i % 20 },
    }));
    const s = stub(call('concat', field('properties', 'a'), str('-'), field('properties', 'b')));
    const values = valuesOf(columnExpr(s.run, s.fields, 'UTC'), batchOfRows(rows, ['a', 'b'], distinctIdsOnly));
    const out = rowsOf(values, n);
    expect(out[0]).toBe('0-0');
    expect(out[n - 1]).toBe(`${n - 1}-${(n - 1) % 20}`);
    expect(out.every((v, i) => v === `${i}-${i % 20}`)).toBe(true);
  });

  it('timestamp: per row, a DateTime in the project time zone', () => {
    const events = [0, 1, 5, 30].map((h) => event(h, {}));
    const s = stub(call('toHour', field('timestamp')));
    const seen: HogValue[] = [];
    const expr = columnExpr(
      (read) => {
        seen.push(read(['timestamp']));
        return s.run(read);
      },
      s.fields,
      'Europe/Paris',
    );
    const values = valuesOf(expr, batchOfEvents(events, []));
    expect(rowsOf(values, 4)).toEqual([0, 1, 5, 6]);
    expect(s.calls()).toBe(4);
    expect(seen[0]).toEqual(new HogDateTime(T0, 'Europe/Paris'));
  });

  it('event name, person, distinct id and person properties: once per name or actor', () => {
    const events = Array.from({ length: 9 }, (_, i) => event(i, {}));
    const batch = batchOfEvents(events, []);
    const read = (chain: string[]) => {
      const s = stub(field(...chain));
      const values = rowsOf(valuesOf(columnExpr(s.run, s.fields, 'UTC'), batch), batch.n);
      return { values, calls: s.calls() };
    };
    expect(read(['event'])).toEqual({ values: events.map((e) => e.event), calls: 2 });
    expect(read(['person_id'])).toEqual({ values: events.map((e) => e.person_id), calls: 3 });
    expect(read(['distinct_id']).values).toEqual(events.map((e) => e.distinct_id));
    expect(read(['person', 'properties', 'plan']).values).toEqual(events.map((e) => e.person_properties.plan));
    expect(read(['person', 'properties', 'nope']).values).toEqual(events.map(() => null));
  });

  it('nested properties, JSON text for objects, missing as null; elements_chain is a string', () => {
    const events = [
      event(0, { $a: { b: 'x', c: { d: 1 } }, list: [10, 20, 30], $elements_chain: 'a:nth-child="1"' }),
      event(1, { $a: 'plain', list: 'nope' }),
      event(2, {}),
    ];
    const batch = batchOfEvents(events, ['$a', 'list', '$elements_chain']);
    const read = (...chain: string[]) => {
      const s = stub(field(...chain));
      return rowsOf(valuesOf(columnExpr(s.run, s.fields, 'UTC'), batch), batch.n);
    };
    expect(read('properties', '$a', 'b')).toEqual(['x', null, null]);
    expect(read('properties', '$a', 'c')).toEqual(['{"d":1}', null, null]);
    expect(read('properties', '$a')).toEqual(['{"b":"x","c":{"d":1}}', 'plain', null]);
    expect(read('properties', 'list', '1')).toEqual([10, null, null]);
    expect(read('properties', 'list', '-1')).toEqual([30, null, null]);
    expect(read('elements_chain')).toEqual(['a:nth-child="1"', '', '']);
    expect(jsonField(true, [])).toBe(true);
    expect(jsonField([1, 'a'], [])).toBe('[1,"a"]');
  });

  it('a hogql mask node passes rows whose value is true or a non-zero number', () => {
    const urls = ['https://x.com/pricing', 'https://x.com/', undefined, 'https://x.com/PRICING?a=1'];
    const events = urls.map((u, i) => event(i, u === undefined ? {} : { $current_url: u }));
    const s = stub({
      kind: 'compare',
      op: 'ilike',
      left: field('properties', '$current_url'),
      right: str('%/pricing%'),
    });
    const mask = evaluate(
      { kind: 'hogql', expr: columnExpr(s.run, s.fields, 'UTC') },
      batchOfEvents(events, ['$current_url']),
    );
    expect(Array.from(mask as Uint8Array)).toEqual([1, 0, 0, 1]);
  });

  it('a row reader moves over rows for aggregates, reading each field of the row', () => {
    const events = [event(0, { price: 5 }), event(1, { price: '7' }), event(2, {})];
    const expr = columnExpr(() => null, [['properties', 'price'], ['timestamp'], ['event']], 'UTC');
    const reader = rowReaderOf(expr, batchOfEvents(events, ['price']));
    const seen = [0, 1, 2].map((i) => {
      reader.at(i);
      return [
        reader.read(['properties', 'price']),
        (reader.read(['timestamp']) as HogDateTime).ms,
        reader.read(['event']),
      ];
    });
    expect(seen).toEqual([
      [5, T0, '$pageview'],
      ['7', T0 + 3_600_000, 'signup'],
      [null, T0 + 7_200_000, '$pageview'],
    ]);
  });

  it('names the fields trends have no column for', () => {
    expect(unavailableField([['properties', 'x'], ['uuid']])).toBe('uuid');
    expect(unavailableField([['person', 'created_at']])).toBe('person.created_at');
    expect(unavailableField([['event'], ['person', 'properties', 'a', 'b'], ['$session_id']])).toBeNull();
  });
});

describe('math hogql cells', () => {
  /** A stub of compileAggregate's factory: avg of toFloat(properties.price), null without numbers. */
  const avgPrice = () => {
    let sum = 0;
    let count = 0;
    return {
      add(read: FieldReader) {
        const n = Number(read(['properties', 'price']));
        if (read(['properties', 'price']) !== null && Number.isFinite(n)) {
          sum += n;
          count += 1;
        }
      },
      result: (): HogValue => (count ? sum / count : null),
    };
  };
  const HOUR = 3_600_000;
  const period = { kind: 'current' as const, from: T0, to: T0 + 3 * HOUR - 1, buckets: [T0, T0 + HOUR, T0 + 2 * HOUR] };
  const prices = [4, '6', 'x', 10, undefined, 3];
  // Rows at hours 0, 0.5, 1, 1.5, 2, 2.5: two per bucket; groups by event name (even rows $pageview).
  const events = prices.map((price, i) =>
    event(i, price === undefined ? {} : { price }, { timestamp: T0 + (i * HOUR) / 2 }),
  );
  const batch = batchOfEvents(events, ['price']);
  const expr = columnExpr(() => null, [['properties', 'price']], 'UTC');

  it('one accumulator per (row, bucket); an empty or non-numeric cell is 0', () => {
    const cells = new AggregateCells(avgPrice, expr, period, Int32Array.of(0), 1, false);
    cells.fold(batch, true, null, -Infinity, Infinity);
    expect(cells.rows()).toEqual([{ values: [5, 10, 3], aggregated: Number.NaN }]);
  });

  it('rows of groups; groups mapped to no row are left out; the whole period on aggregated displays; masks and bounds apply', () => {
    const groups = { table: Int32Array.of(0, 1), indexes: batch.nameIndexes! };
    const byRow = new AggregateCells(avgPrice, expr, period, Int32Array.of(1, -1), 2, true);
    byRow.fold(batch, true, groups, -Infinity, Infinity);
    // $pageview rows (0, 2, 4): 4, 'x', missing.
    expect(byRow.rows()).toEqual([
      { values: [0, 0, 0], aggregated: 0 },
      { values: [0, 0, 0], aggregated: 4 },
    ]);
    const masked = new AggregateCells(avgPrice, expr, period, Int32Array.of(0), 1, true);
    masked.fold(batch, Uint8Array.of(0, 1, 1, 1, 1, 1), null, -Infinity, T0 + 2 * HOUR);
    expect(masked.rows()[0]!.aggregated).toBe(8);
  });

  it('trend values of cell results', () => {
    expect([2.5, true, false, '3', 'x', '', null, Number.NaN, Infinity].map(trendNumber)).toEqual([
      2.5, 1, 0, 3, 0, 0, 0, 0, 0,
    ]);
  });
});

describe('the issue examples through the HogQL library', () => {
  const ctx = { timezone: 'UTC', now: new Date(T0) };
  const events = [
    event(0, { $os: 'Mac', $browser: 'Chrome', $current_url: 'https://x.com/pricing', price: '10' }),
    event(1, { $os: 'Mac', $browser: 'Safari', $current_url: 'https://x.com/', price: 5 }),
    event(2, { $os: 'Windows', $current_url: 'https://x.com/Pricing/a', price: 'n/a' }),
    event(3, { $browser: 'Chrome' }),
  ];
  const batch = batchOfEvents(events, ['$os', '$browser', '$current_url', 'price']);

  it("concat(properties.$os, ' ', properties.$browser) as breakdown values (a NULL part is '')", () => {
    const expr = compileColumnExpr(
      parseTrendExpr("concat(properties.$os, ' ', properties.$browser)", 'breakdown', 'value'),
      ctx,
      'breakdown',
    );
    expect(rowsOf(valuesOf(expr, batch), batch.n).map(breakdownOf)).toEqual([
      'Mac Chrome',
      'Mac Safari',
      'Windows ',
      ' Chrome',
    ]);
  });

  it("properties.$current_url ILIKE '%/pricing%' as a mask", () => {
    const expr = compileColumnExpr(
      parseTrendExpr("properties.$current_url ILIKE '%/pricing%'", 'properties__0__key', 'value'),
      ctx,
      'properties__0__key',
    );
    expect(Array.from(evaluate({ kind: 'hogql', expr }, batch) as Uint8Array)).toEqual([1, 0, 1, 0]);
  });

  it('avg(toFloat(properties.price)) per bucket', () => {
    const ast = parseTrendExpr('avg(toFloat(properties.price))', 'events__0__math_hogql', 'aggregate');
    const period = { kind: 'current' as const, from: T0, to: T0 + 4 * 3_600_000 - 1, buckets: [T0, T0 + 7_200_000] };
    const cells = new AggregateCells(
      compileAggregate(ast, ctx, 'events__0__math_hogql'),
      columnExpr(() => null, fieldsOf(ast), 'UTC'),
      period,
      Int32Array.of(0),
      1,
      false,
    );
    cells.fold(batch, true, null, -Infinity, Infinity);
    // Bucket 0: 10 and 5; bucket 1: 'n/a' (NULL, skipped by avg) and no price: avg of nothing is nan → 0.
    expect(cells.rows()[0]!.values).toEqual([7.5, 0]);
  });

  it('fields trends cannot read are a 400 naming the caller field', () => {
    expect(() => parseTrendExpr('uuid', 'breakdown', 'value')).toThrow(/uuid is not available in trends/);
    expect(() => parseTrendExpr("created_at > '2024-01-01'", 'breakdown', 'value')).toThrow(
      /created_at is not available in trends/,
    );
    expect(() => parseTrendExpr('sum(1)', 'breakdown', 'value')).toThrow(/not allowed here/);
    expect(() => parseTrendExpr('properties.x', 'events__0__math_hogql', 'aggregate')).toThrow(/must aggregate/);
  });

  it('math_hogql must give a number: a DateTime, String, Date or NULL aggregate is a 400 naming it', () => {
    const math = (text: string) => () => parseTrendExpr(text, 'events__0__math_hogql', 'aggregate');
    expect(math('max(timestamp)')).toThrow(
      /math_hogql must give a number per interval: max\(timestamp\) gives a DateTime\. Aggregate a number/,
    );
    expect(math('any(event)')).toThrow(/any\(event\) gives a String/);
    expect(math('argMax(event, timestamp)')).toThrow(/argMax\(event, timestamp\) gives a String/);
    expect(math('min(toDate(timestamp))')).toThrow(/gives a Date/);
    expect(math('max(timestamp) - min(timestamp)')).toThrow(/gives NULL/);
    for (const ok of [
      'toUnixTimestamp(max(timestamp))',
      'count(DISTINCT event)',
      'max(properties.price)',
      "countIf(event = 'a') > 0",
      "dateDiff('second', min(timestamp), max(timestamp))",
    ])
      expect(math(ok)).not.toThrow();
  });
});

describe('random HogQL text in a trend', () => {
  const NOW = '2024-03-03T12:00:00Z';
  const events = [
    event(0, {
      $os: 'Mac',
      $browser: 'Chrome',
      price: 10,
      hostile: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!',
      $a: { b: [1, 2] },
    }),
    event(1, { $os: 'Windows', price: 'n/a', 'a b': true }),
    event(2, { $browser: 'Safari', price: '7.5', $session_id: 's1' }),
    event(3, {}),
  ];
  it('answers or refuses with a 400 naming the field, never another error', () => {
    fc.assert(
      fc.property(hogqlText, fc.constantFrom('breakdown', 'filter', 'math', 'series filter'), (text, where) => {
        const request: Record<string, unknown> =
          where === 'breakdown'
            ? { events: [{ id: '$pageview' }], breakdown: text, breakdown_type: 'hogql' }
            : where === 'filter'
              ? { events: [{ id: null }], properties: [{ type: 'hogql', key: text }] }
              : where === 'math'
                ? { events: [{ id: null, math: 'hogql', math_hogql: text }], breakdown: '$os' }
                : { events: [{ id: null, properties: [{ type: 'hogql', key: text }] }], display: 'ActionsTable' };
        try {
          trend({ ...request, date_from: '2024-02-28', date_to: '2024-03-03' }, events, { now: NOW });
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          expect(error.attr).toMatch(
            /^(breakdown|properties__0__key|events__0__math_hogql|events__0__properties__0__key)$/,
          );
        }
      }),
      { numRuns: 1500 },
    );
  }, 120_000);
});

describe('math hogql with a breakdown', () => {
  it('has one accumulator per answer row: Other aggregates its own events (distinct persons stay distinct)', () => {
    // 300 values of `v`, 3 persons each cycling over them; the value 'top' has the most events.
    const events = Array.from({ length: 900 }, (_, i) =>
      event(i, { v: i < 30 ? 'top' : `v${i % 300}` }, { person_id: `p${i % 3}`, timestamp: T0 + i * 60_000 }),
    );
    const res = trend(
      {
        events: [{ id: null, math: 'hogql', math_hogql: 'count(DISTINCT person_id)' }],
        breakdown: 'v',
        breakdown_limit: 1,
        display: 'ActionsTable',
        date_from: '2024-03-01',
        date_to: '2024-03-02',
      },
      events,
      { now: '2024-03-02T12:00:00Z' },
    );
    // Rows by volume: Other holds 870 events of 299 values, each value done by one person (a sum over
    // the values would be 299); over Other's events together, 3 persons.
    expect(res.result.map((r) => [r.breakdown_value, r.aggregated_value])).toEqual([
      ['$$_posthog_breakdown_other_$$', 3],
      ['top', 3],
    ]);
  });
});
