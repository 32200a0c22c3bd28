import { describe, expect, it } from 'vitest';
import { eventsToRead, parseTrendRequest, resolveDateRange } from '#shared/trends/index.ts';
import {
  checkResponseBytes,
  MAX_BREAKDOWN_LIMIT,
  MAX_CELLS,
  MAX_DAYS_READ,
  MAX_RESPONSE_BYTES,
  MAX_SERIES,
  MAX_TREND_BUCKETS,
} from '#shared/trends/limits.ts';
import { ev, expectValidation, iso, project, trend } from './helpers.ts';

const NOW = new Date('2024-03-12T12:00:00Z');
const DAY = 86_400_000;
const parse = (raw: Record<string, unknown>) => parseTrendRequest({ events: [{ id: 'e' }], ...raw });
const range = (raw: Record<string, unknown>, now = NOW) => resolveDateRange(parse(raw), project(), now);
/** The day `n` days before `day` (YYYY-MM-DD, UTC). */
const daysBefore = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) - n * DAY).toISOString().slice(0, 10);
const seriesOf = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `e${i}` }));

/** Runs fn, expects a 400 on attr whose detail states the cap's number, and returns how long the refusal took. */
function refused(fn: () => unknown, attr: string, cap: number): number {
  const started = performance.now();
  const err = expectValidation(fn, attr);
  expect(err.detail).toContain(cap.toLocaleString('en-US'));
  return performance.now() - started;
}

describe('trend request caps', () => {
  it(`allows ${MAX_SERIES} series and refuses ${MAX_SERIES + 1}, on the list that overflows`, () => {
    expect(MAX_SERIES).toBe(50);
    expect(parseTrendRequest({ events: seriesOf(50) }).series).toHaveLength(50);
    expect(
      parseTrendRequest({ events: seriesOf(30), actions: Array.from({ length: 20 }, (_, i) => ({ id: i })) }).series,
    ).toHaveLength(50);
    refused(() => parseTrendRequest({ events: seriesOf(51) }), 'events', 50);
    refused(
      () => parseTrendRequest({ events: seriesOf(30), actions: Array.from({ length: 21 }, (_, i) => ({ id: i })) }),
      'actions',
      50,
    );
    refused(() => parseTrendRequest({ events: JSON.stringify(seriesOf(51)) }), 'events', 50);
  });

  it('refuses a huge series list before parsing its entries', () => {
    const entries = Array.from({ length: 200_000 }, () => ({ id: 'e', math: 'not-a-math' }));
    expect(refused(() => parseTrendRequest({ events: entries }), 'events', 50)).toBeLessThan(1_000);
  });

  it(`allows breakdown_limit ${MAX_BREAKDOWN_LIMIT} and refuses ${MAX_BREAKDOWN_LIMIT + 1}; the defaults stay`, () => {
    expect(MAX_BREAKDOWN_LIMIT).toBe(1_000);
    expect(parse({ breakdown: 'b', breakdown_limit: 1_000 }).breakdownFilter?.breakdown_limit).toBe(1_000);
    expect(parse({ breakdown: 'b', breakdown_limit: '1000' }).breakdownFilter?.breakdown_limit).toBe(1_000);
    refused(() => parse({ breakdown: 'b', breakdown_limit: 1_001 }), 'breakdown_limit', 1_000);
    refused(() => parse({ breakdown: 'b', breakdown_limit: '99999999999999999999' }), 'breakdown_limit', 1_000);
    expect(parse({ breakdown: 'b' }).breakdownFilter?.breakdown_limit).toBe(25);
    expect(parse({ display: 'WorldMap' }).breakdownFilter?.breakdown_limit).toBe(300);
  });

  it(`allows ${MAX_TREND_BUCKETS} buckets and refuses ${MAX_TREND_BUCKETS + 1}`, () => {
    expect(MAX_TREND_BUCKETS).toBe(10_000);
    const to = '2030-01-01';
    expect(range({ date_from: daysBefore(to, 9_999), date_to: to }).buckets).toHaveLength(10_000);
    refused(() => range({ date_from: daysBefore(to, 10_000), date_to: to }), 'interval', 10_000);
    const hours = range({
      date_from: '2024-01-01T00:00:00Z',
      date_to: new Date(Date.parse('2024-01-01T00:00:00Z') + 9_999 * 3_600_000).toISOString(),
      interval: 'hour',
    });
    expect(hours.buckets).toHaveLength(10_000);
    refused(
      () =>
        range({
          date_from: '2024-01-01T00:00:00Z',
          date_to: new Date(Date.parse('2024-01-01T00:00:00Z') + 10_000 * 3_600_000).toISOString(),
          interval: 'hour',
        }),
      'interval',
      10_000,
    );
  });

  it('refuses an hourly range over five years quickly, through the HTTP-facing compute too', () => {
    expect(
      refused(
        () => trend({ events: [{ id: 'e' }], date_from: '-5y', interval: 'hour' }, [], { now: iso(NOW) }),
        'interval',
        10_000,
      ),
    ).toBeLessThan(1_000);
  });

  it(`allows ${MAX_CELLS} values (series × breakdown rows × periods × buckets) and refuses more`, () => {
    expect(MAX_CELLS).toBe(200_000);
    const to = '2024-01-01';
    const days = (n: number) => ({ date_from: daysBefore(to, n - 1), date_to: to });
    // 98 values + None + Other = 100 rows × 2,000 days.
    expect(range({ breakdown: 'b', breakdown_limit: 98, ...days(2_000) }).buckets).toHaveLength(2_000);
    refused(() => range({ breakdown: 'b', breakdown_limit: 98, ...days(2_001) }), 'breakdown_limit', 200_000);
    refused(() => range({ breakdown: 'b', breakdown_limit: 99, ...days(2_000) }), 'breakdown_limit', 200_000);
    // compare doubles the rows: 50 rows × 2 periods × 2,000 days.
    expect(range({ breakdown: 'b', breakdown_limit: 48, compare: true, ...days(2_000) }).buckets).toHaveLength(2_000);
    refused(
      () => range({ breakdown: 'b', breakdown_limit: 49, compare: true, ...days(2_000) }),
      'breakdown_limit',
      200_000,
    );
    // Without a breakdown: 20 series × 10,000 days is the most; one day more is refused on the interval.
    expect(
      resolveDateRange(parseTrendRequest({ events: seriesOf(20), ...days(10_000) }), project(), NOW).buckets,
    ).toHaveLength(10_000);
    refused(
      () => resolveDateRange(parseTrendRequest({ events: seriesOf(21), ...days(10_000) }), project(), NOW),
      'interval',
      200_000,
    );
  });

  it(`allows an answer of ${MAX_RESPONSE_BYTES} bytes (5 MiB, under Lambda's 6 MB) and refuses one byte more`, () => {
    expect(MAX_RESPONSE_BYTES).toBe(5 * 1024 * 1024);
    expect(() => checkResponseBytes(parse({}), MAX_RESPONSE_BYTES)).not.toThrow();
    refused(() => checkResponseBytes(parse({}), MAX_RESPONSE_BYTES + 1), 'interval', 5_120);
    refused(() => checkResponseBytes(parse({ breakdown: 'b' }), MAX_RESPONSE_BYTES + 1), 'breakdown_limit', 5_120);
  });
});

describe('relative and absolute dates out of reach', () => {
  it('answers absurd relative dates with a 400 on their field, quickly, never a loop or an invalid time', () => {
    for (const [raw, attr] of [
      [{ date_from: '-100000d', interval: 'month' }, 'date_from'],
      [{ date_from: '-999999999h', interval: 'hour' }, 'date_from'],
      [{ date_from: '-999999999h', interval: 'month' }, 'date_from'],
      [{ date_from: '-999999m', interval: 'week' }, 'date_from'],
      [{ date_from: '-99999999999999999999d' }, 'date_from'],
      [{ date_from: '-7d', date_to: '-99999999y' }, 'date_to'],
      [{ date_from: '-7d', compare: true, compare_to: '-100000y' }, 'compare_to'],
      [{ date_from: '-7d', compare_to: '-99999999999w' }, 'compare_to'],
    ] as const) {
      const started = performance.now();
      const err = expectValidation(() => trend({ events: [{ id: 'e' }], ...raw }, [], { now: iso(NOW) }), attr);
      expect(err.detail).toMatch(/100 years/);
      expect(performance.now() - started).toBeLessThan(1_000);
    }
  });

  it('lets relative dates reach back 100 years and no further, in every unit', () => {
    for (const [ok, tooFar] of [
      ['-876600h', '-876601h'],
      ['-36525d', '-36526d'],
      ['-5217w', '-5218w'],
      ['-1200m', '-1201m'],
      ['-401q', '-402q'],
      ['-100y', '-101y'],
      ['-100yStart', '-101yStart'],
    ]) {
      expect(parse({ date_from: ok, interval: 'month' }).dateRange.date_from).toBe(ok);
      expectValidation(() => parse({ date_from: tooFar, interval: 'month' }), 'date_from');
    }
    expect(parse({ compare_to: '-100y' }).compareFilter.compare_to).toBe('-100y');
    expectValidation(() => parse({ compare_to: '-101y' }), 'compare_to');
  });

  it('answers a 100-year monthly range and refuses dates before 1900', () => {
    expect(range({ date_from: '-100y', interval: 'month' }).buckets.length).toBe(1_201);
    expect(range({ date_from: '1900-01-01', interval: 'month' }).buckets.length).toBe(1_491);
    const err = expectValidation(() => parse({ date_from: '0001-01-01', interval: 'month' }), 'date_from');
    expect(err.detail).toContain('1900-01-01');
    expectValidation(() => parse({ date_from: '2020-01-01', date_to: '1899-12-31' }), 'date_to');
  });
});

describe('what a trend reads', () => {
  const read = (raw: Record<string, unknown>, firstEventAt: string | undefined, now = NOW) => {
    const query = parse(raw);
    const r = resolveDateRange(query, project(), now, firstEventAt ? new Date(firstEventAt) : undefined);
    return {
      buckets: r.buckets.length,
      read: eventsToRead(query, r, firstEventAt ? new Date(firstEventAt) : undefined),
    };
  };

  it('starts at the first event’s day when the range starts long before it, while the answer keeps every bucket', () => {
    const { buckets, read: window } = read({ date_from: '2000-01-01' }, '2024-03-05T09:00:00Z');
    expect(buckets).toBe(8_838);
    expect(window).toEqual({
      from: new Date('2024-03-05T00:00:00Z'),
      to: new Date('2024-03-12T23:59:59.999Z'),
      days: 8,
    });
    // The buckets before the first event are there, zero-filled.
    const res = trend({ events: [{ id: 'e' }], date_from: '2000-01-01' }, [ev('e', '2024-03-05T09:00:00Z')], {
      now: iso(NOW),
      firstEventAt: '2024-03-05T09:00:00Z',
    });
    expect(res.result[0]!.days[0]).toBe('2000-01-01');
    expect(res.result[0]!.data).toHaveLength(8_838);
    expect(res.result[0]!.data.slice(-8)).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(res.result[0]!.count).toBe(1);
  });

  it('reads the range as it is when the first event is earlier, and nothing when there is no event in or before it', () => {
    expect(read({ date_from: '-7d' }, '2020-01-01T00:00:00Z').read).toEqual({
      from: new Date('2024-03-05T00:00:00Z'),
      to: new Date('2024-03-12T23:59:59.999Z'),
      days: 8,
    });
    expect(read({ date_from: '-7d' }, undefined).read).toBeNull();
    expect(read({ date_from: '2000-01-01', date_to: '2020-01-01' }, '2024-03-05T09:00:00Z').read).toBeNull();
  });

  it('ends at the latest time an event can be stored with, so a range far into the future reads no future day', () => {
    const query = parse({ date_from: '-1d', date_to: '2050-12-31' });
    const r = resolveDateRange(query, project(), NOW, new Date('2020-01-01T00:00:00Z'));
    expect(r.buckets).toHaveLength(9_792);
    const latest = new Date(NOW.getTime() + 23 * 3_600_000);
    expect(eventsToRead(query, r, new Date('2020-01-01T00:00:00Z'), latest)).toEqual({
      from: new Date('2024-03-11T00:00:00Z'),
      to: latest,
      days: 3,
    });
    expect(() => eventsToRead(query, r, new Date('2020-01-01T00:00:00Z'))).toThrow(/3,700 days/);
    const future = parse({ date_from: '2030-01-01', date_to: '2030-01-31' });
    expect(
      eventsToRead(future, resolveDateRange(future, project(), NOW), new Date('2020-01-01T00:00:00Z'), latest),
    ).toBeNull();
  });

  it('counts the compared period and the active-user lookback, clamped alike', () => {
    // -7d: 8 days, and its previous period ends on the current first day (PostHog's multiple-of-7 rule): 15 days in all.
    expect(read({ date_from: '-7d', compare: true }, '2020-01-01T00:00:00Z').read?.days).toBe(15);
    expect(read({ date_from: '-7d', compare: true }, '2024-03-10T12:00:00Z').read?.days).toBe(3);
    expect(
      read({ events: [{ id: 'e', math: 'monthly_active' }], date_from: '-7d' }, '2020-01-01T00:00:00Z').read?.days,
    ).toBe(37);
  });

  it(`allows ${MAX_DAYS_READ} days read and refuses ${MAX_DAYS_READ + 1}, after clamping`, () => {
    expect(MAX_DAYS_READ).toBe(3_700);
    const to = '2024-03-12';
    expect(read({ date_from: daysBefore(to, 3_699), date_to: to }, '2000-01-01T00:00:00Z').read?.days).toBe(3_700);
    const err = expectValidation(
      () => read({ date_from: daysBefore(to, 3_700), date_to: to }, '2000-01-01T00:00:00Z'),
      'date_from',
    );
    expect(err.detail).toContain('3,700');
    expect(err.detail).toContain('3,701');
    // The same request is answered once the first event leaves fewer days to read.
    expect(read({ date_from: daysBefore(to, 3_700), date_to: to }, '2015-01-01T00:00:00Z').read?.days).toBe(
      (Date.parse(`${to}T00:00:00Z`) - Date.parse('2015-01-01T00:00:00Z')) / DAY + 1,
    );
  });

  it('names the comparison when only the compared period goes over', () => {
    expectValidation(() => read({ date_from: '-2000d', compare: true }, '2000-01-01T00:00:00Z'), 'compare');
    expectValidation(() => read({ date_from: '-7d', compare_to: '-100y' }, '2000-01-01T00:00:00Z'), 'compare_to');
    expect(read({ date_from: '-7d', compare_to: '-100y' }, '2024-01-01T00:00:00Z').read?.days).toBe(72);
  });
});
