import { now as clockNow, nowIso } from '../clock.ts';
import {
  cancelBackfillItem,
  claimRun,
  createBackfill,
  getBackfill,
  getRun,
  listBackfills,
  backfillsMaybeInFlight,
  deleteBackfills,
  forgetInFlight,
  pendingBackfillRuns,
  isRunsCursor,
  runsPage,
  type RunsPageQuery,
  writeLog,
  type BackfillRecord,
  type ExportRecord,
  type RunRecord,
} from '../db/batch-exports.ts';
import type { MembershipRecord } from '../db/organizations.ts';
import { firstEventAt } from '../db/projects.ts';
import { Conflict, NotFound, Throttled, ValidationError } from '../errors.ts';
import { floorBoundary, intervalMs, scheduleOf, windowCount, type ExportInterval } from '../exports/intervals.ts';
import { uuidv7 } from '../ids.ts';
import { logger } from '../observability.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { FILTERS_UNCHANGED, findExport, type LogFilter, logsOf, runResponse, updateExport } from './batch-exports.ts';
import { BACKFILL_REQUEST_PAGE, expandBackfill, settleBackfill } from './export-runs.ts';

const MAX_BACKFILL_RUNS = 10_000;
/**
 * Backfill runs one export may have queued and not yet settled: one full backfill's worth. A client
 * that repeats or splits backfills cannot queue more work than one request could.
 */
export const MAX_PENDING_BACKFILL_RUNS = 10_000;
/**
 * Backfills a project may have in flight (not finished, not cancelled) across its exports; one more is
 * a 429. Each pages its runs into the shared scheduler, so this bounds one team's share of its ticks.
 */
export const MAX_CONCURRENT_BACKFILLS_PER_TEAM = 10;
/** Backfills an export keeps: past it, creating one removes its oldest finished ones. */
export const MAX_BACKFILLS_KEPT = 1_000;
/** No analytics data predates it; a far-past start only queues empty windows (and weeks back to 1834 fit the cap). */
const EARLIEST_BACKFILL_START = '2000-01-01T00:00:00.000Z';
const BACKFILL_NOTE =
  'Files of intervals already exported are overwritten in place (each window has one object key): no duplicate rows.';

export type BackfillStatus = 'Starting' | 'Running' | 'Completed' | 'Failed' | 'Cancelled';

export function backfillStatus(b: BackfillRecord): BackfillStatus {
  if (b.cancelled_at) return 'Cancelled';
  if (b.settled_runs >= b.total_runs) return (b.failed_runs ?? 0) > 0 ? 'Failed' : 'Completed';
  return b.settled_runs > 0 ? 'Running' : 'Starting';
}

const isPending = (b: BackfillRecord) => !b.cancelled_at && b.settled_runs < b.total_runs;

/** PostHog's BatchExportBackfill, with progress counted from the runs that settled. */
export function backfillView(e: ExportRecord, b: BackfillRecord) {
  const status = backfillStatus(b);
  const finished = Math.min(b.settled_runs, b.total_runs);
  return {
    id: b.id,
    status,
    start_at: b.start_at,
    end_at: b.end_at,
    adjusted_start_at: b.adjusted_start_at ?? b.start_at,
    created_at: b.created_at,
    last_updated_at: b.last_settled_at ?? b.created_at,
    finished_at: status === 'Starting' || status === 'Running' ? null : (b.last_settled_at ?? b.cancelled_at ?? null),
    total_records_count: b.records_exported ?? 0,
    progress: {
      total_runs: b.total_runs,
      finished_runs: finished,
      progress: b.total_runs ? Math.round((finished / b.total_runs) * 10_000) / 10_000 : 1,
    },
    batch_export: e.id,
    team_id: e.team_id,
  };
}

/** The deprecated endpoint's answer (unchanged: clients of `.../backfill/` read `runs`). */
function legacyResponse(e: ExportRecord, b: BackfillRecord) {
  return {
    backfill_id: b.id,
    runs: b.total_runs,
    interval_seconds: intervalMs(e.interval as ExportInterval) / 1000,
    note: BACKFILL_NOTE,
  };
}

const overlaps = (a: { start_at: string; end_at: string }, start: Date, end: Date) =>
  Date.parse(a.start_at) < end.getTime() && start.getTime() < Date.parse(a.end_at);

/** Daily and weekly exports take dates on their own boundaries (PostHog's rule): a window never straddles two. */
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

function checkOffsets(e: ExportRecord, start: Date, end: Date): void {
  const interval = e.interval as ExportInterval;
  if (interval !== 'day' && interval !== 'week') return;
  const s = scheduleOf(e);
  const clock = `${String(s.offset_hour ?? 0).padStart(2, '0')}:00 ${s.timezone}`;
  const boundary =
    interval === 'day'
      ? `the start of a day (${clock})`
      : `the start of a week (${WEEKDAYS[s.offset_day ?? 0]} ${clock})`;
  for (const [attr, t] of [
    ['start_at', start],
    ['end_at', end],
  ] as const) {
    if (floorBoundary(t, s).getTime() !== t.getTime())
      throw new ValidationError(
        `A ${interval === 'day' ? 'daily' : 'weekly'} export backfills whole ${interval}s: ${attr} must fall on ${boundary}; ${t.toISOString()} does not.`,
        attr,
      );
  }
}

/** The project's backfills in flight; settled ones found on the way leave the in-flight index. */
async function inFlightBackfills(e: ExportRecord): Promise<number> {
  const seen = await backfillsMaybeInFlight(e.team_id);
  await Promise.all(seen.filter((b) => !isPending(b)).map(forgetInFlight));
  return seen.filter(isPending).length;
}

/**
 * Makes room for one more backfill on an export holding MAX_BACKFILLS_KEPT: its oldest finished ones
 * go (their runs stay). Every read of an export's backfills (list, lookup, overlap) stays that size.
 */
async function keepWithinCap(backfills: readonly BackfillRecord[]): Promise<void> {
  const excess = backfills.length - MAX_BACKFILLS_KEPT + 1;
  if (excess <= 0) return;
  const oldestFinished = backfills
    .filter((b) => !isPending(b))
    .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
    .slice(0, excess);
  await deleteBackfills(oldestFinished);
}

export interface BackfillInput {
  start_at?: string | null;
  end_at: string;
  allow_overlap?: boolean;
}

/**
 * One run per interval in [start_at, end_at), queued for the scheduler. Objects are keyed by their
 * window, so a backfill over windows already exported replaces those files instead of duplicating them.
 * The request stores one backfill item and writes the first page of runs; the scheduler writes the
 * rest. The same range again while it is pending answers the same backfill and queues nothing.
 * Overlapping a backfill that is in flight or completed is a 409 unless allowed.
 */
export async function queueBackfill(
  record: ExportRecord,
  input: BackfillInput,
  options: { allowOverlap: boolean; checkOffsets: boolean },
): Promise<BackfillRecord> {
  const interval = scheduleOf(record);
  const end = new Date(input.end_at);
  let start: Date;
  if (input.start_at) start = new Date(input.start_at);
  else {
    // PostHog: no start_at backfills from the project's first event.
    const first = await firstEventAt(record.team_id);
    if (!first)
      throw new ValidationError(
        'The project has no events yet, so there is nothing to backfill from: give start_at.',
        'start_at',
      );
    start = floorBoundary(first, interval);
  }
  if (end.getTime() > clockNow().getTime())
    throw new ValidationError('The end of a backfill cannot be in the future.', 'end_at');
  if (end <= start)
    throw new ValidationError("The initial backfill datetime 'start_at' happens after 'end_at'.", 'start_at');
  if (start.getTime() < Date.parse(EARLIEST_BACKFILL_START)) {
    throw new ValidationError(
      `A backfill cannot start before ${EARLIEST_BACKFILL_START}; start_at is ${start.toISOString()}.`,
      'start_at',
    );
  }
  if (options.checkOffsets && input.start_at) checkOffsets(record, start, end);
  else if (options.checkOffsets) checkOffsets(record, floorBoundary(start, interval), end);
  // Counted before anything is built: a range of millions of windows costs nothing to refuse.
  const count = windowCount(start, end, interval);
  if (count > MAX_BACKFILL_RUNS) {
    throw new ValidationError(
      `A backfill may cover at most ${MAX_BACKFILL_RUNS} intervals; this one covers ${count}.`,
      'start_at',
    );
  }
  const range = `${start.toISOString()}#${end.toISOString()}`;
  const existing = await getBackfill(record.id, range);
  if (existing && isPending(existing)) return existing;
  const kept = await listBackfills(record.id);
  if (!options.allowOverlap) {
    const clash = kept.find((b) => overlaps(b, start, end) && (isPending(b) || backfillStatus(b) === 'Completed'));
    if (clash)
      throw new Conflict(
        `This backfill overlaps backfill ${clash.id} (${clash.start_at} to ${clash.end_at}, ${backfillStatus(clash)}): its windows would be exported again. Send "allow_overlap": true to export them again anyway.`,
        'start_at',
      );
  }
  const inFlight = await inFlightBackfills(record);
  if (inFlight >= MAX_CONCURRENT_BACKFILLS_PER_TEAM)
    throw new Throttled(
      300,
      `This project has ${inFlight} backfills in flight, the most it may have at once (${MAX_CONCURRENT_BACKFILLS_PER_TEAM}); wait for one to finish or cancel one.`,
    );
  await keepWithinCap(kept);
  const now = clockNow();
  const backfill: BackfillRecord = {
    id: uuidv7(),
    batch_export: record.id,
    organization_id: record.organization_id,
    start_at: start.toISOString(),
    end_at: end.toISOString(),
    range,
    total_runs: count,
    next_window_start: floorBoundary(start, interval).toISOString(),
    settled_runs: 0,
    created_at: now.toISOString(),
    adjusted_start_at: floorBoundary(start, interval).toISOString(),
    failed_runs: 0,
    records_exported: 0,
    last_settled_at: null,
    cancelled_at: null,
    cancelled_from: null,
  };
  const outcome = await retryTransient('The backfill', async () => {
    const o = await createBackfill(backfill, record.team_id, MAX_PENDING_BACKFILL_RUNS);
    return o === 'conflict' ? TRANSIENT : o;
  });
  if (outcome === 'exists') {
    // The same range was requested at the same moment: that request's backfill is this one's answer.
    const winner = await getBackfill(record.id, range);
    if (winner) return winner;
  }
  if (outcome !== 'created') {
    const queued = await pendingBackfillRuns(record.id);
    throw new ValidationError(
      `An export may have at most ${MAX_PENDING_BACKFILL_RUNS} backfill runs pending; this one has ${queued} and this backfill adds ${count}. Wait for them to finish, or backfill a shorter range.`,
      'start_at',
    );
  }
  // The backfill is stored: from here on nothing may fail the request (a client would retry work that
  // is done). The first page is written now, so a short backfill's runs are there at once; if it
  // cannot be, the scheduler writes it like the rest.
  try {
    await expandBackfill(record, backfill, now, BACKFILL_REQUEST_PAGE);
    await log(
      record.id,
      `Backfill ${backfill.id} queued ${count} run(s) from ${backfill.next_window_start} to ${backfill.end_at}. ${BACKFILL_NOTE}`,
    );
  } catch (error) {
    logger.warn('backfill stored; its first page is left to the scheduler', {
      batch_export_id: record.id,
      backfill_id: backfill.id,
      error: String(error),
    });
  }
  return backfill;
}

async function log(exportId: string, message: string, runId: string | null = null): Promise<void> {
  await writeLog(exportId, { id: uuidv7(), timestamp: nowIso(), level: 'INFO', message, run_id: runId });
}

/**
 * The deprecated `.../backfill/`: a thin alias that creates a backfill. It keeps its old contract (200,
 * `runs`, overlap allowed: files are keyed by window, so a repeat overwrites rather than duplicates).
 */
export async function legacyBackfill(membership: MembershipRecord, exportId: string, input: BackfillInput) {
  const record = await findExport(membership, exportId);
  const b = await queueBackfill(record, input, { allowOverlap: true, checkOffsets: true });
  return legacyResponse(record, b);
}

export async function createBackfillResource(membership: MembershipRecord, exportId: string, input: BackfillInput) {
  const record = await findExport(membership, exportId);
  const b = await queueBackfill(record, input, { allowOverlap: input.allow_overlap === true, checkOffsets: true });
  return { backfill_id: b.id };
}

async function findBackfill(record: ExportRecord, backfillId: string): Promise<BackfillRecord> {
  const found = (await listBackfills(record.id)).find((b) => b.id === backfillId.toLowerCase());
  if (!found) throw new NotFound();
  return found;
}

export async function listBackfillsOf(
  membership: MembershipRecord,
  exportId: string,
  page: { ordering: 'created_at' | '-created_at' | 'start_at' | '-start_at'; limit: number; cursor?: string },
) {
  const record = await findExport(membership, exportId);
  const field = page.ordering.replace('-', '') as 'created_at' | 'start_at';
  const sign = page.ordering.startsWith('-') ? -1 : 1;
  const all = (await listBackfills(record.id)).sort(
    (a, b) => sign * (a[field] < b[field] ? -1 : a[field] > b[field] ? 1 : a.id < b.id ? -1 : 1),
  );
  // The cursor is the last id of the previous page: the order is total (ties broken by id).
  const from = page.cursor ? all.findIndex((b) => b.id === page.cursor) + 1 : 0;
  const slice = all.slice(from, from + page.limit);
  const more = from + page.limit < all.length;
  return { results: slice.map((b) => backfillView(record, b)), next: more ? slice.at(-1)?.id : undefined };
}

export async function retrieveBackfill(membership: MembershipRecord, exportId: string, backfillId: string) {
  const record = await findExport(membership, exportId);
  return backfillView(record, await findBackfill(record, backfillId));
}

/**
 * Cancels a backfill: no more of its windows become runs, and its queued runs end Cancelled without
 * executing when the scheduler reaches them. A run executing now finishes. Cancelling a finished one is a 409.
 */
export async function cancelBackfill(membership: MembershipRecord, exportId: string, backfillId: string) {
  const record = await findExport(membership, exportId);
  const interval = scheduleOf(record);
  return retryTransient(
    `Backfill ${backfillId}`,
    async () => {
      const b = await findBackfill(record, backfillId);
      if (b.cancelled_at) return backfillView(record, b);
      if (!isPending(b)) throw new Conflict(`Backfill ${b.id} has already finished (${backfillStatus(b)}).`);
      const unwritten = b.next_window_start
        ? windowCount(new Date(b.next_window_start), new Date(b.end_at), interval)
        : 0;
      const at = nowIso();
      if (!(await cancelBackfillItem(b, unwritten, at))) return TRANSIENT;
      await log(record.id, `Backfill ${b.id} cancelled; ${unwritten} window(s) not yet queued are dropped.`);
      return backfillView(record, {
        ...b,
        cancelled_at: at,
        cancelled_from: b.next_window_start,
        next_window_start: null,
        settled_runs: b.settled_runs + unwritten,
        last_settled_at: at,
      });
    },
    { attempts: 5, gaveUp: () => new Conflict(`Backfill ${backfillId} kept changing; retry the cancel.`) },
  );
}

// Runs as a resource.

export type RunOrdering = 'created_at' | '-created_at' | 'data_interval_start' | '-data_interval_start';

export async function listRuns(
  membership: MembershipRecord,
  exportId: string,
  q: { ordering: RunOrdering; status?: string[]; after?: string; before?: string; limit: number; cursor?: string },
) {
  const record = await findExport(membership, exportId);
  const query: RunsPageQuery = {
    order: q.ordering.endsWith('created_at') ? 'created' : 'window',
    descending: q.ordering.startsWith('-'),
    status: q.status,
    after: q.after && new Date(q.after).toISOString(),
    before: q.before && new Date(q.before).toISOString(),
    cursor: q.cursor,
    limit: q.limit,
  };
  if (q.cursor !== undefined && !isRunsCursor(query, q.cursor)) throw new ValidationError('Invalid cursor.', 'cursor');
  const page = await runsPage(record.id, query);
  return { results: page.runs.map(runResponse), next: page.next };
}

async function findRun(record: ExportRecord, runId: string): Promise<RunRecord> {
  const run = /^[0-9a-f-]{36}$/i.test(runId) ? await getRun(record.id, runId.toLowerCase()) : undefined;
  if (!run) throw new NotFound();
  return run;
}

export async function retrieveRun(membership: MembershipRecord, exportId: string, runId: string) {
  const record = await findExport(membership, exportId);
  return runResponse(await findRun(record, runId));
}

/** PostHog's retry: a backfill of the run's one window (re-exporting it is the point, so overlap is allowed). */
export async function retryRun(membership: MembershipRecord, exportId: string, runId: string) {
  const record = await findExport(membership, exportId);
  const run = await findRun(record, runId);
  const b = await queueBackfill(
    record,
    { start_at: run.data_interval_start, end_at: run.data_interval_end },
    { allowOverlap: true, checkOffsets: false },
  );
  return { backfill_id: b.id };
}

/**
 * Cancels a run that has not started (Starting) or waits for its retry (FailedRetryable); it never
 * executes. An executing run cannot be stopped mid-upload (409); a finished one is a 409 too.
 */
export async function cancelRun(membership: MembershipRecord, exportId: string, runId: string) {
  const record = await findExport(membership, exportId);
  return retryTransient(
    `Run ${runId}`,
    async () => {
      const run = await findRun(record, runId);
      if (run.status === 'Cancelled') return runResponse(run);
      if (run.status !== 'Starting' && run.status !== 'FailedRetryable')
        throw new Conflict(
          run.status === 'Running'
            ? `Run ${run.id} is executing; it cannot be stopped mid-upload. Cancel it if it fails and waits for a retry.`
            : `Run ${run.id} has already finished (${run.status}).`,
        );
      const at = nowIso();
      const cancelled: RunRecord = {
        ...run,
        status: 'Cancelled',
        finished_at: at,
        last_updated_at: at,
        next_attempt_at: null,
      };
      if (!(await claimRun(run, cancelled))) return TRANSIENT;
      await settleBackfill(cancelled);
      await log(record.id, `Run ${run.id} cancelled.`, run.id);
      return runResponse(cancelled);
    },
    { attempts: 5, gaveUp: () => new Conflict(`Run ${runId} kept changing; retry the cancel.`) },
  );
}

export async function runLogs(membership: MembershipRecord, exportId: string, runId: string, filter: LogFilter) {
  const record = await findExport(membership, exportId);
  const run = await findRun(record, runId);
  // A run logs nothing before it exists: its creation bounds the read (a second of slack for clock skew).
  const created = new Date(Date.parse(run.created_at) - 1000).toISOString();
  const after = filter.after && Date.parse(filter.after) > Date.parse(created) ? filter.after : created;
  return logsOf(record, { ...filter, after, run_id: run.id });
}

// Pause and unpause (PostHog's actions).

export async function pauseExport(membership: MembershipRecord, exportId: string) {
  await updateExport(membership, exportId, { paused: true }, FILTERS_UNCHANGED);
  return { paused: true };
}

/**
 * Unpauses; with `backfill: true` the windows missed while paused (from last_paused_at to the last
 * closed boundary) are backfilled, overlap allowed: they were never exported.
 */
export async function unpauseExport(membership: MembershipRecord, exportId: string, input: { backfill?: boolean }) {
  const before = await findExport(membership, exportId);
  await updateExport(membership, exportId, { paused: false }, FILTERS_UNCHANGED);
  if (!input.backfill || !before.paused || !before.last_paused_at) return { paused: false };
  const interval = scheduleOf(before);
  const start = floorBoundary(new Date(before.last_paused_at), interval);
  const end = floorBoundary(clockNow(), interval);
  if (end <= start) return { paused: false, backfill_id: null };
  const b = await queueBackfill(
    before,
    { start_at: start.toISOString(), end_at: end.toISOString() },
    { allowOverlap: true, checkOffsets: false },
  );
  return { paused: false, backfill_id: b.id };
}
