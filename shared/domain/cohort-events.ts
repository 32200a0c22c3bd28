/**
 * The behavioural leaves of a cohort calculation step, counted once per step: each leaf's window read
 * the way trends read it (compacted segments where they match the day counters, raw partitions and
 * the ingestion-time tail elsewhere: event-segments.ts), only the columns the leaf tests, and counted
 * per distinct id on columns (trends/columnar/event-counts.ts).
 */
import { now } from '../clock.ts';
import { utcDays } from '../db/events.ts';
import { readDayCounters } from '../db/segments.ts';
import { countedEvents, type LakeDayCounter } from '../lake/route.ts';
import { distinctIdsOnly, storedSource } from '../trends/columnar/index.ts';
import {
  type CountedEvents,
  countPerDistinctId,
  eventByName,
  eventsOfAction,
} from '../trends/columnar/event-counts.ts';
import { actionDefinitions } from './actions.ts';
import type { EventLeaf } from './cohort-definitions.ts';
import { readTrendRows } from './event-days.ts';

/** A leaf's window holds more events than a step may count: the calculation fails (never retried as is). */
export class CohortWindowTooLarge extends Error {
  override name = 'CohortWindowTooLarge';
  constructor(
    readonly leaf: EventLeaf,
    readonly events: number,
    readonly limit: number,
  ) {
    super(
      `cohort leaf ${leaf.index} (${leaf.eventType} ${leaf.key}) has ${events} events in its window; at most ${limit} are counted`,
    );
  }
}

/** Matching events per distinct id, per leaf index. */
export type LeafCounts = Map<number, Map<string, number>>;

async function leafEvents(projectId: number, leaf: EventLeaf, at: number): Promise<CountedEvents> {
  if (leaf.eventType === 'events') return eventByName(String(leaf.key));
  const [action] = await actionDefinitions(projectId, [Number(leaf.key)]);
  return eventsOfAction(action, { tz: 'UTC', now: at, weekStartDay: 0 });
}

/**
 * Every leaf's events in (at - window, at] per distinct id. `maxEvents` bounds each leaf's window:
 * the day counters of the days it touches are checked before anything is read (so an oversized
 * window costs one counter read), and the events counted, for days without counters.
 */
export async function countLeafEvents(
  projectId: number,
  leaves: readonly EventLeaf[],
  at: number,
  maxEvents: number,
): Promise<LeafCounts> {
  const counts: LeafCounts = new Map();
  for (const leaf of leaves) {
    const { names, properties, node } = await leafEvents(projectId, leaf, at);
    if (names !== null && names.length === 0) {
      counts.set(leaf.index, new Map());
      continue;
    }
    const from = new Date(at - leaf.windowMs);
    const to = new Date(at);
    const counters = await readDayCounters(projectId, utcDays(from, to), names?.length === 1 ? names[0]! : null);
    const counted = countedEvents(counters as Map<string, Map<string, LakeDayCounter>>, names);
    if (counted > maxEvents) throw new CohortWindowTooLarge(leaf, counted, maxEvents);
    const { columns } = await readTrendRows(projectId, from, to, names, { properties, distinctIds: true }, now());
    const result = countPerDistinctId(storedSource(columns, distinctIdsOnly), node, maxEvents);
    if (result.over) throw new CohortWindowTooLarge(leaf, result.events, maxEvents);
    counts.set(leaf.index, result.perDistinctId);
  }
  return counts;
}
