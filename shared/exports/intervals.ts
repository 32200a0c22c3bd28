/** Batch export intervals (PostHog's choices) and their UTC window boundaries. */
export const INTERVALS = ['hour', 'day', 'week', 'every 5 minutes', 'every 15 minutes'] as const;
export type ExportInterval = (typeof INTERVALS)[number];

const MINUTE = 60_000;
const LENGTH: Record<ExportInterval, number> = {
  hour: 60 * MINUTE,
  day: 24 * 60 * MINUTE,
  week: 7 * 24 * 60 * MINUTE,
  'every 5 minutes': 5 * MINUTE,
  'every 15 minutes': 15 * MINUTE,
};
/** Weeks start on Sunday 00:00 UTC (PostHog's default offset_day 0); 1970-01-04 was a Sunday. */
const FIRST_SUNDAY = Date.UTC(1970, 0, 4);

export const intervalMs = (interval: ExportInterval) => LENGTH[interval];

export function floorBoundary(t: Date, interval: ExportInterval): Date {
  const origin = interval === 'week' ? FIRST_SUNDAY : 0;
  const ms = t.getTime();
  return new Date(ms - ((((ms - origin) % LENGTH[interval]) + LENGTH[interval]) % LENGTH[interval]));
}

export function ceilBoundary(t: Date, interval: ExportInterval): Date {
  const floor = floorBoundary(t, interval);
  return floor.getTime() === t.getTime() ? floor : new Date(floor.getTime() + LENGTH[interval]);
}

/**
 * The end of the first window to export: the next boundary after `from` (PostHog: an hourly export
 * created at 10:20 first runs at 11:00 for 10:00-11:00), and never a window starting before start_at.
 */
export function firstWindowEnd(from: Date, interval: ExportInterval, startAt?: Date): Date {
  let end = ceilBoundary(new Date(from.getTime() + 1), interval);
  if (startAt) {
    const earliest = new Date(ceilBoundary(startAt, interval).getTime() + LENGTH[interval]);
    if (earliest > end) end = earliest;
  }
  return end;
}

/**
 * How many windows `windowsBetween(from, to)` holds, by arithmetic: every interval is a fixed length in
 * UTC (weeks too: Sunday to Sunday), so a request can be weighed before anything is built.
 */
export function windowCount(from: Date, to: Date, interval: ExportInterval): number {
  const first = floorBoundary(from, interval).getTime();
  return to.getTime() <= first ? 0 : Math.ceil((to.getTime() - first) / LENGTH[interval]);
}

/** The windows [start, end) of `interval` that cover [from, to), aligned to boundaries. */
export function windowsBetween(from: Date, to: Date, interval: ExportInterval): { start: Date; end: Date }[] {
  const windows: { start: Date; end: Date }[] = [];
  for (let t = floorBoundary(from, interval).getTime(); t < to.getTime(); t += LENGTH[interval]) {
    windows.push({ start: new Date(t), end: new Date(t + LENGTH[interval]) });
  }
  return windows;
}
