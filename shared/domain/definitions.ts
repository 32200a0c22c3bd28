/**
 * PostHog's event definitions, from what the service already counts: the per-day, per-name event
 * counters (shared/db/segments.ts, one Query per month partition) of the last 30 days. A name is
 * defined while it has events in that window; `volume_30_day` is their count.
 */
import { now } from '../clock.ts';
import { readDayCounters } from '../db/segments.ts';

const WINDOW_DAYS = 30;

export interface EventDefinition {
  id: string;
  name: string;
  volume_30_day: number;
  query_usage_30_day: null;
  created_at: null;
  last_seen_at: string;
  tags: string[];
  description: null;
  is_action: false;
}

export async function listEventDefinitions(
  projectId: number,
  q: { limit: number; offset: number; search?: string },
): Promise<{ count: number; results: EventDefinition[] }> {
  const today = now().getTime();
  const days = Array.from({ length: WINDOW_DAYS }, (_, i) =>
    new Date(today - i * 86_400_000).toISOString().slice(0, 10),
  );
  const byDay = await readDayCounters(projectId, days, null);
  const names = new Map<string, { volume: number; last: string }>();
  for (const [day, counters] of byDay) {
    for (const [name, counter] of counters) {
      if (counter.tally.count <= 0) continue;
      const seen = names.get(name) ?? { volume: 0, last: day };
      seen.volume += counter.tally.count;
      if (day > seen.last) seen.last = day;
      names.set(name, seen);
    }
  }
  const needle = q.search?.toLowerCase();
  const all = [...names]
    .filter(([name]) => !needle || name.toLowerCase().includes(needle))
    .sort(([a, x], [b, y]) => y.volume - x.volume || (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, seen]) => ({
      // PostHog's ids are uuids of stored definitions; here the name is the definition.
      id: name,
      name,
      volume_30_day: seen.volume,
      query_usage_30_day: null,
      created_at: null,
      last_seen_at: `${seen.last}T00:00:00Z`,
      tags: [],
      description: null,
      is_action: false as const,
    }));
  return { count: all.length, results: all.slice(q.offset, q.offset + q.limit) };
}
