/**
 * The trend engine over hourly rollups (event counts per UTC hour). Only plain event counts can be
 * answered from them; the response is built by the same code as computeTrend's, so for an eligible
 * query both give the same body.
 */
import { periodsFor, projectContext, resolveDateRange, eventsNeeded } from './compute.ts';
import type { Period } from './dates.ts';
import { bucketIndex } from './math.ts';
import { buildResponse, type PeriodResult } from './output.ts';
import { hasFilters } from './properties.ts';
import { DAY, HOUR, offsetAt } from './tz.ts';
import type { TrendsModel } from './model.ts';
import type { ProjectSettings, TrendResponse } from './types.ts';

/**
 * True when hourly counts give the exact answer: total counts of events (not actions: their steps
 * filter on properties), no property filter anywhere, no breakdown (WorldMap implies one), bounds
 * on whole hours, and a time zone whose offset stays a whole number of hours over everything read
 * (otherwise a UTC hour straddles two local days). `now` and `firstEventAt` resolve the range as
 * computeTrend will (defaults: the current time, no first event).
 */
export function canUseHourlyRollups(
  query: TrendsModel,
  project: ProjectSettings,
  now: Date = new Date(),
  firstEventAt?: Date,
): boolean {
  if (query.breakdownFilter || query.dateRange.explicitDate) return false;
  // Aggregating by a group counts only the events that have one: the rollups count every event.
  if (query.aggregation_group_type_index !== null) return false;
  if (hasFilters(query.properties)) return false;
  if (query.filterTestAccounts && project.test_account_filters.length) return false;
  if (!query.series.every((s) => s.kind === 'EventsNode' && s.math === 'total' && !hasFilters(s.properties)))
    return false;
  let needed: { from: Date; to: Date };
  let periods: Period[];
  try {
    const range = resolveDateRange(query, project, now, firstEventAt);
    needed = eventsNeeded(query, range);
    periods = periodsFor(query, range);
  } catch {
    return false;
  }
  const from = needed.from.getTime();
  const to = needed.to.getTime();
  // Each period (the compared one is resolved on its own) starts on an hour and ends with one, or
  // at now (the current hour is read whole: only events stamped in the future could differ).
  const onHours = (p: Period) =>
    p.from % HOUR === 0 &&
    ((p.to + 1) % HOUR === 0 ||
      (p.kind === 'current' && query.dateRange.date_to === null && query.interval === 'hour'));
  return from % HOUR === 0 && periods.every(onHours) && wholeHourOffsets(project.timezone, from, to);
}

/** Samples the offset daily and at both ends: offsets hold for months, so a fractional one cannot hide between samples. */
function wholeHourOffsets(tz: string, from: number, to: number): boolean {
  for (let t = from; t < to; t += DAY) if (offsetAt(t, tz) % HOUR !== 0) return false;
  return offsetAt(to, tz) % HOUR === 0;
}

const HOUR_KEY = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})$/;

function hourStart(key: string): number | null {
  const m = HOUR_KEY.exec(key);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4])) : null;
}

export function computeTrendFromHourly(
  query: TrendsModel,
  input: { hourly: Map<string, number>[]; project: ProjectSettings; now: Date; firstEventAt?: Date },
): TrendResponse {
  if (input.hourly.length !== query.series.length)
    throw new Error(`computeTrendFromHourly: ${query.series.length} series but ${input.hourly.length} hourly maps`);
  if (!query.series.every((s) => s.math === 'total' && s.kind === 'EventsNode') || query.breakdownFilter) {
    throw new Error('computeTrendFromHourly: the query needs raw events (check canUseHourlyRollups first)');
  }
  const ctx = projectContext(query, input.project, input.now);
  const range = resolveDateRange(query, input.project, input.now, input.firstEventAt);
  const results: PeriodResult[] = periodsFor(query, range).map((period) => ({
    period,
    series: query.series.map((entity, i) => {
      const values = period.buckets.map(() => 0);
      for (const [key, count] of input.hourly[i]!) {
        const t = hourStart(key);
        const bucket = t === null ? -1 : bucketIndex(t, period);
        if (bucket >= 0) values[bucket]! += count;
      }
      return { entity, rows: [{ values, aggregated: values.reduce((a, b) => a + b, 0) }] };
    }),
  }));
  return buildResponse({ query, timezone: ctx.tz, actions: new Map() }, results);
}
