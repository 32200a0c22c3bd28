import { describe, expect, it } from 'vitest';
import { ev, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const RANGE = { date_from: '2020-01-08', date_to: '2020-01-10' }; // 3 daily buckets: 8, 9, 10 Jan
const run = (
  entity: Record<string, unknown>,
  events: ReturnType<typeof ev>[],
  extra: Record<string, unknown> = {},
  now = NOW,
) => trend({ events: [{ id: 'e', ...entity }], ...RANGE, ...extra }, events, { now });

describe('counting maths', () => {
  // Jan 8: person P1 through two distinct ids (d1, d2) and P2 twice; Jan 10: P1 once more.
  const events = [
    ev('e', '2020-01-08T01:00:00Z', { distinct: 'd1', person: 'P1' }),
    ev('e', '2020-01-08T02:00:00Z', { distinct: 'd2', person: 'P1' }),
    ev('e', '2020-01-08T03:00:00Z', { distinct: 'd3', person: 'P2' }),
    ev('e', '2020-01-08T04:00:00Z', { distinct: 'd3', person: 'P2' }),
    ev('e', '2020-01-10T01:00:00Z', { distinct: 'd2', person: 'P1' }),
    ev('other', '2020-01-08T01:00:00Z'),
  ];

  it('total counts events of the series', () => {
    expect(run({}, events).result[0]!.data).toEqual([4, 0, 1]);
    expect(run({ math: 'total' }, events).result[0]!.count).toBe(5);
  });

  it('dau counts persons, so two distinct ids of one merged person count once', () => {
    const s = run({ math: 'dau' }, events).result[0]!;
    expect(s.data).toEqual([2, 0, 1]);
    expect(s.count).toBe(3);
  });

  it('dau aggregated over the range counts each person once (not the sum of days)', () => {
    expect(run({ math: 'dau' }, events, { display: 'BoldNumber' }).result[0]!.aggregated_value).toBe(2);
  });

  it('reads a timestamp without a zone designator as UTC', () => {
    expect(run({}, [ev('e', '2020-01-08T23:30:00'), ev('e', '2020-01-09T00:30:00.000')]).result[0]!.data).toEqual([
      1, 1, 0,
    ]);
  });

  it('an `id: null` series counts every event, labelled "All events"', () => {
    const s = trend({ events: [{ id: null }], ...RANGE }, events, { now: NOW }).result[0]!;
    expect(s.label).toBe('All events');
    expect(s.data).toEqual([5, 0, 1]);
  });
});

describe('active users', () => {
  // Persons by day; P4 is one person with two distinct ids.
  const events = [
    ev('e', '2020-01-01T10:00:00Z', { person: 'P1' }),
    ev('e', '2020-01-02T10:00:00Z', { person: 'P2' }),
    ev('e', '2020-01-03T10:00:00Z', { person: 'P5' }),
    ev('e', '2020-01-05T10:00:00Z', { distinct: 'd4a', person: 'P4' }),
    ev('e', '2020-01-09T10:00:00Z', { person: 'P3' }),
    ev('e', '2020-01-10T10:00:00Z', { distinct: 'd4b', person: 'P4' }),
  ];

  it('weekly_active for day D counts persons active on D-6..D', () => {
    // Jan 8: Jan 2..8 -> P2, P5, P4; Jan 9: Jan 3..9 -> P5, P4, P3; Jan 10: Jan 4..10 -> P4, P3.
    expect(run({ math: 'weekly_active' }, events).result[0]!.data).toEqual([3, 3, 2]);
  });

  it("weekly_active's aggregated value is the last bucket's", () => {
    expect(run({ math: 'weekly_active' }, events, { display: 'BoldNumber' }).result[0]!.aggregated_value).toBe(2);
  });

  it('weekly_active with week buckets counts distinct persons per week', () => {
    // Weeks from Sunday Dec 29: P1, P2, P5 | from Jan 5: P4, P3.
    const s = run({ math: 'weekly_active' }, events, {
      date_from: '2020-01-01',
      date_to: '2020-01-10',
      interval: 'week',
    }).result[0]!;
    expect(s.days).toEqual(['2019-12-29', '2020-01-05']);
    expect(s.data).toEqual([3, 2]);
  });

  it('monthly_active for day D counts persons active on D-29..D', () => {
    const monthly = [
      ev('e', '2019-12-31T10:00:00Z', { person: 'P6' }),
      ev('e', '2020-01-01T10:00:00Z', { person: 'P1' }),
      ev('e', '2020-01-31T10:00:00Z', { person: 'P2' }),
      ev('e', '2020-01-31T11:00:00Z', { person: 'P3' }),
    ];
    // Jan 30: Jan 1..30 -> P1; Jan 31: Jan 2..31 -> P2, P3.
    const s = run(
      { math: 'monthly_active' },
      monthly,
      { date_from: '2020-01-30', date_to: '2020-01-31' },
      '2020-02-05T00:00:00Z',
    ).result[0]!;
    expect(s.data).toEqual([1, 2]);
  });
});

describe('unique_session', () => {
  it('counts distinct non-empty $session_id values', () => {
    const events = [
      ev('e', '2020-01-08T01:00:00Z', { props: { $session_id: 's1' } }),
      ev('e', '2020-01-08T02:00:00Z', { props: { $session_id: 's1' } }),
      ev('e', '2020-01-08T03:00:00Z', { props: { $session_id: 's2' } }),
      ev('e', '2020-01-08T04:00:00Z', { props: { $session_id: '' } }),
      ev('e', '2020-01-08T05:00:00Z'),
      ev('e', '2020-01-10T05:00:00Z', { props: { $session_id: 's3' } }),
    ];
    expect(run({ math: 'unique_session' }, events).result[0]!.data).toEqual([2, 0, 1]);
  });
});

describe('property maths', () => {
  // Jan 8: numeric 1, 2, 3, 4 and '10'; 'abc', true and a missing value are ignored. Jan 10: -5.
  const values: unknown[] = [1, 2, 3, 4, 'abc', undefined, '10', true];
  const events = [
    ...values.map((v, i) => ev('e', `2020-01-08T0${i}:00:00Z`, { props: v === undefined ? {} : { amount: v } })),
    ev('e', '2020-01-10T01:00:00Z', { props: { amount: -5 } }),
  ];

  it.each([
    ['sum', 20, -5],
    ['avg', 4, -5],
    ['min', 1, -5],
    ['max', 10, -5],
    ['median', 3, -5],
    ['p75', 4, -5], // rank 0.75 * 4 = 3 -> 4
    ['p90', 7.6, -5], // rank 3.6 -> 4 + 0.6 * (10 - 4)
    ['p95', 8.8, -5], // rank 3.8 -> 4 + 0.8 * 6
    ['p99', 9.76, -5], // rank 3.96 -> 4 + 0.96 * 6
  ])('%s ignores non-numeric and missing values; an empty bucket is 0', (math, jan8, jan10) => {
    const [a, b, c] = run({ math, math_property: 'amount' }, events).result[0]!.data;
    expect(a).toBeCloseTo(jan8, 10);
    expect(b).toBe(0);
    expect(c).toBe(jan10);
  });

  it('the aggregated value is computed over all events of the range, not from the daily values', () => {
    const evs = [
      ev('e', '2020-01-08T01:00:00Z', { props: { amount: 2 } }),
      ev('e', '2020-01-08T02:00:00Z', { props: { amount: 4 } }),
      ev('e', '2020-01-10T01:00:00Z', { props: { amount: 10 } }),
    ];
    expect(run({ math: 'avg', math_property: 'amount' }, evs).result[0]!.data).toEqual([3, 0, 10]);
    // (2 + 4 + 10) / 3, not (3 + 10) / 2
    expect(
      run({ math: 'avg', math_property: 'amount' }, evs, { display: 'BoldNumber' }).result[0]!.aggregated_value,
    ).toBeCloseTo(16 / 3, 10);
  });

  it('math_property_type person_properties reads the person', () => {
    const evs = [
      ev('e', '2020-01-08T01:00:00Z', { personProps: { seats: 3 } }),
      ev('e', '2020-01-08T02:00:00Z', { personProps: { seats: '4' } }),
    ];
    expect(
      run({ math: 'sum', math_property: 'seats', math_property_type: 'person_properties' }, evs).result[0]!.data,
    ).toEqual([7, 0, 0]);
  });
});

describe('count per actor', () => {
  // Jan 8: P1 three events, P2 one; Jan 10: P1 two events through two distinct ids.
  const events = [
    ev('e', '2020-01-08T01:00:00Z', { person: 'P1' }),
    ev('e', '2020-01-08T02:00:00Z', { person: 'P1' }),
    ev('e', '2020-01-08T03:00:00Z', { person: 'P1' }),
    ev('e', '2020-01-08T04:00:00Z', { person: 'P2' }),
    ev('e', '2020-01-10T01:00:00Z', { distinct: 'a', person: 'P1' }),
    ev('e', '2020-01-10T02:00:00Z', { distinct: 'b', person: 'P1' }),
  ];

  it('avg_count_per_actor averages events per person in each bucket', () => {
    expect(run({ math: 'avg_count_per_actor' }, events).result[0]!.data).toEqual([2, 0, 2]);
  });

  it('max_count_per_actor takes the busiest person of each bucket', () => {
    expect(run({ math: 'max_count_per_actor' }, events).result[0]!.data).toEqual([3, 0, 2]);
  });

  it('min and median per actor', () => {
    expect(run({ math: 'min_count_per_actor' }, events).result[0]!.data).toEqual([1, 0, 2]);
    expect(run({ math: 'median_count_per_actor' }, events).result[0]!.data).toEqual([2, 0, 2]);
  });
});
