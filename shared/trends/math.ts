/**
 * Maths shared by the engines (posthog/queries/trends/util.py,
 * posthog/hogql_queries/insights/trends/aggregation_operations.py): the row values they produce,
 * the active-user windows and buckets. Percentiles: linear interpolation between closest ranks
 * (numpy's default; ClickHouse's exact quantile on small sets): p90 of [1..10] is 9.1. The aggregation itself is columnar/engine.ts.
 */
import type { Period } from './dates.ts';
import type { Interval, SeriesMath } from './types.ts';

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
