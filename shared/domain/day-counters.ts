/**
 * One read of a trend's day counters, shared by the steps that need them. With a lake configured,
 * the routing decision (lake-trends.ts) reads the range's counters before anything else; the
 * in-process read (event-segments.ts readTrendRows) needs the same counters to know which segments
 * are fresh. Without this, a trend below the routing threshold read them twice.
 *
 * Exact as before: the in-process read always compared segments against counters read beside
 * them, not atomically with them; a segment built after this read no longer matches it and its day
 * is topped up or read raw, as when the two reads race today.
 */
import { type DayCounter, type DayCounterReader, readDayCounters } from '../db/segments.ts';

type Counters = Map<string, Map<string, DayCounter>>;

/** A reader that answers later asks from its first read when that read covers them (its days, and every name or the one asked). */
export function sharedDayCounters(projectId: number): DayCounterReader {
  let first: { days: Set<string>; event: string | null; read: Promise<Counters> } | undefined;
  return async (days, event) => {
    const kept = first;
    if (kept && (kept.event === null || kept.event === event) && days.every((day) => kept.days.has(day))) {
      const all = await kept.read;
      return new Map(
        days.map((day) => {
          const names = all.get(day) ?? new Map<string, DayCounter>();
          if (event === null) return [day, names];
          const counter = names.get(event);
          return [day, new Map(counter ? [[event, counter]] : [])];
        }),
      );
    }
    const read = readDayCounters(projectId, days, event);
    first ??= { days: new Set(days), event, read };
    return read;
  };
}
