import type { StoredEvent } from '../db/events.ts';
import { applyCountMoves, countedBuckets, markerId, type Bucket } from '../db/rollups.ts';
import type { EventChange } from '../db/stream.ts';
import { now } from '../clock.ts';
import { logger, METRIC, metrics, MetricUnit } from '../observability.ts';
import { bumpAnswersGeneration, noteEventTime } from '../db/projects.ts';
import { markChangedDays } from './event-days.ts';
import { refreshCohortsOfEvents } from './cohort-membership.ts';
import { applyEventsToPersons } from './person-ingest.ts';
import { applyGroupIdentifies } from './group-ingest.ts';
import { notePropertyKeys } from './property-definitions.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';

const bucketOf = (e: StoredEvent): Bucket => ({ event: e.event, hour: e.timestamp.slice(0, 13) });

/**
 * One stream batch: persons and groups for new events (in stream order), then rollups and day counters for everything up to the
 * first failure. Returns the ids to report as failed: the first failed record and all after it, since
 * Lambda retries from the lowest failed sequence number. Both steps are idempotent, so a retried or
 * redelivered batch converges to the same persons and counts.
 */
export async function ingestEventChanges(changes: EventChange[]): Promise<string[]> {
  const inserts = changes.map((c, i) => ({ c, i })).filter(({ c }) => c.after && !c.before);
  let firstFailure = changes.length;
  try {
    const events = inserts.map(({ c }) => c.after!);
    const failed = (await Promise.all([applyEventsToPersons(events), applyGroupIdentifies(events)])).flat();
    if (failed.length) firstFailure = inserts[Math.min(...failed)]!.i;
    await refreshCohortsOfEvents(inserts.filter(({ i }) => i < firstFailure).map(({ c }) => c.after!));
  } catch (error) {
    logger.error('person update failed', { error: (error as Error).message, stack: (error as Error).stack });
    firstFailure = 0;
  }
  try {
    await recount(changes.slice(0, firstFailure));
    await noteFirstEvents(changes.slice(0, firstFailure));
    await notePropertyKeys(newEvents(changes.slice(0, firstFailure)));
    // After counting (see compactDay): a compaction racing this batch either sees the new counts or this touch.
    await markChangedDays(changedDays(changes.slice(0, firstFailure)), now());
    await retireAnswersOfDeletions(changes.slice(0, firstFailure));
  } catch (error) {
    logger.error('rollup update failed', { error: (error as Error).message, stack: (error as Error).stack });
    firstFailure = 0;
  }
  recordIngestion(changes.slice(0, firstFailure));
  return changes.slice(firstFailure).map((c) => c.id);
}

/**
 * IngestedEvents: new events this batch processed (a retried record counts again when redelivered);
 * IngestionLag: from the oldest of them being stored by capture (`inserted_at`) to now.
 */
function recordIngestion(done: EventChange[]): void {
  const inserted = done.flatMap((c) => (c.after && !c.before ? [c.after.inserted_at] : []));
  metrics.addMetric(METRIC.ingestedEvents, MetricUnit.Count, inserted.length);
  if (inserted.length === 0) return;
  const oldest = Math.min(...inserted.map((at) => Date.parse(at)).filter((ms) => !Number.isNaN(ms)));
  if (Number.isFinite(oldest))
    metrics.addMetric(METRIC.ingestionLag, MetricUnit.Milliseconds, Math.max(0, now().getTime() - oldest));
}

const newEvents = (changes: EventChange[]): StoredEvent[] =>
  changes.flatMap((c) => (c.after && !c.before ? [c.after] : []));

/** Keeps each project's earliest event time (trends' `date_from: all`): one conditional write per project per batch. */
async function noteFirstEvents(changes: EventChange[]): Promise<void> {
  const earliest = new Map<number, string>();
  for (const c of changes) {
    if (!c.after || c.before) continue;
    const current = earliest.get(c.after.project_id);
    if (!current || c.after.timestamp < current) earliest.set(c.after.project_id, c.after.timestamp);
  }
  await Promise.all([...earliest].map(([projectId, timestamp]) => noteEventTime(projectId, timestamp)));
}

/**
 * Once deleted events are uncounted, answers cached meanwhile may still count them (a trend read the
 * rollups before this batch moved them): one bump per project with deletions retires them.
 */
async function retireAnswersOfDeletions(changes: EventChange[]): Promise<void> {
  const projects = new Set(changes.flatMap((c) => (c.before && !c.after ? [c.before.project_id] : [])));
  await Promise.all([...projects].map(bumpAnswersGeneration));
}

/** The UTC days whose counted events a batch changes (the old image's day too: an event can leave one). */
function changedDays(changes: EventChange[]): { projectId: number; day: string }[] {
  return changes.flatMap((c) =>
    [c.before, c.after].flatMap((e) => (e ? [{ projectId: e.project_id, day: e.timestamp.slice(0, 10) }] : [])),
  );
}

const RECOUNT_ATTEMPTS = 5;

/** Moves each event's count to where its latest image says it belongs (nowhere, once deleted). */
async function recount(changes: EventChange[]): Promise<void> {
  const latest = new Map<string, { projectId: number; uuid: string; to?: Bucket }>();
  for (const c of changes) {
    const e = (c.after ?? c.before)!;
    latest.set(markerId(e.project_id, e.uuid), {
      projectId: e.project_id,
      uuid: e.uuid,
      to: c.after && bucketOf(c.after),
    });
  }
  let pending = [...latest.values()];
  await retryTransient(
    'Event counts',
    async () => {
      const counted = await countedBuckets(pending);
      const failed = await applyCountMoves(
        pending.map((p) => ({ ...p, from: counted.get(markerId(p.projectId, p.uuid)) })),
      );
      const again = new Set(failed.map((m) => markerId(m.projectId, m.uuid)));
      pending = pending.filter((p) => again.has(markerId(p.projectId, p.uuid)));
      return pending.length ? TRANSIENT : true;
    },
    {
      attempts: RECOUNT_ATTEMPTS,
      gaveUp: () => new Error(`${pending.length} event count(s) kept changing under the worker`),
    },
  );
}
