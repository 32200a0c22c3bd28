import { describe, expect, it } from 'vitest';
import { BREAKDOWN_NULL_VALUE, BREAKDOWN_OTHER_VALUE } from '#shared/trends/index.ts';
import { ev, expectValidation, project, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';

describe('compare', () => {
  // Current period Jan 8..10, previous Jan 5..7; Jan 4 is in neither.
  const events = ['04', '05', '07', '07', '08', '10', '10', '10'].map((d) => ev('e', `2020-01-${d}T06:00:00Z`));

  it('returns each series twice: current, then the previous period of the same length immediately before', () => {
    const res = trend({ events: [{ id: 'e' }], date_from: '-2d', compare: true }, events, { now: NOW });
    const [current, previous] = res.result;
    expect(res.result).toHaveLength(2);
    expect(current).toMatchObject({
      compare: true,
      compare_label: 'current',
      data: [1, 0, 3],
      count: 4,
      days: ['2020-01-08', '2020-01-09', '2020-01-10'],
    });
    expect(previous).toMatchObject({
      compare: true,
      compare_label: 'previous',
      data: [1, 0, 2],
      count: 3,
      days: ['2020-01-05', '2020-01-06', '2020-01-07'],
    });
    expect(previous!.filter).toMatchObject({
      date_from: '2020-01-05T00:00:00+00:00',
      date_to: '2020-01-07T23:59:59.999+00:00',
      compare: true,
    });
  });

  it('labels compared rows by position: day 0, day 1, ...', () => {
    const res = trend({ events: [{ id: 'e' }], date_from: '-2d', compare: 'true' }, events, { now: NOW });
    expect(res.result.map((s) => s.labels)).toEqual([
      ['day 0', 'day 1', 'day 2'],
      ['day 0', 'day 1', 'day 2'],
    ]);
    const hourly = trend({ events: [{ id: 'e' }], date_from: '-2h', interval: 'hour', compare: true }, [], {
      now: '2020-01-10T12:30:00Z',
    });
    expect(hourly.result[0]!.labels).toEqual(['hour 0', 'hour 1', 'hour 2']);
    expect(hourly.result[1]!.labels).toEqual(['hour 0', 'hour 1', 'hour 2']);
  });

  it('hourly: the previous period keeps the time of day, so a range shorter than a day compares with itself (get_compare_period_dates)', () => {
    // -2h at 12:30: from 10:00, end 12:59:59.999, diff 2h59m59.999s. 10:00 - diff = 07:00:00.001 on 01-10, put back at
    // 10:00 (date_from's time of day): the previous period is 01-10 10:00..12:59:59.999 again, as PostHog computes it.
    const evs = [ev('e', '2020-01-10T08:00:00Z'), ev('e', '2020-01-10T10:30:00Z')];
    const res = trend({ events: [{ id: 'e' }], date_from: '-2h', interval: 'hour', compare: true }, evs, {
      now: '2020-01-10T12:30:00Z',
    });
    expect(res.result[1]).toMatchObject({
      days: ['2020-01-10 10:00:00', '2020-01-10 11:00:00', '2020-01-10 12:00:00'],
      data: [1, 0, 0],
    });
  });

  it('-7d by day on Wed 2024-03-13: the previous period ends on the current first day (the multiple-of-7 rule)', () => {
    // Current: 03-06 00:00 .. 03-13 23:59:59.999, 8 buckets; diff = 7d 23:59:59.999. 03-06 00:00 - diff = 02-27 00:00:00.001,
    // at date_from's time of day 02-27 00:00, plus one day because -7d is a multiple of 7 days with no date_to: 02-28 00:00.
    // End: 02-28 00:00 + diff = 03-06 23:59:59.999. So 02-28 .. 03-06 (8 buckets, 2024 is a leap year) and 03-06 is in both.
    const evs = ['2024-02-27', '2024-02-28', '2024-03-06', '2024-03-13'].map((d) => ev('e', `${d}T06:00:00Z`));
    const now = { now: '2024-03-13T12:00:00Z' };
    const res = trend({ events: [{ id: 'e' }], date_from: '-7d', compare: true }, evs, now);
    expect(res.result[0]).toMatchObject({
      data: [1, 0, 0, 0, 0, 0, 0, 1],
      days: [
        '2024-03-06',
        '2024-03-07',
        '2024-03-08',
        '2024-03-09',
        '2024-03-10',
        '2024-03-11',
        '2024-03-12',
        '2024-03-13',
      ],
    });
    expect(res.result[1]).toMatchObject({
      compare_label: 'previous',
      days: [
        '2024-02-28',
        '2024-02-29',
        '2024-03-01',
        '2024-03-02',
        '2024-03-03',
        '2024-03-04',
        '2024-03-05',
        '2024-03-06',
      ],
      data: [1, 0, 0, 0, 0, 0, 0, 1],
      count: 2,
    });
    expect(res.result[1]!.filter).toMatchObject({
      date_from: '2024-02-28T00:00:00+00:00',
      date_to: '2024-03-06T23:59:59.999+00:00',
    });
    // -14d: from 02-28, diff 14d 23:59:59.999 -> 02-13, +1 day -> 02-14 .. 02-28 (15 buckets).
    const fortnight = trend({ events: [{ id: 'e' }], date_from: '-14d', compare: true }, [], now).result[1]!;
    expect([fortnight.days[0], fortnight.days.at(-1), fortnight.days.length]).toEqual(['2024-02-14', '2024-02-28', 15]);
    // No extra day for a week delta (-1w), nor when date_to is given: the 8 days right before, 02-27 .. 03-05.
    for (const extra of [{ date_from: '-1w' }, { date_from: '-7d', date_to: '2024-03-13' }]) {
      const p = trend({ events: [{ id: 'e' }], compare: true, ...extra }, evs, now).result[1]!;
      expect([p.days[0], p.days.at(-1), p.data]).toEqual(['2024-02-27', '2024-03-05', [1, 1, 0, 0, 0, 0, 0, 0]]);
    }
  });

  it('a single fixed day compares with the day before', () => {
    // 03-13 00:00 .. 23:59:59.999: diff 23:59:59.999 -> 03-12 00:00 .. 03-12 23:59:59.999.
    const evs = [
      ev('e', '2024-03-11T23:00:00Z'),
      ev('e', '2024-03-12T01:00:00Z'),
      ev('e', '2024-03-12T23:00:00Z'),
      ev('e', '2024-03-13T01:00:00Z'),
    ];
    const res = trend({ events: [{ id: 'e' }], date_from: '2024-03-13', date_to: '2024-03-13', compare: true }, evs, {
      now: '2024-03-20T00:00:00Z',
    });
    expect(res.result.map((s) => [s.compare_label, s.days, s.data])).toEqual([
      ['current', ['2024-03-13'], [1]],
      ['previous', ['2024-03-12'], [2]],
    ]);
  });

  it('dStart hourly compares with the same hours of yesterday', () => {
    // now 03-13 15:20: current 00:00 .. the current hour (ends 15:59:59.999), 16 buckets; diff 15h59m59.999s.
    // 00:00 - diff = 03-12 08:00:00.001, at 00:00 -> 03-12 00:00; end 03-12 15:59:59.999: yesterday 00:00..15:00.
    const evs = [
      ev('e', '2024-03-12T00:30:00Z'),
      ev('e', '2024-03-12T15:30:00Z'),
      ev('e', '2024-03-12T16:30:00Z'),
      ev('e', '2024-03-12T23:30:00Z'),
    ];
    const res = trend({ events: [{ id: 'e' }], date_from: 'dStart', interval: 'hour', compare: true }, evs, {
      now: '2024-03-13T15:20:00Z',
    });
    const previous = res.result[1]!;
    expect(res.result[0]!.days).toHaveLength(16);
    expect(previous.days).toHaveLength(16);
    expect([previous.days[0], previous.days[15]]).toEqual(['2024-03-12 00:00:00', '2024-03-12 15:00:00']);
    expect(previous.data).toEqual([1, ...new Array(14).fill(0), 1]);
  });

  it('compare_to: previous start = current start moved back, previous end = that + the current length', () => {
    // -2h hourly at 12:30 with compare_to -1d: current 10:00 .. now 12:30 (2h30m); previous 01-09 10:00 .. 01-09 12:30,
    // so an event at 01-09 12:45 is after the previous end.
    const evs = [ev('e', '2020-01-09T10:15:00Z'), ev('e', '2020-01-09T12:15:00Z'), ev('e', '2020-01-09T12:45:00Z')];
    const res = trend({ events: [{ id: 'e' }], date_from: '-2h', interval: 'hour', compare_to: '-1d' }, evs, {
      now: '2020-01-10T12:30:00Z',
    });
    expect(res.result[1]).toMatchObject({
      days: ['2020-01-09 10:00:00', '2020-01-09 11:00:00', '2020-01-09 12:00:00'],
      data: [1, 0, 1],
    });
    // Month interval, March with -1w: 02-23 00:00 + 30d 23:59:59.999 = 03-24 23:59:59.999, rounded down to 02-01:
    // two month buckets, March counted up to the 24th.
    const monthly = [ev('e', '2024-02-10T00:00:00Z'), ev('e', '2024-03-24T12:00:00Z'), ev('e', '2024-03-25T12:00:00Z')];
    const m = trend(
      { events: [{ id: 'e' }], date_from: '2024-03-01', date_to: '2024-03-31', interval: 'month', compare_to: '-1w' },
      monthly,
      { now: '2024-04-10T00:00:00Z' },
    );
    expect(m.result[1]).toMatchObject({
      days: ['2024-02-01', '2024-03-01'],
      data: [1, 1],
      labels: ['month 0', 'month 1'],
    });
  });

  it('the bucket cap also holds for the compared period (a 400, not a crash)', () => {
    // New York, hourly, 2025-01-20T12:00Z .. 2026-03-12 end: 10,000 hourly buckets, the cap, with DST going -1 h,
    // +1 h, -1 h. The previous period, the same wall-clock length, crosses one change fewer the other way round
    // and holds one real hour more: 10,001.
    const request = {
      events: [{ id: 'e' }],
      interval: 'hour',
      date_from: '2025-01-20T12:00:00Z',
      date_to: '2026-03-12',
    };
    const opts = { now: '2026-04-01T00:00:00Z', project: project('America/New_York') };
    expect(trend(request, [], opts).result[0]!.data).toHaveLength(10_000);
    const err = expectValidation(() => trend({ ...request, compare: true }, [], opts), 'interval');
    expect(err.detail).toContain('10,001');
  }, 60_000); // ~20,000 buckets: a few seconds on a loaded machine

  it('compare_to moves the compared period by that offset', () => {
    const evs = [ev('e', '2020-01-01T06:00:00Z'), ev('e', '2020-01-01T07:00:00Z'), ev('e', '2020-01-03T06:00:00Z')];
    const res = trend({ events: [{ id: 'e' }], date_from: '-2d', compare: true, compare_to: '-1w' }, evs, { now: NOW });
    expect(res.result[1]).toMatchObject({
      compare_label: 'previous',
      days: ['2020-01-01', '2020-01-02', '2020-01-03'],
      data: [2, 0, 1],
    });
    expect(res.result[0]!.filter.compare_to).toBe('-1w');
  });

  it('keeps each series with its previous period, series by series', () => {
    const res = trend(
      { events: [{ id: 'e' }, { id: 'e', custom_name: 'B' }], date_from: '-2d', compare: true },
      events,
      { now: NOW },
    );
    expect(res.result.map((s) => [s.label, s.compare_label])).toEqual([
      ['e', 'current'],
      ['e', 'previous'],
      ['B', 'current'],
      ['B', 'previous'],
    ]);
  });

  it('crosses a DST change by local days (New York, previous period holds the 23-hour day)', () => {
    const evs = [ev('e', '2024-03-11T03:30:00Z')]; // Mar 10 23:30 EDT
    const res = trend({ events: [{ id: 'e' }], date_from: '2024-03-11', date_to: '2024-03-12', compare: true }, evs, {
      now: '2024-03-20T00:00:00Z',
      project: project('America/New_York'),
    });
    expect(res.result[1]).toMatchObject({ days: ['2024-03-09', '2024-03-10'], data: [0, 1] });
    expect(res.result[1]!.filter).toMatchObject({
      date_from: '2024-03-09T00:00:00-05:00',
      date_to: '2024-03-10T23:59:59.999-04:00',
    });
  });
});

describe('formula', () => {
  // A = 'a': Jan 8 x2, Jan 10 x1 -> [2, 0, 1]; B = 'b': Jan 8 x1 -> [1, 0, 0].
  const events = [
    ev('a', '2020-01-08T01:00:00Z'),
    ev('a', '2020-01-08T02:00:00Z'),
    ev('a', '2020-01-10T01:00:00Z'),
    ev('b', '2020-01-08T03:00:00Z'),
  ];
  const run = (formula: string, extra: Record<string, unknown> = {}, evs = events) =>
    trend(
      { events: [{ id: 'a' }, { id: 'b' }], date_from: '2020-01-08', date_to: '2020-01-10', formula, ...extra },
      evs,
      { now: NOW },
    );

  it('replaces the series with one series labelled "Formula (...)" and no action', () => {
    const res = run('A+B');
    expect(res.result).toHaveLength(1);
    expect(res.result[0]).toMatchObject({ label: 'Formula (A+B)', action: null, data: [3, 0, 1], count: 4 });
    expect(res.result[0]!.filter.formula).toBe('A+B');
  });

  it('division by zero gives 0', () => {
    expect(run('A/B').result[0]).toMatchObject({ data: [2, 0, 0], count: 2 });
  });

  it('letters are case-insensitive; constants, unary minus, precedence and parentheses work', () => {
    expect(run('a*2 - b').result[0]!.data).toEqual([3, 0, 2]);
    expect(run('(A+B)*10/4').result[0]!.data).toEqual([7.5, 0, 2.5]);
    expect(run('-A + 1').result[0]!.data).toEqual([-1, 1, 0]);
  });

  it('letters follow the series order given by `order`', () => {
    const res = trend(
      {
        events: [
          { id: 'a', order: 1 },
          { id: 'b', order: 0 },
        ],
        date_from: '2020-01-08',
        date_to: '2020-01-10',
        formula: 'A-B',
      },
      events,
      {
        now: NOW,
      },
    );
    expect(res.result[0]!.data).toEqual([-1, 0, -1]); // A is now 'b'
  });

  it('with a breakdown: one row per value across series, a value missing in one series counts as 0 there', () => {
    const evs = [
      ev('a', '2020-01-08T01:00:00Z', { props: { browser: 'Chrome' } }),
      ev('a', '2020-01-08T02:00:00Z', { props: { browser: 'Chrome' } }),
      ev('a', '2020-01-09T01:00:00Z', { props: { browser: 'Firefox' } }),
      ev('b', '2020-01-08T03:00:00Z', { props: { browser: 'Chrome' } }),
      ...[1, 2, 3].map((h) => ev('b', `2020-01-10T0${h}:00:00Z`, { props: { browser: 'Safari' } })),
    ];
    const res = run('A-B', { breakdown: 'browser' }, evs);
    expect(res.result.map((s) => [s.label, s.breakdown_value, s.data, s.action])).toEqual([
      ['Chrome', 'Chrome', [1, 0, 0], null],
      ['Firefox', 'Firefox', [0, 1, 0], null],
      ['Safari', 'Safari', [0, 0, -3], null],
    ]);
  });

  it('with a breakdown: values by their formula total, largest first, then the None row, then Other', () => {
    // breakdown_limit 2. Series a: None x3, Chrome x2, Edge x1 -> rows None 3, Chrome 2, Other 1 (Edge).
    // Series b: Safari x4, Chrome x1. A+B per value: None 3, Chrome 2+1 = 3, Other 1, Safari 4.
    const at = (event: string, browser: string | undefined, hour: number) =>
      ev(event, `2020-01-08T${String(hour).padStart(2, '0')}:00:00Z`, {
        props: browser === undefined ? {} : { browser },
      });
    const evs = [
      ...[1, 2, 3].map((h) => at('a', undefined, h)),
      at('a', 'Chrome', 4),
      at('a', 'Chrome', 5),
      at('a', 'Edge', 6),
      ...[1, 2, 3, 4].map((h) => at('b', 'Safari', h)),
      at('b', 'Chrome', 7),
    ];
    const res = run('A+B', { breakdown: 'browser', breakdown_limit: 2 }, evs);
    expect(res.result.map((s) => [s.breakdown_value, s.count])).toEqual([
      ['Safari', 4],
      ['Chrome', 3],
      [BREAKDOWN_NULL_VALUE, 3],
      [BREAKDOWN_OTHER_VALUE, 1],
    ]);
    // The same order by aggregated value with an aggregated display.
    const table = run('A+B', { breakdown: 'browser', breakdown_limit: 2, display: 'ActionsTable' }, evs);
    expect(table.result.map((s) => [s.breakdown_value, s.aggregated_value])).toEqual([
      ['Safari', 4],
      ['Chrome', 3],
      [BREAKDOWN_NULL_VALUE, 3],
      [BREAKDOWN_OTHER_VALUE, 1],
    ]);
  });

  it('with a breakdown an empty-string value is the same row as no value', () => {
    const evs = [ev('a', '2020-01-08T01:00:00Z', { props: { browser: '' } }), ev('b', '2020-01-08T01:00:00Z')];
    expect(run('A+B', { breakdown: 'browser' }, evs).result.map((s) => [s.breakdown_value, s.count])).toEqual([
      [BREAKDOWN_NULL_VALUE, 2],
    ]);
  });

  it('with compare: computed per period', () => {
    const evs = [
      ev('a', '2020-01-05T01:00:00Z'),
      ev('b', '2020-01-05T01:00:00Z'),
      ev('b', '2020-01-06T01:00:00Z'),
      ...events,
    ];
    const res = run('A+B', { compare: true }, evs);
    expect(res.result.map((s) => [s.label, s.compare_label, s.data])).toEqual([
      ['Formula (A+B)', 'current', [3, 0, 1]],
      ['Formula (A+B)', 'previous', [2, 1, 0]],
    ]);
  });

  it('with an aggregated display: applied to the whole-range aggregates', () => {
    const evs = [
      ev('a', '2020-01-08T01:00:00Z', { props: { amount: 2 } }),
      ev('a', '2020-01-08T02:00:00Z', { props: { amount: 4 } }),
      ev('a', '2020-01-10T01:00:00Z', { props: { amount: 10 } }),
      ev('b', '2020-01-08T01:00:00Z'),
      ev('b', '2020-01-09T01:00:00Z'),
      ev('b', '2020-01-10T01:00:00Z'),
    ];
    const res = trend(
      {
        events: [{ id: 'a', math: 'avg', math_property: 'amount' }, { id: 'b' }],
        date_from: '2020-01-08',
        date_to: '2020-01-10',
        formula: 'A*B',
        display: 'BoldNumber',
      },
      evs,
      { now: NOW },
    );
    // avg over all of A's events (16/3) times B's total (3)
    expect(res.result[0]!.aggregated_value).toBeCloseTo(16, 10);
  });

  it('with the cumulative display: the running sum of the formula', () => {
    expect(run('A+B', { display: 'ActionsLineGraphCumulative' }).result[0]!.data).toEqual([3, 3, 4]);
  });
});
