import { describe, expect, it } from 'vitest';
import {
  firstWindowEnd,
  floorBoundary,
  nextBoundary,
  windowCount,
  windowsBetween,
  type Schedule,
} from '#shared/exports/intervals.ts';
import { isValidTimeZone } from '#shared/trends/tz.ts';

const iso = (w: { start: Date; end: Date }[]) => w.map((x) => [x.start.toISOString(), x.end.toISOString()]);
const hours = (w: { start: Date; end: Date }) => (w.end.getTime() - w.start.getTime()) / 3_600_000;

describe('export windows in the customer time zone', () => {
  const ny: Schedule = { interval: 'day', timezone: 'America/New_York', offset_hour: 0 };

  it('makes the spring-forward day 23 hours long, from local midnight to local midnight', () => {
    const w = windowsBetween(new Date('2024-03-09T05:00:00Z'), new Date('2024-03-12T04:00:00Z'), ny);
    expect(iso(w)).toEqual([
      ['2024-03-09T05:00:00.000Z', '2024-03-10T05:00:00.000Z'],
      ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z'],
      ['2024-03-11T04:00:00.000Z', '2024-03-12T04:00:00.000Z'],
    ]);
    expect(w.map(hours)).toEqual([24, 23, 24]);
    expect(windowCount(new Date('2024-03-09T05:00:00Z'), new Date('2024-03-12T04:00:00Z'), ny)).toBe(3);
  });

  it('makes the fall-back day 25 hours long', () => {
    const w = windowsBetween(new Date('2024-11-02T04:00:00Z'), new Date('2024-11-05T05:00:00Z'), ny);
    expect(w.map(hours)).toEqual([24, 25, 24]);
    expect(iso(w)[1]).toEqual(['2024-11-03T04:00:00.000Z', '2024-11-04T05:00:00.000Z']);
    expect(windowCount(new Date('2024-11-02T04:00:00Z'), new Date('2024-11-05T05:00:00Z'), ny)).toBe(3);
  });

  it('starts a day at offset_hour on the local clock; an hour the spring-forward skips starts when the clock jumps', () => {
    const two: Schedule = { ...ny, offset_hour: 2 };
    expect(floorBoundary(new Date('2024-03-10T12:00:00Z'), two).toISOString()).toBe('2024-03-10T07:00:00.000Z');
    expect(nextBoundary(new Date('2024-03-09T07:00:00Z'), two).toISOString()).toBe('2024-03-10T07:00:00.000Z');
    expect(nextBoundary(new Date('2024-03-10T07:00:00Z'), two).toISOString()).toBe('2024-03-11T06:00:00.000Z');
    // 01:00 shows twice on the fall-back day: the first showing (EDT) starts the window.
    const one: Schedule = { ...ny, offset_hour: 1 };
    expect(floorBoundary(new Date('2024-11-03T12:00:00Z'), one).toISOString()).toBe('2024-11-03T05:00:00.000Z');
  });

  it('starts a week on offset_day at offset_hour, local time', () => {
    // Mondays 09:00 in Berlin; the week of the March 31 change is an hour shorter.
    const berlin: Schedule = { interval: 'week', timezone: 'Europe/Berlin', offset_day: 1, offset_hour: 9 };
    const w = windowsBetween(new Date('2024-03-20T00:00:00Z'), new Date('2024-04-02T00:00:00Z'), berlin);
    expect(iso(w)).toEqual([
      ['2024-03-18T08:00:00.000Z', '2024-03-25T08:00:00.000Z'],
      ['2024-03-25T08:00:00.000Z', '2024-04-01T07:00:00.000Z'],
      ['2024-04-01T07:00:00.000Z', '2024-04-08T07:00:00.000Z'],
    ]);
  });

  it('keeps UTC schedules and sub-daily intervals on their fixed boundaries', () => {
    expect(floorBoundary(new Date('2024-05-01T10:32:00Z'), 'day').toISOString()).toBe('2024-05-01T00:00:00.000Z');
    expect(floorBoundary(new Date('2024-05-01T10:32:00Z'), 'week').toISOString()).toBe('2024-04-28T00:00:00.000Z');
    expect(
      floorBoundary(new Date('2024-05-01T10:32:00Z'), { interval: 'hour', timezone: 'Asia/Kolkata' }).toISOString(),
    ).toBe('2024-05-01T10:00:00.000Z');
    expect(
      firstWindowEnd(new Date('2024-05-01T10:32:00Z'), {
        interval: 'day',
        timezone: 'UTC',
        offset_hour: 6,
      }).toISOString(),
    ).toBe('2024-05-02T06:00:00.000Z');
    expect(isValidTimeZone('Europe/Berlin')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus')).toBe(false);
  });
});
