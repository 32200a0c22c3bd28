/**
 * Per-bucket and whole-range aggregation of one series' events (posthog/queries/trends/util.py,
 * posthog/hogql_queries/insights/trends/aggregation_operations.py).
 */
import { type DateContext, windowStart } from '#shared/trends/dates.ts';
import type { Period } from '#shared/trends/dates.ts';
import { propertyOf, toNumber } from '#shared/trends/properties.ts';
import {
  COUNT_PER_ACTOR_MATHS,
  PROPERTY_MATHS,
  type Interval,
  type SeriesMath,
  type TrendEvent,
} from '#shared/trends/types.ts';
import type { SeriesModel } from '#shared/trends/model.ts';

/** An event with its timestamp parsed once. Lists of these are kept sorted by `t`. */
export interface TimedEvent {
  t: number;
  e: TrendEvent;
}

/** Values of one row (a series, or one breakdown value of it) in one period. */
export interface RowValues {
  breakdown_value?: string;
  values: number[];
  aggregated: number;
}

/** Trailing window of the active-user maths, in local days including the bucket's own day. */
export const ACTIVE_WINDOW_DAYS: Partial<Record<SeriesMath, number>> = { weekly_active: 7, monthly_active: 30 };

/**
 * Whether a math uses a trailing window. PostHog only does this for day and hour intervals; for
 * week and month buckets active users are plain distinct persons per bucket.
 */
export function windowDays(math: SeriesMath, interval: Interval): number | null {
  const days = ACTIVE_WINDOW_DAYS[math];
  return days !== undefined && (interval === 'day' || interval === 'hour') ? days : null;
}

/** Bucket holding `t`, or -1 outside the period. */
export function bucketIndex(t: number, period: Period): number {
  if (t < period.from || t > period.to) return -1;
  const b = period.buckets;
  let lo = 0;
  let hi = b.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (b[mid]! <= t) lo = mid;
    else hi = mid - 1;
  }
  return b.length && b[lo]! <= t ? lo : -1;
}

/** First index whose `t` is >= bound (events sorted by t). */
export function lowerIndex(events: TimedEvent[], bound: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid]!.t < bound) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Quantile with linear interpolation between closest ranks (numpy's default, and what ClickHouse's
 * exact quantile gives for small sets): p90 of [1..10] is 9.1.
 */
export function quantile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

const QUANTILES: Record<string, number> = { median: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99 };

/** One statistic over numbers; an empty set gives 0 (PostHog fills empty buckets with 0). */
function statistic(kind: string, numbers: number[]): number {
  if (!numbers.length) return 0;
  switch (kind) {
    case 'sum':
      return numbers.reduce((a, b) => a + b, 0);
    case 'avg':
      return numbers.reduce((a, b) => a + b, 0) / numbers.length;
    case 'min':
      return numbers.reduce((a, b) => Math.min(b, a));
    case 'max':
      return numbers.reduce((a, b) => Math.max(b, a));
    default:
      return quantile(
        [...numbers].sort((a, b) => a - b),
        QUANTILES[kind]!,
      );
  }
}

export type Aggregate = (events: TimedEvent[]) => number;

const distinct = (events: TimedEvent[], key: (e: TrendEvent) => string | null) => {
  const seen = new Set<string>();
  for (const { e } of events) {
    const k = key(e);
    if (k !== null) seen.add(k);
  }
  return seen.size;
};

export const personOf = (e: TrendEvent) => e.person_id || e.distinct_id;

function sessionOf(e: TrendEvent): string | null {
  const id = e.properties?.$session_id;
  if (id === undefined || id === null || id === '') return null;
  return typeof id === 'string' ? id : JSON.stringify(id);
}

/** The aggregate of a math over a set of events (the windowed maths use it per window). */
export function aggregator(entity: SeriesModel): Aggregate {
  const math = entity.math;
  if (math === 'total') return (events) => events.length;
  if (math === 'dau' || math === 'weekly_active' || math === 'monthly_active')
    return (events) => distinct(events, personOf);
  if (math === 'unique_session') return (events) => distinct(events, sessionOf);
  if ((PROPERTY_MATHS as readonly string[]).includes(math)) {
    const key = entity.math_property!;
    const read =
      entity.math_property_type === 'person_properties'
        ? (e: TrendEvent) => propertyOf(e.person_properties, key)
        : (e: TrendEvent) => propertyOf(e.properties, key);
    return (events) => {
      const numbers: number[] = [];
      for (const { e } of events) {
        const n = toNumber(read(e));
        if (n !== null) numbers.push(n);
      }
      return statistic(math, numbers);
    };
  }
  if ((COUNT_PER_ACTOR_MATHS as readonly string[]).includes(math)) {
    const kind = math.replace('_count_per_actor', '');
    return (events) => {
      const perActor = new Map<string, number>();
      for (const { e } of events) perActor.set(personOf(e), (perActor.get(personOf(e)) ?? 0) + 1);
      return statistic(kind, [...perActor.values()]);
    };
  }
  throw new Error(`unsupported math ${math}`);
}

export interface RowContext {
  period: Period;
  interval: Interval;
  date: DateContext;
  /** Cumulative display: dau counts each person once, in the bucket where they first appear. */
  cumulative: boolean;
}

/** Values of one row. `events` are the row's events sorted by t, including any active-user lookback. */
export function computeRow(
  events: TimedEvent[],
  entity: SeriesModel,
  ctx: RowContext,
): Omit<RowValues, 'breakdown_value'> {
  const { period } = ctx;
  const days = windowDays(entity.math, ctx.interval);
  if (days !== null) {
    const values = activePersonsPerBucket(events, period, days, ctx.date.tz);
    return { values, aggregated: values.at(-1) ?? 0 };
  }
  const aggregate = aggregator(entity);
  const inRange = events.slice(lowerIndex(events, period.from), lowerIndex(events, period.to + 1));
  const perBucket: TimedEvent[][] = period.buckets.map(() => []);
  for (const ev of inRange) perBucket[bucketIndex(ev.t, period)]?.push(ev);
  const values = ctx.cumulative && entity.math === 'dau' ? firstAppearances(perBucket) : perBucket.map(aggregate);
  // Active users over week/month buckets: the aggregate is the last bucket's value, as for the windowed case.
  const aggregated = ACTIVE_WINDOW_DAYS[entity.math] !== undefined ? (values.at(-1) ?? 0) : aggregate(inRange);
  return { values, aggregated };
}

function bucketEnd(period: Period, i: number): number {
  const next = period.buckets[i + 1];
  return next === undefined ? period.to : Math.min(next - 1, period.to);
}

/**
 * Persons active from the start of the local day `days - 1` days before each bucket until its end.
 * Both window edges only move forward, so one pass with per-person event counts does it.
 */
function activePersonsPerBucket(events: TimedEvent[], period: Period, days: number, tz: string): number[] {
  const inWindow = new Map<string, number>();
  let lo = 0;
  let hi = 0;
  return period.buckets.map((start, i) => {
    const from = windowStart(start, days, tz);
    const end = bucketEnd(period, i);
    for (; hi < events.length && events[hi]!.t <= end; hi++) {
      const p = personOf(events[hi]!.e);
      inWindow.set(p, (inWindow.get(p) ?? 0) + 1);
    }
    for (; lo < hi && events[lo]!.t < from; lo++) {
      const p = personOf(events[lo]!.e);
      const left = inWindow.get(p)! - 1;
      if (left) inWindow.set(p, left);
      else inWindow.delete(p);
    }
    return inWindow.size;
  });
}

/** New persons per bucket: the running sum of these is the cumulative count of unique persons. */
function firstAppearances(perBucket: TimedEvent[][]): number[] {
  const seen = new Set<string>();
  return perBucket.map((bucket) => {
    let fresh = 0;
    for (const { e } of bucket) {
      const p = personOf(e);
      if (!seen.has(p)) {
        seen.add(p);
        fresh++;
      }
    }
    return fresh;
  });
}
