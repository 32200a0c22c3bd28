/**
 * Compacted event segments: per (project, UTC day, event name) the day's events in one or a few
 * packed items (shared/segments/codec.ts), built by the compactor and read by trends instead of one
 * item per event. Correctness never rests on the compactor having run: the ingest worker keeps a
 * day counter (count + fingerprint sum) per (day, name), and a segment is used only when it, plus
 * the events ingested after it (read from the ingestion-time index), adds up to that counter exactly.
 * Anything else reads that day's raw event partitions, as before.
 */
import { randomUUID } from 'node:crypto';
import { readEventsInRange, type StoredEvent } from '../db/events.ts';
import {
  clearCompactionMarker,
  deleteSegmentChunks,
  dueCompactions,
  getCompactionMarker,
  leaseCompaction,
  putSegmentBuild,
  readEventDay,
  recordLakeDay,
  recordNewestBuild,
  releaseCompaction,
  rescheduleCompaction,
} from '../db/segments.ts';
import { encodedSize, encodeSegment, type EncodedSegment, type SegmentRow } from '../segments/codec.ts';
import { logger } from '../observability.ts';
import { dayOf, markChangedDays, VISIBILITY_MS } from './event-days.ts';
import { writeLakeDay } from './lake.ts';
import { scheduleLakeRewrites, settleLakeDay } from './lake-hides.ts';
import { addToTally, emptyTally, sameTally, type Tally } from '../segments/fingerprint.ts';

const DAY_MS = 86_400_000;
/** When a compaction could not match the day counters (ingestion still catching up), try again this much later. */
const RETRY_MS = 5 * 60_000;
/** Tries before a day whose counters the raw events never match (events from before day counters existed) is left to the raw path. */
const COMPACTION_ATTEMPTS = 3;
/** Chunks stay well under DynamoDB's 400 KB item limit. */
const CHUNK_BYTES = 300 * 1024;
/** A compaction holds its day this long at most (Lambda's longest run). */
const LEASE_MS = 15 * 60_000;

const dayStart = (day: string) => Date.parse(`${day}T00:00:00.000Z`);

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
    // The files now hold what the deletions left (or there is no lake): the hides waiting for this day no longer need to.
    await settleLakeDay(projectId, day, now);
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
  // Days a lake hide waits for are due at once: found first, so this tick rewrites them. A failure
  // here holds no compaction back (the hides stay due for the next tick).
  await scheduleLakeRewrites(now, remainingMs).catch((error: unknown) =>
    logger.warn('lake hides not resolved', { error: String(error) }),
  );
  const due = await dueCompactions(now);
  const compacted: CompactionResult[] = [];
  for (const [i, { projectId, day }] of due.entries()) {
    if (remainingMs() < 60_000) return { compacted, left: due.length - i };
    compacted.push(await compactDay(projectId, day, now));
  }
  return { compacted, left: 0 };
}
