import * as v from 'valibot';

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const leap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/**
 * A date-time that names a real instant in years 0001-9999. valibot's isoTimestamp checks the shape
 * only: `2024-02-30T00:00:00Z` passes it and becomes March 1st, and year 0000 is outside the instants
 * dates resolve to anywhere else (shared/trends/dates.ts MIN_INSTANT).
 */
function realInstant(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(s);
  if (!m || !Number.isFinite(Date.parse(s))) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const days = month === 2 && leap(year) ? 29 : DAYS_IN_MONTH[month - 1];
  return year >= 1 && days !== undefined && day <= days;
}

/** ISO 8601 with a time zone (PostHog refuses naive datetimes), of a real instant; `message` says what to send. */
export const awareTimestamp = (message: string) =>
  v.pipe(v.string(), v.isoTimestamp(message), v.check(realInstant, message));
