/**
 * Which part of a trend the lake answers (shared/domain/lake-trends.ts runs it). Exactness rests on
 * two rules: a UTC day is read from the lake only while its files hold exactly the events the day
 * counters count (and, for person counts, were written under the project's current person map); and a
 * bucket is computed wholly from one source, so that no distinct count is ever added across sources.
 */
import { sameTally, type Tally } from '../segments/fingerprint.ts';

/** A (day, event name) counter as the ingest worker keeps it, with what the day's lake files hold of the name. */
export interface LakeDayCounter {
  tally: Tally;
  lake?: { tally: Tally; personsVersion: number };
}

const DAY_MS = 86_400_000;
export const utcDayOf = (t: number) => new Date(t).toISOString().slice(0, 10);

/** The UTC days from `from` to `to` (epoch ms, inclusive). */
export function utcDaysBetween(from: number, to: number): string[] {
  const days: string[] = [];
  for (let d = Math.floor(from / DAY_MS) * DAY_MS; d <= to; d += DAY_MS) days.push(utcDayOf(d));
  return days;
}

export interface DayRule {
  /** The UTC day the clock is in: it and later days are still being written, never the lake's. */
  today: string;
  /** The event names the trend reads (null: every name). */
  names: string[] | null;
  /** The project's persons version when the trend counts persons (null: it does not). */
  personsVersion: number | null;
}

/**
 * Whether a closed day's lake files answer for it: every name read has a lake tally equal to its
 * counter (a name the files lack has no tally, or a zero one), written under the current persons
 * version when persons are counted. A day without counters holds no events: either source says so.
 */
export function isLakeCurrent(day: string, counters: Map<string, LakeDayCounter> | undefined, rule: DayRule): boolean {
  if (day >= rule.today) return false;
  for (const [name, counter] of counters ?? []) {
    if (rule.names !== null && !rule.names.includes(name)) continue;
    if (counter.tally.count === 0 && !counter.lake) continue;
    if (!counter.lake || !sameTally(counter.lake.tally, counter.tally)) return false;
    if (rule.personsVersion !== null && counter.lake.personsVersion !== rule.personsVersion) return false;
  }
  return true;
}

/** Events the counters hold for the names read, over these days: what routing is decided on. */
export function countedEvents(counters: Map<string, Map<string, LakeDayCounter>>, names: string[] | null): number {
  let total = 0;
  for (const day of counters.values())
    for (const [name, counter] of day) if (names === null || names.includes(name)) total += counter.tally.count;
  return total;
}

/**
 * Per bucket, whether the lake answers it: every UTC day the bucket's part of [from, to] touches is
 * current, or outside `read` (no stored event can be there). Buckets are given by their starts
 * (instants of the local bucket starts); the last ends at `to`.
 */
export function lakeBuckets(
  buckets: readonly number[],
  range: { from: number; to: number },
  read: { from: number; to: number },
  current: (day: string) => boolean,
): boolean[] {
  return buckets.map((start, i) => {
    const lo = Math.max(start, range.from, read.from);
    const hi = Math.min((buckets[i + 1] ?? range.to + 1) - 1, range.to, read.to);
    return hi < lo || utcDaysBetween(lo, hi).every(current);
  });
}

/** The UTC days (within `read`) of the buckets not in the lake: the window the in-process engine reads, or null. */
export function inProcessWindow(
  buckets: readonly number[],
  inLake: readonly boolean[],
  range: { from: number; to: number },
  read: { from: number; to: number },
): { from: number; to: number } | null {
  let from = Infinity;
  let to = -Infinity;
  buckets.forEach((start, i) => {
    if (inLake[i]) return;
    const lo = Math.max(start, range.from, read.from);
    const hi = Math.min((buckets[i + 1] ?? range.to + 1) - 1, range.to, read.to);
    if (hi < lo) return;
    from = Math.min(from, lo);
    to = Math.max(to, hi);
  });
  return from <= to ? { from, to } : null;
}

/**
 * The UTC days the lake reads: those of its buckets (within the range) that hold events. DuckDB lists
 * only these days' current files, Athena reads only their partitions: a day outside them is either
 * not current (its buckets are computed in-process) or empty.
 */
export function lakeDays(
  buckets: readonly number[],
  inLake: readonly boolean[],
  range: { from: number; to: number },
  holdsEvents: (day: string) => boolean,
): string[] {
  const days = new Set<string>();
  buckets.forEach((start, i) => {
    if (!inLake[i]) return;
    const hi = Math.min((buckets[i + 1] ?? range.to + 1) - 1, range.to);
    for (const day of utcDaysBetween(Math.max(start, range.from), hi)) if (holdsEvents(day)) days.add(day);
  });
  return [...days].sort();
}
