import { nowIso, now as clockNow } from '../clock.ts';
import {
  countExports,
  deleteExport as removeExport,
  getExport,
  latestRuns,
  listExports as readExports,
  listLogs,
  requestUnpark,
  saveExport,
  writeLog,
  type ExportRecord,
  type LogRecord,
  type RunRecord,
} from '../db/batch-exports.ts';
import { getOrganizationWithProjects } from '../db/organizations.ts';
import { exportLoopbackOrigins } from '../config.ts';
import { Conflict, NotFound, textOf, ValidationError } from '../errors.ts';
import { DESTINATION_TYPES, destinationConfig, type DestinationType } from '../exports/destination-rules.ts';
import { sealSecrets } from '../exports/secrets.ts';
import { parseExportQuery } from '../exports/hogql.ts';
import { firstWindowEnd, scheduleOf, type ExportInterval } from '../exports/intervals.ts';
import { isValidTimeZone } from '../trends/tz.ts';
import { uuidv7 } from '../ids.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import type { MembershipRecord } from '../db/organizations.ts';

export interface ExportInput {
  name?: string;
  model?: 'events' | 'persons';
  destination?: { type?: unknown; config?: unknown };
  interval?: ExportInterval;
  paused?: boolean;
  timezone?: string | null;
  offset_day?: number | null;
  offset_hour?: number | null;
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
    records_failed: r.records_failed ?? 0,
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
    timezone: e.timezone ?? 'UTC',
    offset_day: e.offset_day ?? null,
    offset_hour: e.offset_hour ?? null,
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
  return destinationConfig(type, raw, { partial, loopbackOrigins: exportLoopbackOrigins() });
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

/**
 * PostHog's schedule fields: an IANA timezone; offset_hour for daily and weekly exports, offset_day for
 * weekly ones only (refused elsewhere rather than ignored, so a client learns they do nothing there).
 */
function checkSchedule(e: Pick<ExportRecord, 'interval' | 'timezone' | 'offset_day' | 'offset_hour'>): void {
  if (e.timezone && !isValidTimeZone(e.timezone))
    throw new ValidationError(
      `"${e.timezone}" is not a time zone; give an IANA name such as Europe/Berlin.`,
      'timezone',
    );
  if (e.offset_day != null && e.interval !== 'week')
    throw new ValidationError('offset_day only applies to weekly exports.', 'offset_day');
  if (e.offset_hour != null && e.interval !== 'day' && e.interval !== 'week')
    throw new ValidationError('offset_hour only applies to daily and weekly exports.', 'offset_hour');
}

function checkWindow(startAt: string | null, endAt: string | null): void {
  if (startAt && endAt && Date.parse(endAt) <= Date.parse(startAt))
    throw new ValidationError('end_at must be after start_at.', 'end_at');
}

/**
 * Checks an export's property filters: `checkExportFilters` (export-filters.ts, the trend engine's grammar,
 * with its regex compiler and HogQL parser) where a request may set them, `FILTERS_UNCHANGED` where it cannot
 * (pause, unpause: the stored filters were checked when saved), so those functions do not bundle the grammar.
 */
export type FilterCheck = (filters: unknown[]) => void;
export const FILTERS_UNCHANGED: FilterCheck = () => {};

function checkQuery(
  model: string,
  hogql: string | null | undefined,
  filters: unknown[] | null | undefined,
  checkFilters: FilterCheck,
): void {
  if (hogql) {
    if (model !== 'events')
      throw new ValidationError('hogql_query is only supported for the events model.', 'hogql_query');
    parseExportQuery(hogql);
  }
  if (filters) checkFilters(filters);
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

/** Every list, delete and cleanup of an organization's exports reads them all: this many at most. */
export const MAX_EXPORTS_PER_ORGANIZATION = 1_000;

export async function createExport(
  membership: MembershipRecord,
  input: ExportInput & { name: string; interval: ExportInterval },
  checkFilters: FilterCheck,
) {
  const model = input.model ?? 'events';
  if ((await countExports(membership.organization_id, MAX_EXPORTS_PER_ORGANIZATION)) >= MAX_EXPORTS_PER_ORGANIZATION)
    throw new ValidationError(
      `An organization may have at most ${MAX_EXPORTS_PER_ORGANIZATION} batch exports; delete one to create another.`,
      null,
    );
  checkWindow(input.start_at ?? null, input.end_at ?? null);
  checkQuery(model, input.hogql_query, input.filters, checkFilters);
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
    timezone: input.timezone ?? 'UTC',
    offset_day: input.offset_day ?? null,
    offset_hour: input.offset_hour ?? null,
    paused: input.paused ?? false,
    created_at: at,
    last_updated_at: at,
    last_paused_at: input.paused ? at : null,
    start_at: input.start_at ?? null,
    end_at: input.end_at ?? null,
    hogql_query: input.hogql_query ?? null,
    filters: input.filters ?? null,
    next_window_end: null,
    consecutive_failures: 0,
    version: 1,
  };
  checkSchedule(record);
  record.next_window_end = firstWindowEnd(
    clockNow(),
    scheduleOf(record),
    input.start_at ? new Date(input.start_at) : undefined,
  ).toISOString();
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

export async function updateExport(
  membership: MembershipRecord,
  exportId: string,
  input: ExportInput,
  checkFilters: FilterCheck,
) {
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
      checkQuery(next.model, next.hogql_query, next.filters, checkFilters);
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
      if (input.timezone !== undefined) next.timezone = input.timezone ?? 'UTC';
      if (input.offset_day !== undefined) next.offset_day = input.offset_day;
      if (input.offset_hour !== undefined) next.offset_hour = input.offset_hour;
      checkSchedule(next);
      const rescheduled = [input.interval, input.timezone, input.offset_day, input.offset_hour, input.start_at];
      if (resumes || rescheduled.some((x) => x !== undefined)) {
        next.next_window_end = firstWindowEnd(
          now,
          scheduleOf(next),
          next.start_at ? new Date(next.start_at) : undefined,
        ).toISOString();
      }
      if (!(await saveExport(next, current.version))) return TRANSIENT;
      if (resumes) await requestUnpark(next, now.toISOString());
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

/** What a logs request narrows to (PostHog's log entry filters). */
export interface LogFilter {
  levels?: string[];
  run_id?: string;
  /** Case-insensitive substring of the message. */
  search?: string;
  /** ISO instants, exclusive. */
  after?: string;
  before?: string;
}

export async function exportLogs(membership: MembershipRecord, exportId: string, filter: LogFilter) {
  return logsOf(await findExport(membership, exportId), filter);
}

/**
 * The export's log entries that match, newest first, as PostHog lists them. `complete` is false when the
 * window of time held more entries than one request reads (LOG_READ_BUDGET): then `entries` are the
 * matches among the newest that many, and `before` reaches further back.
 */
export async function logsOf(record: ExportRecord, filter: LogFilter) {
  const instant = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
  const { entries, complete } = await listLogs(record.id, clockNow(), {
    after: instant(filter.after),
    before: instant(filter.before),
  });
  const needle = filter.search?.toLowerCase();
  const matches = entries
    .filter((e) => !filter.levels || filter.levels.includes(e.level))
    .filter((e) => !filter.run_id || e.run_id === filter.run_id)
    .filter((e) => !needle || e.message.toLowerCase().includes(needle))
    .map((e) => ({
      log_source_id: record.id,
      instance_id: e.run_id,
      timestamp: e.timestamp,
      level: e.level,
      message: e.message,
      run_id: e.run_id,
    }));
  return { entries: matches, complete };
}
