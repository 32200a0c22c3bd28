import { nowIso, now as clockNow } from '../clock.ts';
import {
  createBackfill,
  deleteExport as removeExport,
  getBackfill,
  getExport,
  latestRuns,
  listExports as readExports,
  listLogs,
  pendingBackfillRuns,
  saveExport,
  writeLog,
  type BackfillRecord,
  type ExportRecord,
  type LogRecord,
  type RunRecord,
} from '../db/batch-exports.ts';
import { getOrganizationWithProjects } from '../db/organizations.ts';
import { config as serviceConfig } from '../config.ts';
import { Conflict, NotFound, textOf, ValidationError } from '../errors.ts';
import { DESTINATION_TYPES, destinationConfig, type DestinationType } from '../exports/destination-rules.ts';
import { sealSecrets } from '../exports/secrets.ts';
import { parseExportQuery } from '../exports/hogql.ts';
import { firstWindowEnd, floorBoundary, intervalMs, windowCount, type ExportInterval } from '../exports/intervals.ts';
import { uuidv7 } from '../ids.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { parseProperties } from '../trends/properties.ts';
import { BACKFILL_REQUEST_PAGE, expandBackfill } from './export-runs.ts';
import { logger } from '../observability.ts';
import type { MembershipRecord } from '../db/organizations.ts';

export interface ExportInput {
  name?: string;
  model?: 'events' | 'persons';
  destination?: { type?: unknown; config?: unknown };
  interval?: ExportInterval;
  paused?: boolean;
  start_at?: string | null;
  end_at?: string | null;
  hogql_query?: string | null;
  filters?: unknown[] | null;
  team_id?: number;
}

const SECRETS = ['aws_access_key_id', 'aws_secret_access_key'];

export function runResponse(r: RunRecord) {
  return {
    id: r.id,
    status: r.status,
    records_completed: r.records_completed,
    records_total_count: r.records_total_count,
    bytes_exported: r.bytes_exported,
    latest_error: r.latest_error,
    data_interval_start: r.data_interval_start,
    data_interval_end: r.data_interval_end,
    cursor: r.cursor,
    created_at: r.created_at,
    finished_at: r.finished_at,
    last_updated_at: r.last_updated_at,
    batch_export: r.batch_export,
    backfill: r.backfill_id,
  };
}

/** The spec's BatchExport (§2.3). Destination secrets never leave the service. */
export function exportResponse(e: ExportRecord, runs: RunRecord[]) {
  const config = Object.fromEntries(Object.entries(e.destination.config).filter(([k]) => !SECRETS.includes(k)));
  return {
    id: e.id,
    team_id: e.team_id,
    name: e.name,
    model: e.model,
    destination: { type: e.destination.type, config },
    interval: e.interval,
    paused: e.paused,
    created_at: e.created_at,
    last_updated_at: e.last_updated_at,
    last_paused_at: e.last_paused_at,
    start_at: e.start_at,
    end_at: e.end_at,
    latest_runs: runs.map(runResponse),
    hogql_query: e.hogql_query,
    schema: e.hogql_query
      ? {
          fields: parseExportQuery(e.hogql_query).map((f) => ({ expression: f.expression, alias: f.alias })),
          hogql_query: e.hogql_query,
        }
      : null,
    filters: e.filters,
  };
}

function s3Config(type: DestinationType, raw: unknown, partial: boolean): Record<string, unknown> {
  return destinationConfig(type, raw, { partial, allowLoopback: serviceConfig().allowLoopbackExportEndpoints });
}

type AccessKeys = { aws_access_key_id: string; aws_secret_access_key: string };

/**
 * The validated destination without its secrets, and what becomes of the access keys: new ones to
 * seal, null to drop them, undefined to keep the sealed ones (a PATCH that does not name them).
 */
export function destination(
  raw: ExportInput['destination'],
  current?: ExportRecord['destination'],
): { type: DestinationType; config: Record<string, unknown>; keys: AccessKeys | null | undefined } {
  if (!raw) {
    if (current) return { type: current.type, config: current.config, keys: undefined };
    throw new ValidationError('This field is required.', 'destination', 'required');
  }
  const type = (raw.type ?? current?.type) as DestinationType;
  if (!DESTINATION_TYPES.includes(type))
    throw new ValidationError(
      `"${textOf(type)}" is not a supported destination type: ${DESTINATION_TYPES.join(', ')}.`,
      'destination__type',
      'invalid_choice',
    );
  if (current && current.type !== type)
    throw new ValidationError('The destination type cannot be changed.', 'destination__type');
  // PATCH merges the config (secrets stay unless given again), then the result must be complete.
  const given = current ? s3Config(type, raw.config ?? {}, true) : s3Config(type, raw.config, false);
  const merged = s3Config(type, current ? { ...current.config, ...given } : given, false);
  const { aws_access_key_id: id, aws_secret_access_key: secret, ...config } = merged;
  if ((id === undefined) !== (secret === undefined) || (id === null) !== (secret === null)) {
    throw new ValidationError(
      'aws_access_key_id and aws_secret_access_key go together.',
      'destination__config__aws_secret_access_key',
    );
  }
  const keys =
    id == null
      ? id === null
        ? null
        : current
          ? undefined
          : null
      : { aws_access_key_id: String(id), aws_secret_access_key: String(secret) };
  const hasKeys = keys ? true : keys === null ? false : Boolean(current?.sealed_secrets);
  const hasRole = config.role_arn != null && config.role_arn !== '';
  if (!hasKeys && !hasRole) {
    throw new ValidationError(
      'An S3 destination needs credentials of its own: aws_access_key_id and aws_secret_access_key, or role_arn (a role the exporter assumes with your organization id as ExternalId).',
      'destination__config',
    );
  }
  if (hasKeys && hasRole)
    throw new ValidationError(
      'Give either access keys or role_arn, not both (set the one you drop to null).',
      'destination__config',
    );
  return { type, config, keys };
}

/**
 * The destination as stored: config without secrets, access keys sealed to this export (or kept as
 * they were). A record from before sealing has its keys in config: any PATCH of its destination seals them.
 */
async function storedDestination(
  dest: ReturnType<typeof destination>,
  record: { organization_id: string; id: string },
  current?: ExportRecord['destination'],
): Promise<ExportRecord['destination']> {
  const context = { organization_id: record.organization_id, batch_export_id: record.id };
  const sealed = dest.keys
    ? await sealSecrets(dest.keys, context)
    : dest.keys === null
      ? null
      : (current?.sealed_secrets ?? null);
  return { type: dest.type, config: dest.config, sealed_secrets: sealed };
}

function checkWindow(startAt: string | null, endAt: string | null): void {
  if (startAt && endAt && Date.parse(endAt) <= Date.parse(startAt))
    throw new ValidationError('end_at must be after start_at.', 'end_at');
}

function checkQuery(model: string, hogql: string | null | undefined, filters: unknown[] | null | undefined): void {
  if (hogql) {
    if (model !== 'events')
      throw new ValidationError('hogql_query is only supported for the events model.', 'hogql_query');
    parseExportQuery(hogql);
  }
  if (filters) parseProperties(filters, 'filters');
}

async function projectOf(membership: MembershipRecord, teamId: number | undefined): Promise<number> {
  const found = await getOrganizationWithProjects(membership.organization_id);
  const projects = found?.projects ?? [];
  if (teamId === undefined) {
    const first = projects[0];
    if (!first) throw new ValidationError('This organization has no project to export from.', 'team_id');
    return first.id;
  }
  if (!projects.some((p) => p.id === teamId))
    throw new ValidationError(`Project ${teamId} is not part of this organization.`, 'team_id', 'does_not_exist');
  return teamId;
}

async function log(
  exportId: string,
  level: LogRecord['level'],
  message: string,
  runId: string | null = null,
): Promise<void> {
  await writeLog(exportId, { id: uuidv7(), timestamp: nowIso(), level, message, run_id: runId });
}

export async function createExport(
  membership: MembershipRecord,
  input: ExportInput & { name: string; interval: ExportInterval },
) {
  const model = input.model ?? 'events';
  checkWindow(input.start_at ?? null, input.end_at ?? null);
  checkQuery(model, input.hogql_query, input.filters);
  const dest = destination(input.destination);
  const teamId = await projectOf(membership, input.team_id);
  const at = nowIso();
  const id = uuidv7();
  const record: ExportRecord = {
    id,
    organization_id: membership.organization_id,
    team_id: teamId,
    name: input.name,
    model,
    destination: await storedDestination(dest, { organization_id: membership.organization_id, id }),
    interval: input.interval,
    paused: input.paused ?? false,
    created_at: at,
    last_updated_at: at,
    last_paused_at: input.paused ? at : null,
    start_at: input.start_at ?? null,
    end_at: input.end_at ?? null,
    hogql_query: input.hogql_query ?? null,
    filters: input.filters ?? null,
    next_window_end: firstWindowEnd(
      clockNow(),
      input.interval,
      input.start_at ? new Date(input.start_at) : undefined,
    ).toISOString(),
    consecutive_failures: 0,
    version: 1,
  };
  await saveExport(record);
  await log(
    record.id,
    'INFO',
    `Batch export created: ${record.interval} export of ${record.model} to S3 bucket ${String(dest.config.bucket_name)}.`,
  );
  return exportResponse(record, []);
}

export async function findExport(membership: MembershipRecord, exportId: string): Promise<ExportRecord> {
  const record = /^[0-9a-f-]{36}$/i.test(exportId)
    ? await getExport(membership.organization_id, exportId.toLowerCase())
    : undefined;
  if (!record) throw new NotFound();
  return record;
}

export async function retrieveExport(membership: MembershipRecord, exportId: string) {
  const record = await findExport(membership, exportId);
  return exportResponse(record, await latestRuns(record.id));
}

export async function listExports(membership: MembershipRecord, page: { limit: number; offset: number }) {
  const all = await readExports(membership.organization_id);
  const slice = all.slice(page.offset, page.offset + page.limit);
  const results = await Promise.all(slice.map(async (e) => exportResponse(e, await latestRuns(e.id))));
  return { count: all.length, results };
}

const UPDATE_ATTEMPTS = 5;

export async function updateExport(membership: MembershipRecord, exportId: string, input: ExportInput) {
  return retryTransient(
    `Batch export ${exportId}`,
    async () => {
      const current = await findExport(membership, exportId);
      const next: ExportRecord = { ...current, version: current.version + 1, last_updated_at: nowIso() };
      if (input.name !== undefined) next.name = input.name;
      if (input.model !== undefined) next.model = input.model;
      if (input.destination !== undefined)
        next.destination = await storedDestination(
          destination(input.destination, current.destination),
          current,
          current.destination,
        );
      if (input.start_at !== undefined) next.start_at = input.start_at;
      if (input.end_at !== undefined) next.end_at = input.end_at;
      if (input.hogql_query !== undefined) next.hogql_query = input.hogql_query;
      if (input.filters !== undefined) next.filters = input.filters;
      if (input.team_id !== undefined) next.team_id = await projectOf(membership, input.team_id);
      checkWindow(next.start_at, next.end_at);
      checkQuery(next.model, next.hogql_query, next.filters);
      const messages: string[] = [];
      const now = clockNow();
      if (input.paused === true && !current.paused) {
        next.paused = true;
        next.last_paused_at = next.last_updated_at;
        messages.push('Batch export paused.');
      }
      // Unpausing resumes at the next interval: the paused period is not exported unless backfilled.
      const resumes = input.paused === false && current.paused;
      if (resumes) {
        next.paused = false;
        next.consecutive_failures = 0;
        messages.push(
          'Batch export unpaused; runs resume from the next interval (backfill to export the paused period).',
        );
      }
      if (input.interval !== undefined) next.interval = input.interval;
      if (resumes || input.interval !== undefined || input.start_at !== undefined) {
        next.next_window_end = firstWindowEnd(
          now,
          next.interval as ExportInterval,
          next.start_at ? new Date(next.start_at) : undefined,
        ).toISOString();
      }
      if (!(await saveExport(next, current.version))) return TRANSIENT;
      for (const m of messages) await log(next.id, 'INFO', m);
      return exportResponse(next, await latestRuns(next.id));
    },
    {
      attempts: UPDATE_ATTEMPTS,
      gaveUp: () => new Conflict(`Batch export ${exportId} kept changing during the update; retry it.`),
    },
  );
}

export async function deleteExport(membership: MembershipRecord, exportId: string): Promise<void> {
  await removeExport(await findExport(membership, exportId));
}

const MAX_BACKFILL_RUNS = 10_000;
/**
 * Backfill runs one export may have queued and not yet settled: one full backfill's worth. A client
 * that repeats or splits backfills cannot queue more work than one request could.
 */
export const MAX_PENDING_BACKFILL_RUNS = 10_000;
/** No analytics data predates it; a far-past start only queues empty windows (and weeks back to 1834 fit the cap). */
const EARLIEST_BACKFILL_START = '2000-01-01T00:00:00.000Z';
const BACKFILL_NOTE =
  'Files of intervals already exported are overwritten in place (each window has one object key): no duplicate rows.';

function backfillResponse(record: ExportRecord, b: BackfillRecord) {
  return {
    backfill_id: b.id,
    runs: b.total_runs,
    interval_seconds: intervalMs(record.interval as ExportInterval) / 1000,
    note: BACKFILL_NOTE,
  };
}

/**
 * One run per interval in [start_at, end_at), queued for the scheduler. Objects are keyed by their
 * window, so a backfill over windows already exported replaces those files instead of duplicating them.
 * The request stores one backfill item and writes the first page of runs; the scheduler writes the
 * rest. The same range again while it is pending answers the same backfill and queues nothing.
 */
export async function backfillExport(
  membership: MembershipRecord,
  exportId: string,
  input: { start_at: string; end_at: string },
) {
  const record = await findExport(membership, exportId);
  const start = new Date(input.start_at);
  const end = new Date(input.end_at);
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
  const interval = record.interval as ExportInterval;
  // Counted before anything is built: a range of millions of windows costs nothing to refuse.
  const count = windowCount(start, end, interval);
  if (count > MAX_BACKFILL_RUNS) {
    throw new ValidationError(
      `A backfill may cover at most ${MAX_BACKFILL_RUNS} intervals; this one covers ${count}.`,
      'start_at',
    );
  }
  const range = `${start.toISOString()}#${end.toISOString()}`;
  const pending = (b: BackfillRecord | undefined) => b !== undefined && b.settled_runs < b.total_runs;
  const existing = await getBackfill(record.id, range);
  if (existing && pending(existing)) return backfillResponse(record, existing);
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
  };
  const outcome = await retryTransient('The backfill', async () => {
    const o = await createBackfill(backfill, MAX_PENDING_BACKFILL_RUNS);
    return o === 'conflict' ? TRANSIENT : o;
  });
  if (outcome === 'exists') {
    // The same range was requested at the same moment: that request's backfill is this one's answer.
    const winner = await getBackfill(record.id, range);
    if (winner) return backfillResponse(record, winner);
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
      'INFO',
      `Backfill ${backfill.id} queued ${count} run(s) from ${backfill.next_window_start} to ${backfill.end_at}. ${BACKFILL_NOTE}`,
    );
  } catch (error) {
    logger.warn('backfill stored; its first page is left to the scheduler', {
      batch_export_id: record.id,
      backfill_id: backfill.id,
      error: String(error),
    });
  }
  return backfillResponse(record, backfill);
}

export async function exportLogs(
  membership: MembershipRecord,
  exportId: string,
  filter: { levels?: string[]; run_id?: string },
) {
  const record = await findExport(membership, exportId);
  const entries = await listLogs(record.id, clockNow());
  return entries
    .filter((e) => !filter.levels || filter.levels.includes(e.level))
    .filter((e) => !filter.run_id || e.run_id === filter.run_id)
    .map((e) => ({ timestamp: e.timestamp, level: e.level, message: e.message, run_id: e.run_id }));
}
