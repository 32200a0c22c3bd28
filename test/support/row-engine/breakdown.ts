/**
 * Breakdowns (posthog/hogql_queries/insights/trends/breakdown.py): one row per property value,
 * the top `breakdown_limit` values by volume, the rest in one "Other" row, missing values in a
 * "None" row.
 */
import { textOf } from '#shared/errors.ts';
import { computeRow, lowerIndex, type RowContext, type RowValues, type TimedEvent } from './math.ts';
import { propertyOf } from '#shared/trends/properties.ts';
import {
  BREAKDOWN_NULL_LABEL,
  BREAKDOWN_NULL_VALUE,
  BREAKDOWN_OTHER_LABEL,
  BREAKDOWN_OTHER_VALUE,
  type TrendEvent,
} from '#shared/trends/types.ts';
import type { BreakdownModel, SeriesModel } from '#shared/trends/model.ts';

/**
 * A property value as a breakdown value: strings as they are, booleans 'true'/'false', numbers
 * stringified; missing, null and the empty string are "no value" (PostHog treats '' as none).
 */
export function breakdownText(v: unknown): string {
  if (v === undefined || v === null || v === '') return BREAKDOWN_NULL_VALUE;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

export function breakdownLabel(value: string): string {
  if (value === BREAKDOWN_NULL_VALUE) return BREAKDOWN_NULL_LABEL;
  if (value === BREAKDOWN_OTHER_VALUE) return BREAKDOWN_OTHER_LABEL;
  return value;
}

export type BreakdownReader = (e: TrendEvent) => string;

/**
 * How to read an event's breakdown value. `$session_duration` is the whole seconds between the
 * first and last event of the event's `$session_id` among all the events handed over (PostHog's
 * sessions table: dateDiff('second', min, max)).
 */
export function breakdownReader(spec: BreakdownModel, all: TimedEvent[]): BreakdownReader {
  const key = spec.property;
  if (spec.source === 'person') return (e) => breakdownText(propertyOf(e.person_properties, key));
  if (spec.source === 'event') return (e) => breakdownText(propertyOf(e.properties, key));
  const durations = sessionDurations(all);
  return (e) => breakdownText(durations.get(sessionKey(e) ?? ''));
}

function sessionKey(e: TrendEvent): string | null {
  const id = e.properties?.$session_id;
  return id === undefined || id === null || id === '' ? null : textOf(id);
}

function sessionDurations(all: TimedEvent[]): Map<string, number> {
  const spans = new Map<string, [number, number]>();
  for (const { t, e } of all) {
    const id = sessionKey(e);
    if (id === null) continue;
    const span = spans.get(id);
    if (!span) spans.set(id, [t, t]);
    else {
      span[0] = Math.min(span[0], t);
      span[1] = Math.max(span[1], t);
    }
  }
  const out = new Map<string, number>();
  for (const [id, [first, last]] of spans) out.set(id, Math.floor(last / 1000) - Math.floor(first / 1000));
  return out;
}

/** Rows by volume, largest first, ties by label ascending (None and Other sort by their label like any row). */
const byVolume = (a: [string, number], b: [string, number]) => {
  const la = breakdownLabel(a[0]);
  const lb = breakdownLabel(b[0]);
  return b[1] - a[1] || (la < lb ? -1 : la > lb ? 1 : 0);
};

/**
 * Rows of one series broken down. Values are ranked by their number of events in the period; the
 * top `breakdown_limit` get rows, the rest one "Other" row aggregated with the series' math over all
 * their events (not a sum of rows), so distinct-person maths stay distinct. The rows, None and Other
 * included, are ordered by volume as the legacy endpoint did. No event in the period: no rows.
 */
export function breakdownRows(
  events: TimedEvent[],
  entity: SeriesModel,
  spec: BreakdownModel,
  read: BreakdownReader,
  ctx: RowContext,
): RowValues[] {
  const { period } = ctx;
  // Each event's value, read once (ranking and grouping both need it).
  const values = events.map((ev) => read(ev.e));
  const volumes = new Map<string, number>();
  for (let i = lowerIndex(events, period.from); i < events.length && events[i]!.t <= period.to; i++) {
    const value = values[i]!;
    volumes.set(value, (volumes.get(value) ?? 0) + 1);
  }
  if (!volumes.size) return [];
  const ranked = [...volumes].sort(byVolume);
  const rows = ranked.slice(0, spec.breakdown_limit);
  const rest = ranked.slice(spec.breakdown_limit);
  const withOther = rest.length > 0 && !spec.breakdown_hide_other_aggregation;
  if (withOther) rows.push([BREAKDOWN_OTHER_VALUE, rest.reduce((sum, [, volume]) => sum + volume, 0)]);
  const groups = new Map<string, TimedEvent[]>(rows.sort(byVolume).map(([v]) => [v, []]));
  const other = withOther ? groups.get(BREAKDOWN_OTHER_VALUE) : undefined;
  for (const [i, ev] of events.entries()) (groups.get(values[i]!) ?? other)?.push(ev);
  return [...groups].map(([value, rowEvents]) => ({ breakdown_value: value, ...computeRow(rowEvents, entity, ctx) }));
}
