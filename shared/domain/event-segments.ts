/**
 * Compacted event segments: per (project, UTC day, event name) the day's events in one or a few
 * packed items (shared/segments/codec.ts), built by the compactor and read by trends instead of one
 * item per event. Correctness never rests on the compactor having run: the ingest worker keeps a
 * day counter (count + fingerprint sum) per (day, name), and a segment is used only when it, plus
 * the events ingested after it (read from the ingestion-time index), adds up to that counter exactly.
 * Anything else reads that day's raw event partitions, as before.
 */
import { randomUUID } from 'node:crypto';
import {
  readEventsInRange,
  readEventsInsertedBetween,
  readEventsOnDays,
  type StoredEvent,
  utcDays,
} from '../db/events.ts';
import { inParallel } from '../db/batch.ts';
import {
  clearCompactionMarker,
  deleteSegmentChunks,
  dueCompactions,
  getCompactionMarker,
  leaseCompaction,
  putSegmentBuild,
  readDayCounters,
  readEventDay,
  readEventDays,
  recordLakeDay,
  recordNewestBuild,
  releaseCompaction,
  rescheduleCompaction,
  touchCompactionMarkers,
  type DayCounterReader,
  type EventDay,
  type SegmentBuild,
} from '../db/segments.ts';
import {
  encodedSize,
  encodeSegment,
  type EncodedSegment,
  type Projection,
  type SegmentRow,
} from '../segments/codec.ts';
import type { StoredColumns } from '../trends/columnar/index.ts';
import { logger } from '../observability.ts';
import { writeLakeDay } from './lake.ts';
import { addToTally, emptyTally, sameTally, type Tally } from '../segments/fingerprint.ts';

const DAY_MS = 86_400_000;
/** Events ingested in the last minute before a compaction may not be in the index yet: left to the next one. */
const VISIBILITY_MS = 60_000;
/** How long after a day's first change since its last compaction it is compacted again. */
export const COMPACTION_DELAY_MS = 10 * 60_000;
/** When a compaction could not match the day counters (ingestion still catching up), try again this much later. */
const RETRY_MS = 5 * 60_000;
/** Tries before a day whose counters the raw events never match (events from before day counters existed) is left to the raw path. */
const COMPACTION_ATTEMPTS = 3;
/** A segment older than this is not topped up from the ingestion-time index (that read grows with time): its day is read raw. */
const DELTA_HORIZON_MS = 60 * 60_000;
/** Chunks stay well under DynamoDB's 400 KB item limit. */
const CHUNK_BYTES = 300 * 1024;
/** A compaction holds its day this long at most (Lambda's longest run). */
const LEASE_MS = 15 * 60_000;
const PARTS_IN_FLIGHT = 32;

const dayOf = (iso: string) => iso.slice(0, 10);
const dayStart = (day: string) => Date.parse(`${day}T00:00:00.000Z`);

// ---------------------------------------------------------------------------------------------
// Ingest side

/** The ingest worker calls this for the UTC days whose events it just counted, added or removed. */
export async function markChangedDays(days: { projectId: number; day: string }[], now: Date): Promise<void> {
  const unique = new Map(days.map((d) => [`${d.projectId}#${d.day}`, d]));
  await touchCompactionMarkers([...unique.values()], new Date(now.getTime() + COMPACTION_DELAY_MS).toISOString());
}

// ---------------------------------------------------------------------------------------------
// Compaction

function encodeChunks(rows: SegmentRow[], base: number, maxBytes: number): EncodedSegment[] {
  const whole = encodeSegment(rows, base);
  if (encodedSize(whole) <= maxBytes || rows.length < 2) return [whole];
  const half = Math.ceil(rows.length / 2);
  return [...encodeChunks(rows.slice(0, half), base, maxBytes), ...encodeChunks(rows.slice(half), base, maxBytes)];
}

export interface CompactionResult {
  projectId: number;
  day: string;
  events: number;
  names: number;
  /** Every name's segment matched its day counter: the day is fully compacted. */
  complete: boolean;
  /** The day's lake files were replaced (false: the lake write failed and the day stays due). */
  lake?: boolean;
}

const names = (counts: Map<string, Tally>, tallies: Map<string, Tally>) =>
  new Set([...counts.keys(), ...tallies.keys()]);

/**
 * Rebuilds a day's segments from its raw events ingested before `now` − 1 min, drops the builds they
 * supersede, and clears the day's marker when every segment matches its counter (else it stays due).
 * The marker is read first and cleared only if nothing touched it meanwhile, and the counters are read
 * after the segments are written, so a change racing the compaction always leaves the day due.
 */
export async function compactDay(
  projectId: number,
  day: string,
  now: Date,
  options: { chunkBytes?: number } = {},
): Promise<CompactionResult> {
  const marker = await getCompactionMarker(projectId, day);
  if (marker && !(await leaseCompaction(marker, now, new Date(now.getTime() + LEASE_MS))))
    return { projectId, day, events: 0, names: 0, complete: false };
  const through = new Date(now.getTime() - VISIBILITY_MS).toISOString();
  const base = dayStart(day);
  const stored = await readEventsInRange(projectId, new Date(base), new Date(base + DAY_MS - 1), null);
  const byName = new Map<string, StoredEvent[]>();
  const included: StoredEvent[] = [];
  for (const e of stored) {
    if (e.inserted_at >= through || dayOf(e.timestamp) !== day) continue;
    included.push(e);
    const list = byName.get(e.event);
    if (list) list.push(e);
    else byName.set(e.event, [e]);
  }
  const build = `${through}~${randomUUID().slice(0, 8)}`;
  const tallies = new Map<string, Tally>();
  const chunkCounts = new Map<string, number>();
  for (const [event, events] of byName) {
    const tally = emptyTally();
    const rows = events
      .map((e) => {
        addToTally(tally, e.uuid);
        return { distinct_id: e.distinct_id, t: Date.parse(e.timestamp), properties: e.properties };
      })
      .sort((a, b) => a.t - b.t);
    tallies.set(event, tally);
    const chunks = encodeChunks(rows, base, options.chunkBytes ?? CHUNK_BYTES);
    chunkCounts.set(event, chunks.length);
    await putSegmentBuild(projectId, day, { event, build, through, tally, chunks });
    await recordNewestBuild(projectId, day, event, build);
  }
  // Chunks past a name's new chunk count (or of a name with no events left) belong to older builds.
  const after = await readEventDay(projectId, day, null, null);
  const stale: { event: string; chunk: number }[] = [];
  for (const [event, chunks] of after.segmentChunks) {
    for (const chunk of chunks) if (chunk >= (chunkCounts.get(event) ?? 0)) stale.push({ event, chunk });
  }
  await deleteSegmentChunks(projectId, day, stale);
  // The same events as the segments. A lake that cannot be written (S3 failing) never holds the segments
  // back: the day is marked changed again, so the marker below stays and a later compaction writes both.
  let lake = true;
  try {
    const { personsVersion } = await writeLakeDay(projectId, day, included, now);
    // What the files now hold, per name (zero for a name they lack): the routing's test of a current day.
    if (personsVersion !== undefined)
      await recordLakeDay(
        projectId,
        day,
        new Map([...names(after.counts, tallies)].map((name) => [name, tallies.get(name) ?? emptyTally()])),
        personsVersion,
      );
  } catch (error) {
    logger.warn('lake write failed: the day stays due', { projectId, day, error: String(error) });
    await markChangedDays([{ projectId, day }], now);
    lake = false;
  }
  const complete = [...names(after.counts, tallies)].every((name) =>
    sameTally(tallies.get(name), after.counts.get(name)),
  );
  if (marker) {
    // Giving up is safe: the day is read raw meanwhile, and the ingest worker marks it again when it counts more.
    if (complete || marker.attempts + 1 >= COMPACTION_ATTEMPTS) {
      if (!(await clearCompactionMarker(marker))) await releaseCompaction(marker);
    } else await rescheduleCompaction(marker, new Date(now.getTime() + RETRY_MS).toISOString());
  }
  return {
    projectId,
    day,
    events: [...tallies.values()].reduce((n, t) => n + t.count, 0),
    names: tallies.size,
    complete,
    lake,
  };
}

/** The scheduled compactor: every due day, oldest first, while time remains. */
export async function compactDueDays(
  now: Date,
  remainingMs: () => number = () => Infinity,
): Promise<{ compacted: CompactionResult[]; left: number }> {
  const due = await dueCompactions(now);
  const compacted: CompactionResult[] = [];
  for (const [i, { projectId, day }] of due.entries()) {
    if (remainingMs() < 60_000) return { compacted, left: due.length - i };
    compacted.push(await compactDay(projectId, day, now));
  }
  return { compacted, left: 0 };
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
