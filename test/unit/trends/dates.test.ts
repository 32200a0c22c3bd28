import { describe, expect, it } from 'vitest';
import {
  instantInRange,
  MAX_INSTANT,
  MIN_INSTANT,
  parseDateExpression,
  relativeParts,
  resolveExpression,
} from '#shared/trends/dates.ts';
import { eventsNeeded, needsEventNames, parseTrendRequest, resolveDateRange } from '#shared/trends/index.ts';
import { ev, expectValidation, iso, project, trend } from './helpers.ts';

const range = (request: Record<string, unknown>, now: string, p = project(), firstEventAt?: string) =>
  resolveDateRange(
    parseTrendRequest({ events: [{ id: 'e' }], ...request }),
    p,
    new Date(now),
    firstEventAt ? new Date(firstEventAt) : undefined,
  );

describe('relative ranges', () => {
  it('-7d starts at 00:00 seven days back and ends at the end of today: 8 daily buckets', () => {
    const events = [ev('e', '2020-01-02T23:59:59Z'), ev('e', '2020-01-03T00:00:00Z'), ev('e', '2020-01-10T23:00:00Z')];
    const [s] = trend({ events: [{ id: 'e' }], date_from: '-7d' }, events, { now: '2020-01-10T12:00:00Z' }).result;
    expect(s!.days).toEqual([
      '2020-01-03',
      '2020-01-04',
      '2020-01-05',
      '2020-01-06',
      '2020-01-07',
      '2020-01-08',
      '2020-01-09',
      '2020-01-10',
    ]);
    expect(s!.labels[0]).toBe('3-Jan-2020');
    expect(s!.labels[7]).toBe('10-Jan-2020');
    expect(s!.data).toEqual([1, 0, 0, 0, 0, 0, 0, 1]);
    expect(s!.count).toBe(2);
  });

  it('defaults to -7d when date_from is absent', () => {
    const r = range({}, '2020-01-10T12:00:00Z');
    expect(iso(r.from)).toBe('2020-01-03T00:00:00.000Z');
    expect(iso(r.to)).toBe('2020-01-10T23:59:59.999Z');
    expect(r.buckets).toHaveLength(8);
  });

  it('-24h hourly starts at the top of that hour and ends at now', () => {
    const events = [
      ev('e', '2020-10-31T12:59:00Z'),
      ev('e', '2020-10-31T13:00:00Z'),
      ev('e', '2020-11-01T13:10:00Z'),
      ev('e', '2020-11-01T13:30:00Z'), // after now
    ];
    const res = trend({ events: [{ id: 'e' }], date_from: '-24h', interval: 'hour' }, events, {
      now: '2020-11-01T13:25:00Z',
    });
    const s = res.result[0]!;
    expect(s.data).toHaveLength(25);
    expect(s.labels[0]).toBe('31-Oct-2020 13:00');
    expect(s.labels[24]).toBe('1-Nov-2020 13:00');
    expect(s.days[0]).toBe('2020-10-31 13:00:00');
    expect(s.data[0]).toBe(1);
    expect(s.data[24]).toBe(1);
    expect(s.count).toBe(2);
    const r = range({ date_from: '-24h', interval: 'hour' }, '2020-11-01T13:25:00Z');
    expect(iso(r.from)).toBe('2020-10-31T13:00:00.000Z');
    expect(iso(r.to)).toBe('2020-11-01T13:25:00.000Z');
  });

  it('-48h hourly gives 49 buckets', () => {
    expect(range({ date_from: '-48h', interval: 'hour' }, '2020-11-01T13:25:00Z').buckets).toHaveLength(49);
  });

  it('an hour-unit range inside one day keeps its hour lower bound (one bucket, nothing to round)', () => {
    const events = [ev('e', '2020-01-10T12:30:00Z'), ev('e', '2020-01-10T13:30:00Z')];
    const res = trend({ events: [{ id: 'e' }], date_from: '-2h' }, events, { now: '2020-01-10T15:20:00Z' });
    expect(res.result[0]!.data).toEqual([1]);
    expect(iso(range({ date_from: '-2h' }, '2020-01-10T15:20:00Z').from)).toBe('2020-01-10T13:00:00.000Z');
  });

  it('-24h by day is not rounded (shorter than two days), -48h is rounded to the start of its first day (should_round)', () => {
    // now Fri 2020-01-10 15:20. -24h: from 01-09 15:00; adjusted end 01-10 23:59:59.999; 32h59m59.999s < 2 x 24h,
    // so the lower bound stays at 15:00: the 01-09 bucket is shown but its 01:00 event is outside the range.
    const events = [
      ev('e', '2020-01-08T01:00:00Z'),
      ev('e', '2020-01-09T01:00:00Z'),
      ev('e', '2020-01-09T16:00:00Z'),
      ev('e', '2020-01-10T10:00:00Z'),
    ];
    const day = trend({ events: [{ id: 'e' }], date_from: '-24h' }, events, { now: '2020-01-10T15:20:00Z' }).result[0]!;
    expect(day.days).toEqual(['2020-01-09', '2020-01-10']);
    expect(day.data).toEqual([1, 1]);
    expect(iso(range({ date_from: '-24h' }, '2020-01-10T15:20:00Z').from)).toBe('2020-01-09T15:00:00.000Z');
    // -48h: from 01-08 15:00; 56h59m59.999s >= 48h, so it counts from 01-08 00:00 and the 01-08 01:00 event is in.
    const two = trend({ events: [{ id: 'e' }], date_from: '-48h' }, events, { now: '2020-01-10T15:20:00Z' }).result[0]!;
    expect(two.days).toEqual(['2020-01-08', '2020-01-09', '2020-01-10']);
    expect(two.data).toEqual([1, 2, 1]);
    expect(iso(range({ date_from: '-48h' }, '2020-01-10T15:20:00Z').from)).toBe('2020-01-08T00:00:00.000Z');
  });

  it('a day-unit relative date_from starts at 00:00 also with an hour interval', () => {
    // -1d at 2020-01-10 03:30: 01-09 00:00 .. the current hour 01-10 03:00 = 24 + 4 hourly buckets.
    const r = range({ date_from: '-1d', interval: 'hour' }, '2020-01-10T03:30:00Z');
    expect(iso(r.from)).toBe('2020-01-09T00:00:00.000Z');
    expect(r.buckets).toHaveLength(28);
  });

  it('resolves -1w, -1m, -1y, -1q, dStart, mStart, yStart, -1mStart/-1mEnd, -1yStart/-1yEnd', () => {
    const now = '2024-03-27T12:00:00Z';
    const from = (date_from: string) => iso(range({ date_from }, now).from);
    expect(from('-1w')).toBe('2024-03-20T00:00:00.000Z');
    expect(from('-1m')).toBe('2024-02-27T00:00:00.000Z');
    expect(from('-1y')).toBe('2023-03-27T00:00:00.000Z');
    expect(from('-1q')).toBe('2023-12-27T00:00:00.000Z'); // 13 weeks
    expect(from('-1qStart')).toBe('2023-10-01T00:00:00.000Z');
    expect(from('dStart')).toBe('2024-03-27T00:00:00.000Z');
    expect(range({ date_from: 'dStart' }, now).buckets).toHaveLength(1);
    expect(from('mStart')).toBe('2024-03-01T00:00:00.000Z');
    expect(from('yStart')).toBe('2024-01-01T00:00:00.000Z');
    const lastMonth = range({ date_from: '-1mStart', date_to: '-1mEnd' }, now);
    expect(iso(lastMonth.from)).toBe('2024-02-01T00:00:00.000Z');
    expect(iso(lastMonth.to)).toBe('2024-02-29T23:59:59.999Z');
    expect(lastMonth.buckets).toHaveLength(29);
    const lastYear = range({ date_from: '-1yStart', date_to: '-1yEnd', interval: 'month' }, now);
    expect(iso(lastYear.from)).toBe('2023-01-01T00:00:00.000Z');
    expect(iso(lastYear.to)).toBe('2023-12-31T23:59:59.999Z');
    expect(lastYear.buckets).toHaveLength(12);
  });

  it('-1m clamps to the end of a shorter month (relativedelta)', () => {
    expect(iso(range({ date_from: '-1m' }, '2024-03-31T12:00:00Z').from)).toBe('2024-02-29T00:00:00.000Z');
  });

  it('wStart follows the project week start', () => {
    // 2024-03-27 is a Wednesday.
    expect(iso(range({ date_from: 'wStart' }, '2024-03-27T12:00:00Z', project('UTC', 0)).from)).toBe(
      '2024-03-24T00:00:00.000Z',
    );
    expect(iso(range({ date_from: 'wStart' }, '2024-03-27T12:00:00Z', project('UTC', 1)).from)).toBe(
      '2024-03-25T00:00:00.000Z',
    );
  });
});

describe('explicit dates', () => {
  it('widens a date-only date_to to the end of that day', () => {
    const events = [ev('e', '2020-01-03T23:30:00Z'), ev('e', '2020-01-04T00:00:00Z')];
    const res = trend({ events: [{ id: 'e' }], date_from: '2020-01-01', date_to: '2020-01-03' }, events, {
      now: '2020-02-01T00:00:00Z',
    });
    expect(res.result[0]!.data).toEqual([0, 0, 1]);
    expect(iso(range({ date_from: '2020-01-01', date_to: '2020-01-03T10:00:00' }, '2020-02-01T00:00:00Z').to)).toBe(
      '2020-01-03T23:59:59.999Z',
    );
  });

  it('widens a date_to with a time to the end of its hour for hourly ranges', () => {
    const events = [ev('e', '2020-01-03T10:45:00Z'), ev('e', '2020-01-03T11:05:00Z')];
    const res = trend(
      { events: [{ id: 'e' }], date_from: '2020-01-03T08:00:00', date_to: '2020-01-03 10:15', interval: 'hour' },
      events,
      {
        now: '2020-02-01T00:00:00Z',
      },
    );
    expect(res.result[0]!.days).toEqual(['2020-01-03 08:00:00', '2020-01-03 09:00:00', '2020-01-03 10:00:00']);
    expect(res.result[0]!.data).toEqual([0, 0, 1]);
  });

  it('rounds a datetime date_from back only when the range lasts two intervals or more (duration, not bucket count)', () => {
    const events = [ev('e', '2020-01-05T12:00:00Z'), ev('e', '2020-01-05T14:00:00Z')];
    const now = { now: '2020-02-01T00:00:00Z' };
    const data = (date_to: string) =>
      trend({ events: [{ id: 'e' }], date_from: '2020-01-05T13:00:00', date_to }, events, now).result[0]!.data;
    // 13:00 .. 01-05 23:59:59.999: 11h, kept as given.
    expect(data('2020-01-05')).toEqual([1]);
    // 13:00 .. 01-06 23:59:59.999: 34h59m59.999s < 48h: two buckets, but still not rounded; 12:00 is outside.
    expect(data('2020-01-06')).toEqual([1, 0]);
    // 13:00 .. 01-07 23:59:59.999: 58h59m59.999s >= 48h: counted from 01-05 00:00.
    expect(data('2020-01-07')).toEqual([2, 0, 0]);
  });

  it('hourly: rounds the lower bound to its hour only when the range to the end of its last hour lasts 2 hours or more', () => {
    const events = [ev('e', '2020-01-05T13:10:00Z'), ev('e', '2020-01-05T13:30:00Z')];
    const run = (extra: Record<string, unknown>, now: string) =>
      trend({ events: [{ id: 'e' }], date_from: '2020-01-05T13:20:00', interval: 'hour', ...extra }, events, { now })
        .result[0]!;
    // date_to 14:00 -> adjusted to 14:59:59.999; 13:20 .. 14:59:59.999 = 1h39m59.999s < 2h: not rounded, 13:10 is outside.
    const short = run({ date_to: '2020-01-05 14:00:00' }, '2020-02-01T00:00:00Z');
    expect(short.days).toEqual(['2020-01-05 13:00:00', '2020-01-05 14:00:00']);
    expect(short.data).toEqual([1, 0]);
    // date_to 15:00 -> 15:59:59.999: 2h39m59.999s >= 2h: counted from 13:00.
    expect(run({ date_to: '2020-01-05 15:00:00' }, '2020-02-01T00:00:00Z').data).toEqual([2, 0, 0]);
    // No date_to: the range ends with the current hour. now 14:10 -> 14:59:59.999 (not rounded); now 15:10 -> 15:59:59.999
    // (2h39m59.999s: rounded, although now - 13:20 is only 1h50m).
    expect(run({}, '2020-01-05T14:10:00Z').data).toEqual([1, 0]);
    expect(run({}, '2020-01-05T15:10:00Z').data).toEqual([2, 0, 0]);
  });

  it('explicit_date uses the given datetimes as they are', () => {
    const events = [
      ev('e', '2020-01-05T12:00:00Z'),
      ev('e', '2020-01-05T14:00:00Z'),
      ev('e', '2020-01-06T09:00:00Z'),
      ev('e', '2020-01-06T11:00:00Z'),
    ];
    const res = trend(
      { events: [{ id: 'e' }], date_from: '2020-01-05T13:00:00', date_to: '2020-01-06T10:00:00', explicit_date: true },
      events,
      {
        now: '2020-02-01T00:00:00Z',
      },
    );
    expect(res.result[0]!.data).toEqual([1, 1]);
  });

  it('reads a datetime with an offset as that instant', () => {
    expect(
      iso(
        range(
          { date_from: '2020-01-05T13:00:00+02:00', date_to: '2020-01-05', explicit_date: true },
          '2020-02-01T00:00:00Z',
        ).from,
      ),
    ).toBe('2020-01-05T11:00:00.000Z');
  });

  it('all starts at the first event; without one it falls back to -7d', () => {
    const withFirst = range({ date_from: 'all' }, '2024-03-08T12:00:00Z', project(), '2024-03-05T10:00:00Z');
    expect(iso(withFirst.from)).toBe('2024-03-05T00:00:00.000Z');
    expect(withFirst.buckets).toHaveLength(4);
    const without = range({ date_from: 'all' }, '2024-03-08T12:00:00Z');
    expect(iso(without.from)).toBe('2024-03-01T00:00:00.000Z');
    expect(without.buckets).toHaveLength(8);
  });
});

describe('absolute date forms PostHog accepts', () => {
  const now = '2020-07-01T00:00:00Z';

  it('non-zero-padded YYYY-M-D, alone and with a time', () => {
    const events = [ev('e', '2020-06-01T10:00:00Z'), ev('e', '2020-06-03T23:00:00Z'), ev('e', '2020-06-04T00:00:00Z')];
    const s = trend({ events: [{ id: 'e' }], date_from: '2020-6-01', date_to: '2020-6-3' }, events, { now }).result[0]!;
    expect(s.days).toEqual(['2020-06-01', '2020-06-02', '2020-06-03']);
    expect(s.data).toEqual([1, 0, 1]);
    expect(
      iso(range({ date_from: '2020-6-1 13:00:00', date_to: '2020-6-1 15:00:00', explicit_date: true }, now).from),
    ).toBe('2020-06-01T13:00:00.000Z');
  });

  it('date-times with a space, and ISO with T, fractional seconds and an offset (converted to the project zone)', () => {
    const ny = project('America/New_York'); // EDT, UTC-4, in June
    // A space-separated date-time without offset is New York time: 13:00 EDT = 17:00Z.
    const spaced = range(
      { date_from: '2020-06-01 13:00:00', date_to: '2020-06-01 15:00:00', interval: 'hour' },
      now,
      ny,
    );
    expect(iso(spaced.from)).toBe('2020-06-01T17:00:00.000Z');
    expect(iso(spaced.to)).toBe('2020-06-01T19:59:59.999Z');
    // 13:30:00.250+02:00 = 11:30:00.250Z = 07:30:00.250 EDT.
    const offset = range(
      { date_from: '2020-06-01T13:30:00.250+02:00', date_to: '2020-06-01T09:00:00.5-04:00', explicit_date: true },
      now,
      ny,
    );
    expect(iso(offset.from)).toBe('2020-06-01T11:30:00.250Z');
    expect(iso(offset.to)).toBe('2020-06-01T13:00:00.500Z');
    // Fractional seconds without an offset: the project's zone.
    expect(
      iso(range({ date_from: '2020-06-01T13:30:00.123456', date_to: '2020-06-02', explicit_date: true }, now, ny).from),
    ).toBe('2020-06-01T17:30:00.123Z');
    // A date-time with an offset as date_to is widened to the end of its local day (03:30Z on 06-02 is 23:30 EDT on 06-01).
    expect(iso(range({ date_from: '2020-06-01', date_to: '2020-06-02T03:30:00Z' }, now, ny).to)).toBe(
      '2020-06-02T03:59:59.999Z',
    );
  });

  it('still refuses dates that do not exist', () => {
    expectValidation(() => range({ date_from: '2020-2-30' }, now), 'date_from');
    expectValidation(() => range({ date_from: '2020-13-1' }, now), 'date_from');
    expectValidation(() => range({ date_from: '2020-06-01 24:00:00' }, now), 'date_from');
  });
});

describe('week and month buckets', () => {
  // 2024-03-13 and 2024-03-27 are Wednesdays; 03-10 and 03-24 Sundays.
  const events = [ev('e', '2024-03-10T12:00:00Z'), ev('e', '2024-03-11T12:00:00Z'), ev('e', '2024-03-24T12:00:00Z')];
  const request = { events: [{ id: 'e' }], date_from: '2024-03-13', interval: 'week' };

  it('moves a weekly lower bound back to the Sunday before', () => {
    const s = trend(request, events, { now: '2024-03-27T12:00:00Z', project: project('UTC', 0) }).result[0]!;
    expect(s.days).toEqual(['2024-03-10', '2024-03-17', '2024-03-24']);
    expect(s.labels).toEqual(['10-Mar-2024', '17-Mar-2024', '24-Mar-2024']);
    expect(s.data).toEqual([2, 0, 1]);
  });

  it('moves it back to the Monday before when the week starts on Monday', () => {
    const s = trend(request, events, { now: '2024-03-27T12:00:00Z', project: project('UTC', 1) }).result[0]!;
    expect(s.days).toEqual(['2024-03-11', '2024-03-18', '2024-03-25']);
    expect(s.data).toEqual([1, 1, 0]);
  });

  it('month interval: buckets from the 1st, labelled by their first day', () => {
    const monthEvents = [
      ev('e', '2024-01-02T00:00:00Z'),
      ev('e', '2024-02-29T23:00:00Z'),
      ev('e', '2024-03-10T20:00:00Z'),
      ev('e', '2024-03-11T01:00:00Z'),
    ];
    const s = trend(
      { events: [{ id: 'e' }], date_from: '2024-01-15', date_to: '2024-03-10', interval: 'month' },
      monthEvents,
      {
        now: '2024-04-01T00:00:00Z',
      },
    ).result[0]!;
    expect(s.days).toEqual(['2024-01-01', '2024-02-01', '2024-03-01']);
    expect(s.labels).toEqual(['1-Jan-2024', '1-Feb-2024', '1-Mar-2024']);
    expect(s.data).toEqual([1, 1, 1]);
  });
});

describe('time zones', () => {
  it('Asia/Tokyo: "today" is the local day that has already turned over', () => {
    const events = [ev('e', '2024-01-01T15:30:00Z'), ev('e', '2024-01-01T14:30:00Z')]; // 00:30 Jan 2 JST, 23:30 Jan 1 JST
    const now = '2024-01-01T16:00:00Z'; // 01:00 Jan 2 in Tokyo
    const tokyo = trend({ events: [{ id: 'e' }] }, events, { now, project: project('Asia/Tokyo') });
    const s = tokyo.result[0]!;
    expect(tokyo.timezone).toBe('Asia/Tokyo');
    expect(s.days.at(-1)).toBe('2024-01-02');
    expect(s.days[0]).toBe('2023-12-26');
    expect(s.data).toEqual([0, 0, 0, 0, 0, 0, 1, 1]);
    expect(s.filter.date_from).toBe('2023-12-26T00:00:00+09:00');
    const utc = trend({ events: [{ id: 'e' }] }, events, { now }).result[0]!;
    expect(utc.days.at(-1)).toBe('2024-01-01');
    expect(utc.data.at(-1)).toBe(2);
  });

  it('America/New_York spring forward: the 23-hour day is one bucket and 23:30 local lands on its own day', () => {
    const events = [
      ev('e', '2024-03-10T04:30:00Z'), // Mar 9 23:30 EST
      ev('e', '2024-03-10T06:30:00Z'), // Mar 10 01:30 EST
      ev('e', '2024-03-11T03:30:00Z'), // Mar 10 23:30 EDT
      ev('e', '2024-03-11T04:30:00Z'), // Mar 11 00:30 EDT
    ];
    const p = project('America/New_York');
    const s = trend({ events: [{ id: 'e' }], date_from: '2024-03-09', date_to: '2024-03-11' }, events, {
      now: '2024-03-20T00:00:00Z',
      project: p,
    }).result[0]!;
    expect(s.days).toEqual(['2024-03-09', '2024-03-10', '2024-03-11']);
    expect(s.data).toEqual([1, 2, 1]);
    const r = range({ date_from: '2024-03-09', date_to: '2024-03-11' }, '2024-03-20T00:00:00Z', p);
    expect(r.buckets.map(iso)).toEqual([
      '2024-03-09T05:00:00.000Z',
      '2024-03-10T05:00:00.000Z',
      '2024-03-11T04:00:00.000Z',
    ]);
    expect(iso(r.to)).toBe('2024-03-12T03:59:59.999Z');
    expect(s.filter.date_to).toBe('2024-03-11T23:59:59.999-04:00');
  });

  it('America/New_York spring forward hourly: 23 hour buckets, 02:00 does not exist', () => {
    const r = range(
      { date_from: '2024-03-10', date_to: '2024-03-10', interval: 'hour' },
      '2024-03-20T00:00:00Z',
      project('America/New_York'),
    );
    expect(r.buckets).toHaveLength(23);
    const s = trend({ events: [{ id: 'e' }], date_from: '2024-03-10', date_to: '2024-03-10', interval: 'hour' }, [], {
      now: '2024-03-20T00:00:00Z',
      project: project('America/New_York'),
    }).result[0]!;
    expect(s.labels.slice(0, 3)).toEqual(['10-Mar-2024 00:00', '10-Mar-2024 01:00', '10-Mar-2024 03:00']);
    expect(s.days[2]).toBe('2024-03-10 03:00:00');
  });

  it('America/New_York fall back: the 25-hour day is one bucket; hourly shows 01:00 twice', () => {
    const events = [
      ev('e', '2024-11-03T03:30:00Z'), // Nov 2 23:30 EDT
      ev('e', '2024-11-03T04:30:00Z'), // Nov 3 00:30 EDT
      ev('e', '2024-11-04T04:30:00Z'), // Nov 3 23:30 EST
      ev('e', '2024-11-04T05:30:00Z'), // Nov 4 00:30 EST
    ];
    const p = project('America/New_York');
    const s = trend({ events: [{ id: 'e' }], date_from: '2024-11-02', date_to: '2024-11-04' }, events, {
      now: '2024-11-10T00:00:00Z',
      project: p,
    }).result[0]!;
    expect(s.data).toEqual([1, 2, 1]);
    const hourly = trend(
      { events: [{ id: 'e' }], date_from: '2024-11-03', date_to: '2024-11-03', interval: 'hour' },
      [],
      {
        now: '2024-11-10T00:00:00Z',
        project: p,
      },
    ).result[0]!;
    expect(hourly.labels).toHaveLength(25);
    expect(hourly.labels.slice(1, 3)).toEqual(['3-Nov-2024 01:00', '3-Nov-2024 01:00']);
  });

  it('Europe/London: the day after the spring change starts at 23:00 UTC', () => {
    const events = [ev('e', '2024-03-31T22:30:00Z'), ev('e', '2024-03-31T23:30:00Z')]; // 23:30 BST Mar 31, 00:30 BST Apr 1
    const p = project('Europe/London');
    const s = trend({ events: [{ id: 'e' }], date_from: '2024-03-30', date_to: '2024-04-01' }, events, {
      now: '2024-04-10T00:00:00Z',
      project: p,
    }).result[0]!;
    expect(s.data).toEqual([0, 1, 1]);
    expect(
      range({ date_from: '2024-03-30', date_to: '2024-04-01' }, '2024-04-10T00:00:00Z', p).buckets.map(iso),
    ).toEqual(['2024-03-30T00:00:00.000Z', '2024-03-31T00:00:00.000Z', '2024-03-31T23:00:00.000Z']);
  });

  it('Asia/Kolkata (+05:30): days start at 18:30 UTC and hours at half past', () => {
    const p = project('Asia/Kolkata');
    const events = [ev('e', '2024-01-01T18:29:00Z'), ev('e', '2024-01-01T18:31:00Z')];
    const s = trend({ events: [{ id: 'e' }], date_from: '2024-01-01', date_to: '2024-01-02' }, events, {
      now: '2024-01-10T00:00:00Z',
      project: p,
    }).result[0]!;
    expect(s.data).toEqual([1, 1]);
    const hourlyEvents = [
      ev('e', '2024-01-01T08:29:00Z'),
      ev('e', '2024-01-01T08:31:00Z'),
      ev('e', '2024-01-01T10:40:00Z'),
    ];
    const h = trend({ events: [{ id: 'e' }], date_from: '-2h', interval: 'hour' }, hourlyEvents, {
      now: '2024-01-01T10:45:00Z',
      project: p,
    }).result[0]!;
    expect(h.labels).toEqual(['1-Jan-2024 14:00', '1-Jan-2024 15:00', '1-Jan-2024 16:00']);
    expect(h.data).toEqual([1, 0, 1]);
    expect(range({ date_from: '-2h', interval: 'hour' }, '2024-01-01T10:45:00Z', p).buckets.map(iso)[0]).toBe(
      '2024-01-01T08:30:00.000Z',
    );
  });
});

describe('what storage must read', () => {
  const needed = (request: Record<string, unknown>) => {
    const q = parseTrendRequest({ events: [{ id: 'e' }], ...request });
    const r = eventsNeeded(q, resolveDateRange(q, project(), new Date('2020-01-10T12:00:00Z')));
    return [iso(r.from), iso(r.to)];
  };

  it('is the range itself for plain counts', () => {
    expect(needed({})).toEqual(['2020-01-03T00:00:00.000Z', '2020-01-10T23:59:59.999Z']);
  });

  it('reaches back 6 days for weekly_active and 29 for monthly_active', () => {
    expect(needed({ events: [{ id: 'e', math: 'weekly_active' }] })[0]).toBe('2019-12-28T00:00:00.000Z');
    expect(needed({ events: [{ id: 'e', math: 'monthly_active' }] })[0]).toBe('2019-12-05T00:00:00.000Z');
  });

  it('includes the compared period (and its lookback)', () => {
    expect(needed({ compare: true })[0]).toBe('2019-12-26T00:00:00.000Z');
    expect(needed({ compare: true, events: [{ id: 'e', math: 'weekly_active' }] })[0]).toBe('2019-12-20T00:00:00.000Z');
    expect(needed({ compare_to: '-1y' })).toEqual(['2019-01-03T00:00:00.000Z', '2020-01-10T23:59:59.999Z']);
  });

  it('names the events to read, or null when every event is needed', () => {
    const actions = [
      { id: 1, name: 'Signed up', steps: [{ event: 'signup' }, { event: 'a' }] },
      { id: 2, name: 'Anything', steps: [{ event: null }] },
    ];
    expect(
      needsEventNames(parseTrendRequest({ events: [{ id: 'b' }, { id: 'a' }], actions: [{ id: 1 }] }), actions),
    ).toEqual(['a', 'b', 'signup']);
    expect(needsEventNames(parseTrendRequest({ events: [{ id: null }] }), actions)).toBeNull();
    expect(needsEventNames(parseTrendRequest({ actions: [{ id: 2 }] }), actions)).toBeNull();
    expect(
      needsEventNames(
        parseTrendRequest({ events: [{ id: 'a' }], breakdown: '$session_duration', breakdown_type: 'session' }),
        actions,
      ),
    ).toBeNull();
    expectValidation(() => needsEventNames(parseTrendRequest({ actions: [{ id: 9 }] }), actions), 'actions__0__id');
  });
});

describe('dates that resolve to no instant', () => {
  const ctx = { tz: 'Pacific/Kiritimati', now: Date.parse('2026-11-26T12:00:00Z'), weekStartDay: 0 as const };

  it('refuses a relative date reaching back past any instant, so none resolves to NaN', () => {
    for (const raw of ['-999999y', '-1000000m', '-99999999999999999999d', '-1e309h', '+999999d', '9999999-01-01'])
      expect(parseDateExpression(raw), raw).toBeNull();
    // As written, for the caller's "reaches back more than ..." message.
    expect(relativeParts('-999999y')).toEqual({ n: 999999, unit: 'y' });
  });

  it('resolves every relative date it accepts, at the longest reach of each unit and position, to a finite instant', () => {
    const longest = ['-10000y', '-120000m', '-50000q', '-530000w', '-3660000d', '-87660000h'];
    for (const raw of longest.flatMap((r) => [r, `${r}Start`, `${r}End`])) {
      const expr = parseDateExpression(raw);
      expect(expr, raw).not.toBeNull();
      expect(Number.isFinite(resolveExpression(expr!, ctx, undefined).t), raw).toBe(true);
    }
    expect(parseDateExpression('-10001y')).toBeNull();
  });

  it('bounds instants to years 0001-9999', () => {
    expect(instantInRange(MIN_INSTANT) && instantInRange(MAX_INSTANT)).toBe(true);
    expect(instantInRange(MIN_INSTANT - 1) || instantInRange(MAX_INSTANT + 1) || instantInRange(Number.NaN)).toBe(
      false,
    );
  });

  it.each([
    [{ date_from: '-999999y' }, 'date_from'],
    [{ date_from: '-7d', date_to: '-999999y' }, 'date_to'],
    [{ date_from: '-7d', compare: true, compare_to: '-999999y' }, 'compare_to'],
  ])('a trend with %j is refused as reaching back more than 100 years, on %s', (request, attr) => {
    const err = expectValidation(() => parseTrendRequest({ events: [{ id: 'e' }], ...request }), attr);
    expect(err.message).toContain('100 years');
  });
});
