/**
 * The light side of compacted event segments (event-segments.ts builds them): the ingest worker marking
 * the days it changed, and trends reading a range's days from segments, topped up or replaced by raw
 * events exactly as described there. Apart from the compactor so the functions that only read (trends,
 * queries, cohorts) or ingest do not bundle what it writes with (the lake's Parquet and S3 calls).
 */
import { readEventsInsertedBetween, readEventsOnDays, type StoredEvent, utcDays } from '../db/events.ts';
import { inParallel } from '../db/batch.ts';
import {
  readDayCounters,
  readEventDay,
  readEventDays,
  touchCompactionMarkers,
  type DayCounterReader,
  type EventDay,
  type SegmentBuild,
} from '../db/segments.ts';
import type { Projection } from '../segments/codec.ts';
import type { StoredColumns } from '../trends/columnar/index.ts';
import { addToTally, sameTally, type Tally } from '../segments/fingerprint.ts';

/** Events ingested in the last minute before a compaction may not be in the index yet: left to the next one. */
export const VISIBILITY_MS = 60_000;
/** How long after a day's first change since its last compaction it is compacted again. */
export const COMPACTION_DELAY_MS = 10 * 60_000;
/** A segment older than this is not topped up from the ingestion-time index (that read grows with time): its day is read raw. */
const DELTA_HORIZON_MS = 60 * 60_000;
const PARTS_IN_FLIGHT = 32;

export const dayOf = (iso: string) => iso.slice(0, 10);

// ---------------------------------------------------------------------------------------------
// Ingest side

/** The ingest worker calls this for the UTC days whose events it just counted, added or removed. */
export async function markChangedDays(days: { projectId: number; day: string }[], now: Date): Promise<void> {
  const unique = new Map(days.map((d) => [`${d.projectId}#${d.day}`, d]));
  await touchCompactionMarkers([...unique.values()], new Date(now.getTime() + COMPACTION_DELAY_MS).toISOString());
}

// ---------------------------------------------------------------------------------------------
// Reading for trends

interface Part {
  day: string;
  /** null: every event name of the day. */
  name: string | null;
  data: EventDay;
}

/** The names a part must account for: every name counted or compacted that day (or just its own). */
function namesOf(part: Part): string[] {
  if (part.name !== null) return [part.name];
  return [...new Set([...part.data.counts.keys(), ...part.data.segments.keys()])];
}

const isFresh = (part: Part, name: string) =>
  sameTally(part.data.segments.get(name)?.tally, part.data.counts.get(name));

export type TrendEventSource = 'segments' | 'events' | 'segments+events';

/** One name: its counters by month and a BatchGetItem round over the days; every name: the counters by month, then one Query per day. */
async function readParts(
  projectId: number,
  days: string[],
  names: string[] | null,
  projection: Projection,
  check: () => void,
  readCounters: DayCounterReader,
): Promise<Part[]> {
  if (!names) {
    const counters = await readCounters(days, null);
    return inParallel(days, PARTS_IN_FLIGHT, async (day) => {
      check();
      return { day, name: null, data: await readEventDay(projectId, day, null, projection, counters.get(day)) };
    });
  }
  const perName = await Promise.all(
    names.map(async (name) => {
      check();
      return [...(await readEventDays(projectId, days, name, projection, readCounters))].map(([day, data]) => ({
        day,
        name,
        data,
      }));
    }),
  );
  return perName.flat();
}

/** The events ingested since `p`'s stale segments that complete them, or undefined if they still fall short. */
function topUpPart(p: Part, recent: StoredEvent[]): StoredEvent[] | undefined {
  const added: StoredEvent[] = [];
  const complete = namesOf(p).every((n) => {
    if (isFresh(p, n)) return true;
    const segment = p.data.segments.get(n)!;
    const tally: Tally = { ...segment.tally };
    for (const e of recent) {
      if (e.event !== n || dayOf(e.timestamp) !== p.day || e.inserted_at < segment.through) continue;
      addToTally(tally, e.uuid);
      added.push(e);
    }
    return sameTally(tally, p.data.counts.get(n));
  });
  return complete ? added : undefined;
}

/**
 * Parts whose segments are behind their counters: topped up from what was ingested since, if recent;
 * the rest (and a part with no counter at all: no events, or events counted before day counters
 * existed) are read raw.
 */
async function planParts(
  projectId: number,
  parts: Part[],
  now: Date,
): Promise<{ raw: Set<Part>; extra: Map<Part, StoredEvent[]> }> {
  const horizon = new Date(now.getTime() - DELTA_HORIZON_MS).toISOString();
  const behind = parts.filter((p) => p.data.counts.size === 0 || namesOf(p).some((n) => !isFresh(p, n)));
  const toppable = behind.filter(
    (p) =>
      p.data.counts.size > 0 &&
      namesOf(p).every((n) => isFresh(p, n) || (p.data.segments.get(n)?.through ?? '') >= horizon),
  );
  const raw = new Set(behind.filter((p) => !toppable.includes(p)));
  const extra = new Map<Part, StoredEvent[]>();
  if (!toppable.length) return { raw, extra };
  const since = toppable
    .flatMap((p) =>
      namesOf(p)
        .filter((n) => !isFresh(p, n))
        .map((n) => p.data.segments.get(n)!.through),
    )
    .sort()[0]!;
  const recent = await readEventsInsertedBetween(projectId, new Date(since), new Date(now.getTime() + VISIBILITY_MS));
  for (const p of toppable) {
    const added = topUpPart(p, recent);
    if (added) extra.set(p, added);
    else raw.add(p);
  }
  return { raw, extra };
}

function addStoredEvent(columns: StoredColumns, e: StoredEvent): void {
  const t = Date.parse(e.timestamp);
  if (t >= columns.from && t <= columns.to)
    columns.rows.push({ event: e.event, distinct_id: e.distinct_id, t, properties: e.properties });
}

/** The segment chunks (and top-up rows) of every part not read raw; returns how many segments, and how many of them were in memory. */
function addCompactedParts(
  columns: StoredColumns,
  parts: Part[],
  raw: Set<Part>,
  extra: Map<Part, StoredEvent[]>,
): { compacted: number; kept: number } {
  let compacted = 0;
  let kept = 0;
  for (const p of parts) {
    if (raw.has(p)) continue;
    for (const n of namesOf(p)) {
      const segment: SegmentBuild | undefined = p.data.segments.get(n);
      if (!segment) continue;
      compacted += 1;
      if (segment.cached) kept += 1;
      for (const chunk of segment.chunks) columns.segments.push({ name: n, segment: chunk });
    }
    for (const e of extra.get(p) ?? []) addStoredEvent(columns, e);
  }
  return { compacted, kept };
}

/** Raw days, grouped by name so every Query shares one bounded pool; returns how many events. */
async function addRawParts(
  columns: StoredColumns,
  projectId: number,
  raw: Set<Part>,
  from: Date,
  to: Date,
  check: () => void,
): Promise<number> {
  let rawEvents = 0;
  const rawDays = new Map<string | null, string[]>();
  for (const p of raw) rawDays.set(p.name, [...(rawDays.get(p.name) ?? []), p.day]);
  for (const [name, onDays] of rawDays) {
    const found = await readEventsOnDays(projectId, onDays, from, to, name === null ? null : [name], check);
    rawEvents += found.length;
    for (const e of found) addStoredEvent(columns, e);
  }
  return rawEvents;
}

/**
 * Events with from <= time <= to of the given names (null: all), for trends: each UTC day of the range
 * from its segments when they (plus what was ingested since) match the day counters, else from the
 * day's raw partitions. Says which it used, and how many segments this container had in memory
 * (shared/db/segment-cache.ts). Segment chunks are handed over still encoded (the trend
 * engine decodes them one at a time, only the projected columns); raw and top-up events as rows.
 */
export async function readTrendRows(
  projectId: number,
  from: Date,
  to: Date,
  names: string[] | null,
  projection: Projection,
  now: Date,
  /** Called between reads (each day or partition): throws to stop (a query's deadline or cancellation). */
  check: () => void = () => {},
  /** The day counters: a read the caller already made (day-counters.ts), or a Query of their own. */
  readCounters: DayCounterReader = (days, event) => readDayCounters(projectId, days, event),
): Promise<{ columns: StoredColumns; source: TrendEventSource; segments: { read: number; kept: number } }> {
  const parts = await readParts(projectId, utcDays(from, to), names, projection, check, readCounters);
  check();
  const { raw, extra } = await planParts(projectId, parts, now);
  check();
  const columns: StoredColumns = { segments: [], rows: [], from: from.getTime(), to: to.getTime(), projection };
  const { compacted, kept } = addCompactedParts(columns, parts, raw, extra);
  const rawEvents = await addRawParts(columns, projectId, raw, from, to, check);
  // Where the events came from (a raw read of an empty day contributes nothing).
  const source: TrendEventSource =
    rawEvents === 0 ? 'segments' : compacted === 0 && extra.size === 0 ? 'events' : 'segments+events';
  return { columns, source, segments: { read: compacted, kept } };
}
