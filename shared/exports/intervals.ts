/** Batch export intervals (PostHog's choices) and their window boundaries, in the export's time zone. */
import { offsetAt, wallClock } from '../trends/tz.ts';

export const INTERVALS = ['hour', 'day', 'week', 'every 5 minutes', 'every 15 minutes'] as const;
export type ExportInterval = (typeof INTERVALS)[number];

/**
 * When an export's windows start. Daily and weekly windows start at `offset_hour` (and weekly on
 * `offset_day`, 0 = Sunday) on the wall clock of `timezone`, so across a DST change a day is 23 or 25
 * hours long. Hourly and minute windows are fixed lengths from the Unix epoch (as PostHog's
 * schedules: its offsets only apply to days and weeks).
 */
export interface Schedule {
  interval: ExportInterval;
  timezone?: string | null;
  offset_day?: number | null;
  offset_hour?: number | null;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const LENGTH: Record<ExportInterval, number> = {
  hour: HOUR,
  day: DAY,
  week: 7 * DAY,
  'every 5 minutes': 5 * MINUTE,
  'every 15 minutes': 15 * MINUTE,
};

/** The nominal length of a window (a day of a zone with DST is 23 or 25 hours twice a year). */
export const intervalMs = (interval: ExportInterval) => LENGTH[interval];

const asSchedule = (s: Schedule | ExportInterval): Schedule => (typeof s === 'string' ? { interval: s } : s);
const zoneOf = (s: Schedule) => (s.timezone && s.timezone !== 'UTC' ? s.timezone : undefined);
const calendar = (s: Schedule) => s.interval === 'day' || s.interval === 'week';

/**
 * The instant the zone's wall clock shows `wall`. A wall time skipped by a spring-forward is the
 * instant the clock jumps (02:30 → 03:00); one shown twice by a fall-back is its first showing.
 */
function instantOf(wall: number, tz: string): number {
  const first = wall - offsetAt(wall, tz);
  const second = wall - offsetAt(first, tz);
  const candidates = [first, second].filter((t) => wallClock(t, tz) === wall);
  if (candidates.length) return Math.min(...candidates);
  // In the gap: the later offset applies from the jump on, which is the earliest instant after `wall`'s place.
  return Math.max(first, second);
}

/** The calendar boundary at or before `t`: offset_hour on a day (weekly: on offset_day), on the zone's clock. */
function calendarFloor(t: number, s: Schedule): number {
  const tz = zoneOf(s) ?? 'UTC';
  const hour = s.offset_hour ?? 0;
  const wall = tz === 'UTC' ? t : wallClock(t, tz);
  const midnight = wall - (((wall % DAY) + DAY) % DAY);
  let day = midnight;
  if (s.interval === 'week') {
    const weekday = new Date(midnight).getUTCDay();
    day -= ((((weekday - (s.offset_day ?? 0)) % 7) + 7) % 7) * DAY;
  }
  const step = s.interval === 'week' ? 7 * DAY : DAY;
  const at = (d: number) => (tz === 'UTC' ? d + hour * HOUR : instantOf(d + hour * HOUR, tz));
  let boundary = at(day);
  while (boundary > t) {
    day -= step;
    boundary = at(day);
  }
  return boundary;
}

/** The boundary after boundary-or-instant `t`'s window start. */
function calendarNext(t: number, s: Schedule): number {
  const tz = zoneOf(s) ?? 'UTC';
  const floor = calendarFloor(t, s);
  const step = s.interval === 'week' ? 7 * DAY : DAY;
  if (tz === 'UTC') return floor + step;
  const wall = wallClock(floor, tz);
  const midnight = wall - (((wall % DAY) + DAY) % DAY);
  let next = instantOf(midnight + step + (s.offset_hour ?? 0) * HOUR, tz);
  // A boundary shifted by a gap may land on the next day's wall clock: the next one is still a step on.
  if (next <= floor) next = instantOf(midnight + 2 * step + (s.offset_hour ?? 0) * HOUR, tz);
  return next;
}

export function floorBoundary(t: Date, schedule: Schedule | ExportInterval): Date {
  const s = asSchedule(schedule);
  if (calendar(s)) return new Date(calendarFloor(t.getTime(), s));
  const ms = t.getTime();
  const length = LENGTH[s.interval];
  return new Date(ms - (((ms % length) + length) % length));
}

/** The boundary that ends the window starting at (or containing) `t`. */
export function nextBoundary(t: Date, schedule: Schedule | ExportInterval): Date {
  const s = asSchedule(schedule);
  if (calendar(s)) return new Date(calendarNext(t.getTime(), s));
  return new Date(floorBoundary(t, s).getTime() + LENGTH[s.interval]);
}

/** The window's start for a window ending at boundary `end`. */
export function previousBoundary(end: Date, schedule: Schedule | ExportInterval): Date {
  return floorBoundary(new Date(end.getTime() - 1), schedule);
}

export function ceilBoundary(t: Date, schedule: Schedule | ExportInterval): Date {
  const floor = floorBoundary(t, schedule);
  return floor.getTime() === t.getTime() ? floor : nextBoundary(floor, schedule);
}

/**
 * The end of the first window to export: the next boundary after `from` (PostHog: an hourly export
 * created at 10:20 first runs at 11:00 for 10:00-11:00), and never a window starting before start_at.
 */
export function firstWindowEnd(from: Date, schedule: Schedule | ExportInterval, startAt?: Date): Date {
  let end = ceilBoundary(new Date(from.getTime() + 1), schedule);
  if (startAt) {
    const earliest = nextBoundary(ceilBoundary(startAt, schedule), schedule);
    if (earliest > end) end = earliest;
  }
  return end;
}

/**
 * How many windows `windowsBetween(from, to)` holds, by arithmetic, so a request can be weighed before
 * anything is built: fixed lengths in UTC, and days and weeks counted on the zone's wall clock.
 */
export function windowCount(from: Date, to: Date, schedule: Schedule | ExportInterval): number {
  const s = asSchedule(schedule);
  const first = floorBoundary(from, s).getTime();
  if (to.getTime() <= first) return 0;
  const tz = calendar(s) ? zoneOf(s) : undefined;
  const span = tz ? wallClock(to.getTime(), tz) - wallClock(first, tz) : to.getTime() - first;
  return Math.max(1, Math.ceil(span / LENGTH[s.interval]));
}

/** The windows [start, end) of the schedule that cover [from, to), aligned to boundaries. */
export function windowsBetween(
  from: Date,
  to: Date,
  schedule: Schedule | ExportInterval,
): { start: Date; end: Date }[] {
  const windows: { start: Date; end: Date }[] = [];
  for (let t = floorBoundary(from, schedule); t.getTime() < to.getTime(); ) {
    const end = nextBoundary(t, schedule);
    windows.push({ start: t, end });
    t = end;
  }
  return windows;
}

/** An export's schedule from its stored fields (older items have no zone or offsets: UTC, 00:00, Sunday). */
export function scheduleOf(e: {
  interval: string;
  timezone?: string | null;
  offset_day?: number | null;
  offset_hour?: number | null;
}): Schedule {
  return {
    interval: e.interval as ExportInterval,
    timezone: e.timezone ?? 'UTC',
    offset_day: e.offset_day ?? null,
    offset_hour: e.offset_hour ?? null,
  };
}
