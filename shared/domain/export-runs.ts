import { now as clockNow } from '../clock.ts';
import { inParallel } from '../db/batch.ts';
import {
  dueUnparks,
  finishUnpark,
  parkedRuns,
  unparkRun,
  type UnparkRequest,
  advanceBackfill,
  claimRun,
  claimWindow,
  deleteExport,
  dueBackfills,
  dueExports,
  dueOrganizations,
  dueRunsOf,
  getBackfill,
  getExport,
  saveExport,
  saveRun,
  saveRuns,
  settleBackfillRun,
  settleOrganizationQueue,
  writeLog,
  type BackfillRecord,
  type ExportRecord,
  type LogRecord,
  type RunRecord,
} from '../db/batch-exports.ts';
import { readEventsInsertedBetween, type StoredEvent } from '../db/events.ts';
import { organizationExists } from '../db/organizations.ts';
import { DestinationError } from '../exports/destination-http.ts';
import { openDestination } from './export-destinations.ts';
import { getPersons, personIdsOf, personsPage, type PersonRecord, type PersonsPosition } from '../db/persons.ts';
import { encodeFiles, manifestKey, objectKey, type Compression, type FileFormat } from '../exports/files.ts';
import { EVENT_COLUMNS, parseExportQuery } from '../exports/hogql.ts';
import {
  intervalMs,
  nextBoundary,
  previousBoundary,
  scheduleOf,
  windowsBetween,
  type ExportInterval,
} from '../exports/intervals.ts';
import { uuidv7 } from '../ids.ts';
import { TRANSIENT, conflictIfFalse, retryTransient } from '../retry.ts';
import { logger, METRIC, metrics, MetricUnit } from '../observability.ts';

/** Where files go (S3 in the service; injected so the rules here stay testable). */
export type PutObject = (
  config: Record<string, unknown>,
  key: string,
  body: Buffer,
  contentType: string,
) => Promise<void>;

export const MAX_ATTEMPTS = 3;
export const PAUSE_AFTER_FAILED_RUNS = 3;
/** A scheduler that was down does not flood: at most this many missed windows per export per tick. */
const MAX_CATCH_UP = 24;
const RUNS_IN_FLIGHT = 2;
/**
 * Fairness: a tick reads at most this many due runs per organization (a page of its own index
 * partition, never the whole backlog) and executes them taking turns, one run per organization per
 * round. Another organization's backlog therefore delays a run by at most one round of runs.
 */
export const RUNS_PER_ORGANIZATION_PER_TICK = 50;
/**
 * A claimed run is leased for the exporter's whole invocation (run_batch_exports times out after
 * 900 s, counted from the tick's `now`, which is at or before the claim) plus a minute of margin.
 * Once the lease runs out, the invocation is surely gone: the run is due again.
 */
export const RUN_LEASE_MS = (900 + 60) * 1000;
const ORGANIZATIONS_IN_FLIGHT = 4;
/**
 * Windows a backfill turns into runs at a time. Each tick writes a page of 500 of each due backfill:
 * ten times what it executes per organization, so writing never holds the runs back. The request
 * writes only the first 100 (a short backfill's runs are there at once; 500 took 1.5-3 s on
 * DynamoDB Local), so it answers in the same time whatever its window count.
 */
export const BACKFILL_PAGE = 500;
export const BACKFILL_REQUEST_PAGE = 100;
/** Backfills a tick expands (oldest request first); the rest wait a tick. */
const BACKFILLS_PER_TICK = 50;
/** Unpaused exports whose parked runs go back in the queue each tick, and runs each of them moves a tick. */
const UNPARKS_PER_TICK = 50;
const UNPARK_PAGE = 500;
/**
 * A run reads its window in slices (5 minutes, longer for windows over 4 hours so there are at most
 * 48), several at once, rather than as one Query chain per hour shard: a busy hour is then many short
 * chains read in parallel instead of four long serial ones (on DynamoDB Local, whose page cost grows
 * with the rest of the range, 100k events read 3-4x faster).
 */
const READ_SLICE_MS = 5 * 60_000;
const MAX_READ_SLICES = 48;
const READ_SLICES_IN_FLIGHT = 6;

const PERSON_COLUMNS = [
  'team_id',
  'distinct_id',
  'person_id',
  'properties',
  'person_distinct_id_version',
  'person_version',
  'created_at',
  '_inserted_at',
  'is_deleted',
];

async function log(exportId: string, level: LogRecord['level'], message: string, runId: string | null): Promise<void> {
  await writeLog(exportId, { id: uuidv7(), timestamp: clockNow().toISOString(), level, message, run_id: runId });
}

export interface SchedulerSummary {
  runsCreated: number;
  runsExecuted: number;
  completed: number;
  failed: number;
}

/**
 * One scheduler tick (EventBridge every 5 minutes): every export whose next window has closed gets a
 * run per closed window [T - interval, T) (a window is claimed once, so overlapping ticks are harmless),
 * then runs that are due (new, retried, backfilled, or abandoned by a dead invocation) are executed,
 * the organizations taking turns (RUNS_PER_ORGANIZATION_PER_TICK).
 */
export async function runScheduler(
  now: Date,
  put: PutObject,
  timeLeftMs: () => number = () => Infinity,
): Promise<SchedulerSummary> {
  const summary: SchedulerSummary = { runsCreated: 0, runsExecuted: 0, completed: 0, failed: 0 };
  for (const e of await dueExports(now)) summary.runsCreated += await scheduleWindows(e, now);
  // At most 50 pages of 500 writes: seconds of a 900-second tick, so no time check is needed here.
  for (const b of await dueBackfills(now, BACKFILLS_PER_TICK)) {
    const e = await getExport(b.organization_id, b.batch_export);
    if (e) summary.runsCreated += await expandBackfill(e, b, now);
  }
  for (const u of await dueUnparks(now, UNPARKS_PER_TICK)) await unparkPage(u, now);
  const organizations = await dueOrganizations(now);
  const queues = await inParallel(organizations, ORGANIZATIONS_IN_FLIGHT, async (orgId) =>
    (await dueRunsOf(orgId, now, RUNS_PER_ORGANIZATION_PER_TICK)).sort((a, b) =>
      a.data_interval_start < b.data_interval_start ? -1 : 1,
    ),
  );
  await inParallel(takeTurns(queues), RUNS_IN_FLIGHT, async (run) => {
    if (timeLeftMs() < 120_000) return; // the next tick picks it up
    const status = run.status === 'Running' ? await resumeAbandoned(run, now, put) : await executeRun(run, now, put);
    if (status) summary.runsExecuted += 1;
    if (status === 'Completed') summary.completed += 1;
    if (status === 'Failed' || status === 'FailedRetryable') summary.failed += 1;
  });
  // Every tick, zeros included: failed attempts (retryable or final) and completed runs.
  metrics.addMetric(METRIC.exportRunsCompleted, MetricUnit.Count, summary.completed);
  metrics.addMetric(METRIC.exportRunFailures, MetricUnit.Count, summary.failed);
  await inParallel(organizations, ORGANIZATIONS_IN_FLIGHT, (orgId) => settleOrganizationQueue(orgId, now));
  return summary;
}

/**
 * Puts a page of an unpaused export's parked runs back in its organization's queue, due now; the
 * request stays until a page comes back short (or the export is gone or paused again).
 */
async function unparkPage(u: UnparkRequest, now: Date): Promise<void> {
  const e = await getExport(u.organizationId, u.exportId);
  if (e && !e.paused) {
    const runs = await parkedRuns(e.id, UNPARK_PAGE);
    await inParallel(runs, 8, (r) => unparkRun(r, now.toISOString()));
    if (runs.length === UNPARK_PAGE) return;
  }
  await finishUnpark(u);
}

/** Round robin: the first run of every queue, then the second of every queue, and so on. */
export function takeTurns<T>(queues: readonly (readonly T[])[]): T[] {
  const turns: T[] = [];
  const rounds = queues.reduce((most, q) => Math.max(most, q.length), 0);
  for (let i = 0; i < rounds; i += 1) for (const q of queues) if (i < q.length) turns.push(q[i]!);
  return turns;
}

/**
 * A Running run whose lease ran out: the invocation that held it timed out or crashed. That attempt
 * counts; the next one starts now (it waited longer than any retry backoff) unless the attempts are
 * used up or the export is paused, which settle it as a failed attempt.
 */
async function resumeAbandoned(run: RunRecord, now: Date, put: PutObject): Promise<RunRecord['status'] | undefined> {
  const e = await getExport(run.organization_id, run.batch_export);
  if (!e) return undefined;
  const taken: RunRecord = { ...run, last_updated_at: now.toISOString(), lease_until: leaseEnd(now) };
  if (!(await claimRun(run, taken))) return undefined; // another tick took it over
  const message = `attempt ${run.attempts} stopped without finishing (its lease ran out at ${run.lease_until}: the exporter timed out or crashed)`;
  if (run.attempts >= MAX_ATTEMPTS || e.paused) return fail(e, taken, { name: 'AttemptAbandoned', message }, now);
  await log(e.id, 'WARNING', `Run ${message}; retrying now (attempt ${run.attempts + 1} of ${MAX_ATTEMPTS}).`, run.id);
  return executeRun(taken, now, put);
}

const leaseEnd = (now: Date) => new Date(now.getTime() + RUN_LEASE_MS).toISOString();

async function scheduleWindows(e: ExportRecord, now: Date): Promise<number> {
  const schedule = scheduleOf(e);
  let end = Date.parse(e.next_window_end!);
  let created = 0;
  while (end <= now.getTime() && (!e.end_at || end <= Date.parse(e.end_at)) && created < MAX_CATCH_UP) {
    // Day and week windows are not fixed lengths in a zone with DST: each starts at the boundary before its end.
    const start = previousBoundary(new Date(end), schedule).toISOString();
    const run = newRun(e, start, new Date(end).toISOString(), now, null);
    if (await claimWindow(e.id, start, run.id)) {
      await saveRuns([run]);
      created += 1;
    }
    end = nextBoundary(new Date(end), schedule).getTime();
  }
  // Another tick may have moved it meanwhile: then its claims already covered these windows.
  await saveExport({ ...e, next_window_end: new Date(end).toISOString(), version: e.version + 1 }, e.version);
  return created;
}

/**
 * Turns the backfill's next page of windows into runs, then moves its cursor past them. Runs are
 * written first: a crash in between writes the page again on the next tick (a window's file is
 * overwritten in place), where the other order could lose the page.
 */
export async function expandBackfill(
  e: ExportRecord,
  b: BackfillRecord,
  now: Date,
  page = BACKFILL_PAGE,
): Promise<number> {
  if (b.next_window_start === null) return 0;
  const interval = e.interval as ExportInterval;
  const from = Date.parse(b.next_window_start);
  // A page is `page` windows: nominal lengths plus a day of slack for DST, then cut to the count.
  const to = Math.min(
    Date.parse(b.end_at),
    from + page * intervalMs(interval) + (interval === 'day' || interval === 'week' ? 86_400_000 : 0),
  );
  const windows = windowsBetween(new Date(from), new Date(to), scheduleOf(e)).slice(0, page);
  const last = windows.at(-1);
  const next = last && last.end.getTime() < Date.parse(b.end_at) ? last.end.toISOString() : null;
  await saveRuns(
    windows.map((w) => ({
      ...newRun(e, w.start.toISOString(), w.end.toISOString(), now, b.id),
      backfill_range: b.range,
    })),
  );
  await advanceBackfill(b, next);
  return windows.length;
}

/**
 * A backfill run reached Completed or Failed: its place under the pending cap is freed. Never throws
 * (the run's outcome is already saved); a count that cannot be written keeps the place taken rather
 * than risk freeing it twice.
 */
export async function settleBackfill(run: RunRecord): Promise<void> {
  if (!run.backfill_id || !run.backfill_range) return;
  try {
    await retryTransient(
      'the backfill ledger',
      async () => ((await settleBackfillRun(run)) === 'conflict' ? TRANSIENT : true),
      { attempts: 5 },
    );
  } catch (error) {
    logger.warn('backfill run not counted as settled', { run_id: run.id, error: describeError(error) });
  }
}

export function newRun(e: ExportRecord, start: string, end: string, now: Date, backfillId: string | null): RunRecord {
  const at = now.toISOString();
  return {
    id: uuidv7(),
    batch_export: e.id,
    organization_id: e.organization_id,
    status: 'Starting',
    records_completed: 0,
    records_total_count: 0,
    bytes_exported: 0,
    latest_error: null,
    data_interval_start: start,
    data_interval_end: end,
    cursor: null,
    created_at: at,
    finished_at: null,
    last_updated_at: at,
    attempts: 0,
    next_attempt_at: at,
    backfill_id: backfillId,
    // A paused export's runs wait outside the queue: the scheduler never looks at them until it is unpaused.
    ...(e.paused ? { parked: true } : {}),
  };
}

/** Executes one run; returns its new status (undefined when it was not started). */
export async function executeRun(run: RunRecord, now: Date, put: PutObject): Promise<RunRecord['status'] | undefined> {
  const e = await getExport(run.organization_id, run.batch_export);
  if (!e) return undefined;
  if (!(await organizationExists(e.organization_id))) {
    // Its organization was deleted (and the cleanup did not finish): drop the export and its runs.
    await deleteExport(e);
    return undefined;
  }
  if (run.backfill_range && run.status !== 'Running' && (await cancelledByBackfill(run, now))) return undefined;
  if (e.paused) {
    // Queued before the pause: out of the queue until unpaused (updateExport asks for it back). If the
    // unpause came between the read above and this write, its request may have missed this run: put it back.
    await saveRun({ ...run, parked: true });
    const again = await getExport(e.organization_id, e.id);
    if (again && !again.paused) await unparkRun({ ...run, parked: true }, now.toISOString());
    return undefined;
  }
  const attempt = run.attempts + 1;
  const running: RunRecord = {
    ...run,
    status: 'Running',
    attempts: attempt,
    last_updated_at: now.toISOString(),
    next_attempt_at: null,
    lease_until: leaseEnd(now),
  };
  if (!(await claimRun(run, running))) return undefined;
  // Rows read before the upload failed are the run's records_failed (0 when reading itself failed).
  let read = 0;
  try {
    const uploaded = await uploadRun(e, run, put, (n) => {
      read = n;
    });
    await completeRun(e, { ...running, records_failed: 0 }, uploaded);
    return 'Completed';
  } catch (error) {
    return fail(e, { ...running, records_failed: read }, error, now);
  }
}

/**
 * A queued run of a cancelled backfill ends Cancelled without executing. It counts as settled unless
 * its window was among those the cancel itself settled (written by a page that raced the cancel).
 */
async function cancelledByBackfill(run: RunRecord, now: Date): Promise<boolean> {
  const b = await getBackfill(run.batch_export, run.backfill_range!);
  if (!b || b.id !== run.backfill_id || !b.cancelled_at) return false;
  const at = now.toISOString();
  const cancelled: RunRecord = {
    ...run,
    status: 'Cancelled',
    finished_at: at,
    last_updated_at: at,
    next_attempt_at: null,
  };
  if (!(await claimRun(run, cancelled))) return true;
  if (!b.cancelled_from || run.data_interval_start < b.cancelled_from) await settleBackfill(cancelled);
  await log(run.batch_export, 'INFO', `Run cancelled without executing: backfill ${b.id} was cancelled.`, run.id);
  return true;
}

interface Uploaded {
  bucket: string;
  key: string;
  records: number;
  bytes: number;
}

/**
 * Writes the run's rows as one file, or several of at most max_file_size_mb, then the manifest beside
 * them, last: a consumer that sees the manifest knows the window's files are all there.
 */
async function uploadRun(
  e: ExportRecord,
  run: RunRecord,
  put: PutObject,
  onRows: (count: number) => void,
): Promise<Uploaded> {
  const rows = e.model === 'persons' ? await personRows(e, run) : await eventRows(e, run);
  onRows(rows.rows.length);
  const config = await openDestination(e);
  const format = (config.file_format as FileFormat | null) ?? 'JSONLines';
  const compression = (config.compression as Compression | null) ?? 'none';
  const window = { start: new Date(run.data_interval_start), end: new Date(run.data_interval_end) };
  const maxMb = config.max_file_size_mb as number | null | undefined;
  const files = encodeFiles(rows.rows, rows.columns, format, compression, maxMb ? maxMb * 1024 * 1024 : undefined);
  const prefix = String(config.prefix ?? '');
  const written: { key: string; records: number; bytes: number }[] = [];
  for (const [n, file] of files.entries()) {
    const key = objectKey(prefix, window, e.model, file.extension, maxMb ? n : undefined);
    await put(config, key, file.body, file.contentType);
    written.push({ key, records: file.records, bytes: file.body.length });
  }
  const bytes = written.reduce((sum, f) => sum + f.bytes, 0);
  const manifest = {
    batch_export_id: e.id,
    run_id: run.id,
    model: e.model,
    data_interval_start: run.data_interval_start,
    data_interval_end: run.data_interval_end,
    file_format: format,
    compression,
    files: written,
    records: rows.rows.length,
    bytes,
  };
  const manifest_key = manifestKey(prefix, window, e.model);
  await put(config, manifest_key, Buffer.from(JSON.stringify(manifest, null, 2)), 'application/json');
  const key = written.length === 1 ? written[0]!.key : manifest_key;
  return { bucket: String(config.bucket_name), key, records: rows.rows.length, bytes };
}

/** Records a run's success: the run, the rows metric, the export's log, and its failure streak reset. */
async function completeRun(e: ExportRecord, running: RunRecord, uploaded: Uploaded): Promise<void> {
  const { bucket, key, records, bytes } = uploaded;
  const finished = clockNow().toISOString();
  const completed: RunRecord = {
    ...running,
    status: 'Completed',
    records_completed: records,
    records_total_count: records,
    bytes_exported: bytes,
    finished_at: finished,
    last_updated_at: finished,
    latest_error: null,
  };
  await saveRun(completed);
  await settleBackfill(completed);
  metrics.addMetric(METRIC.exportRows, MetricUnit.Count, records);
  await log(
    e.id,
    'INFO',
    `Exported ${records} record(s) (${bytes} bytes) for ${running.data_interval_start} - ${running.data_interval_end} to s3://${bucket}/${key}.`,
    running.id,
  );
  await changeExport(e, (x) => (x.consecutive_failures ? { ...x, consecutive_failures: 0 } : undefined));
}

function describeError(error: unknown): string {
  // A destination's failure is our own sentence (status and error code at most), never its text.
  if (error instanceof DestinationError) return error.message;
  const e = error as { name?: string; message?: string; Code?: string };
  return `${e.name ?? 'Error'}: ${e.message ?? String(error)}`.slice(0, 1000);
}

async function fail(e: ExportRecord, run: RunRecord, error: unknown, now: Date): Promise<RunRecord['status']> {
  const message = describeError(error);
  logger.warn('batch export run failed', {
    batch_export_id: e.id,
    run_id: run.id,
    attempt: run.attempts,
    error: message,
  });
  const at = clockNow().toISOString();
  if (run.attempts < MAX_ATTEMPTS) {
    const retryAt = new Date(now.getTime() + 60_000 * 2 ** (run.attempts - 1)).toISOString();
    await saveRun({
      ...run,
      status: 'FailedRetryable',
      latest_error: message,
      last_updated_at: at,
      next_attempt_at: retryAt,
    });
    await log(
      e.id,
      'WARNING',
      `Run failed (attempt ${run.attempts} of ${MAX_ATTEMPTS}), retrying at ${retryAt}: ${message}`,
      run.id,
    );
    return 'FailedRetryable';
  }
  const failed: RunRecord = {
    ...run,
    status: 'Failed',
    latest_error: message,
    last_updated_at: at,
    finished_at: at,
    next_attempt_at: null,
  };
  await saveRun(failed);
  await settleBackfill(failed);
  await log(e.id, 'ERROR', `Run failed after ${MAX_ATTEMPTS} attempts: ${message}`, run.id);
  let pausedNow = 0;
  await changeExport(e, (x) => {
    const failures = x.consecutive_failures + 1;
    const pause = !x.paused && failures >= PAUSE_AFTER_FAILED_RUNS;
    pausedNow = pause ? failures : 0;
    return {
      ...x,
      consecutive_failures: failures,
      paused: x.paused || pause,
      last_paused_at: pause ? at : x.last_paused_at,
    };
  });
  if (pausedNow)
    await log(
      e.id,
      'ERROR',
      `Batch export paused after ${pausedNow} consecutive failed runs; fix the destination and unpause it (backfill to export what was missed).`,
      run.id,
    );
  return 'Failed';
}

/**
 * Read-modify-write of the export with its version: runs finish concurrently, and a lost update here
 * would lose a failure count (and with it the automatic pause). `change` returns undefined for no change.
 * Giving up is logged, not thrown: the run's own outcome is already recorded and stays as it is.
 */
async function changeExport(
  e: ExportRecord,
  change: (current: ExportRecord) => ExportRecord | undefined,
): Promise<void> {
  let current: ExportRecord | undefined = e;
  const gaveUp = new Error(
    `batch export ${e.id} kept changing: counters not updated after ${CHANGE_EXPORT_ATTEMPTS} attempts`,
  );
  try {
    await retryTransient(
      `Batch export ${e.id}`,
      async (attempt) => {
        if (attempt > 0) current = await getExport(e.organization_id, e.id);
        const next = current && change(current);
        if (!current || !next) return true;
        return conflictIfFalse(await saveExport({ ...next, version: current.version + 1 }, current.version));
      },
      { attempts: CHANGE_EXPORT_ATTEMPTS, gaveUp: () => gaveUp },
    );
  } catch (error) {
    if (error !== gaveUp) throw error;
    logger.error(gaveUp.message, { batch_export_id: e.id });
  }
}

const CHANGE_EXPORT_ATTEMPTS = 8;

/** PostHog's events schema (§4.5): one row per event ingested in the window, filtered, optionally shaped by hogql_query. */
async function eventRows(
  e: ExportRecord,
  run: RunRecord,
): Promise<{ rows: Record<string, unknown>[]; columns: string[] }> {
  const slices = readSlices(new Date(run.data_interval_start), new Date(run.data_interval_end));
  const events = (
    await inParallel(slices, READ_SLICES_IN_FLIGHT, (slice) =>
      readEventsInsertedBetween(e.team_id, slice.start, slice.end),
    )
  ).flat();
  const include = e.destination.config.include_events as string[] | null | undefined;
  const exclude = e.destination.config.exclude_events as string[] | null | undefined;
  const named = events.filter((x) => (!include?.length || include.includes(x.event)) && !exclude?.includes(x.event));
  const persons = await personsOf(e.team_id, named);
  // The filter grammar is loaded by the runs that filter (code splitting, infra/build.ts): an export paused,
  // listed or retried does not initialise it.
  const { compileGroup, parseProperties } = await import('../trends/properties.ts');
  const filter = e.filters?.length
    ? compileGroup(parseProperties(e.filters, 'filters').group, { tz: 'UTC', now: Date.now(), weekStartDay: 0 })
    : undefined;
  const sources = named
    .map((x) => ({ x, person: persons.get(x.distinct_id) }))
    .filter(
      ({ x, person }) =>
        !filter ||
        filter({
          ...x,
          person_id: person ? String(person.id) : x.distinct_id,
          person_properties: person?.properties ?? {},
        }),
    )
    .map(({ x, person }) => ({
      columns: {
        uuid: x.uuid,
        event: x.event,
        distinct_id: x.distinct_id,
        person_id: person?.uuid ?? null,
        properties: x.properties,
        person_properties: person?.properties ?? {},
        elements_chain: '',
        timestamp: x.timestamp,
        created_at: x.inserted_at,
        _inserted_at: x.inserted_at,
      } as Record<string, unknown>,
      properties: x.properties,
      person_properties: person?.properties ?? {},
    }));
  if (!e.hogql_query) return { rows: sources.map((s) => s.columns), columns: EVENT_COLUMNS };
  const fields = parseExportQuery(e.hogql_query);
  return {
    rows: sources.map((s) => Object.fromEntries(fields.map((f) => [f.alias, f.read(s)]))),
    columns: fields.map((f) => f.alias),
  };
}

/** [start, end) as consecutive half-open read slices, in order (so their events concatenate in ingestion order). */
export function readSlices(start: Date, end: Date): { start: Date; end: Date }[] {
  const sliceMs = Math.max(READ_SLICE_MS, Math.ceil((end.getTime() - start.getTime()) / MAX_READ_SLICES));
  const slices: { start: Date; end: Date }[] = [];
  for (let t = start.getTime(); t < end.getTime(); t += sliceMs)
    slices.push({ start: new Date(t), end: new Date(Math.min(t + sliceMs, end.getTime())) });
  return slices;
}

async function personsOf(projectId: number, events: StoredEvent[]): Promise<Map<string, PersonRecord>> {
  const ids = await personIdsOf(
    [...new Set(events.map((x) => x.distinct_id))].map((distinctId) => ({ projectId, distinctId })),
  );
  const persons = new Map((await getPersons(projectId, [...ids.values()])).map((p) => [p.id, p]));
  return new Map(
    [...ids].flatMap(([key, id]) =>
      persons.has(id) ? [[key.slice(String(projectId).length + 1), persons.get(id)!] as const] : [],
    ),
  );
}

/** PostHog's persons schema: one row per (person, distinct id) for persons changed in the window. */
async function personRows(
  e: ExportRecord,
  run: RunRecord,
): Promise<{ rows: Record<string, unknown>[]; columns: string[] }> {
  const rows: Record<string, unknown>[] = [];
  let after: PersonsPosition | undefined;
  do {
    const page = await personsPage(e.team_id, { limit: 500, after });
    for (const { person: p } of page.persons) {
      const changed = p.updated_at ?? p.created_at;
      if (changed < run.data_interval_start || changed >= run.data_interval_end) continue;
      for (const distinctId of p.distinct_ids) {
        rows.push({
          team_id: e.team_id,
          distinct_id: distinctId,
          person_id: p.uuid,
          properties: p.properties,
          person_distinct_id_version: 0,
          person_version: p.version,
          created_at: p.created_at,
          _inserted_at: changed,
          is_deleted: false,
        });
      }
    }
    after = page.next;
  } while (after);
  return { rows, columns: PERSON_COLUMNS };
}
