import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { nowIso } from '../clock.ts';
import { batchDelete, batchGet, batchPut } from './batch.ts';
import { dueKeys, queryAll, queryIndex } from './query.ts';
import { call, db, conditional, tableName, transact } from './client.ts';
import { keys } from './keys.ts';
import { TABLE_SCHEMA } from './table-schema.ts';
import type { SealedSecrets } from '../exports/secrets.ts';

export interface ExportRecord {
  id: string;
  organization_id: string;
  team_id: number;
  name: string;
  model: 'events' | 'persons';
  /** `config` holds no secret: access keys are in `sealed_secrets` (envelope-encrypted, shared/exports/secrets.ts). */
  destination: {
    type: 'S3' | 'AwsS3' | 'S3Compatible';
    config: Record<string, unknown>;
    sealed_secrets?: SealedSecrets | null;
  };
  interval: string;
  /** IANA zone of day and week boundaries (absent on older items: UTC). */
  timezone?: string;
  /** Weekly exports: the day windows start on, 0 = Sunday (null: 0). */
  offset_day?: number | null;
  /** Daily and weekly exports: the hour windows start at, on the zone's clock (null: 0). */
  offset_hour?: number | null;
  paused: boolean;
  created_at: string;
  last_updated_at: string;
  last_paused_at: string | null;
  start_at: string | null;
  end_at: string | null;
  hogql_query: string | null;
  filters: unknown[] | null;
  /** End of the next window the scheduler will run (null when there is none left). */
  next_window_end: string | null;
  consecutive_failures: number;
  version: number;
}

export type RunStatus = 'Starting' | 'Running' | 'Completed' | 'Failed' | 'FailedRetryable' | 'Cancelled';

export interface RunRecord {
  id: string;
  batch_export: string;
  organization_id: string;
  status: RunStatus;
  records_completed: number;
  records_total_count: number;
  /** Records read for the window that did not reach the destination (its last attempt failed); absent on older items. */
  records_failed?: number;
  bytes_exported: number;
  latest_error: string | null;
  data_interval_start: string;
  data_interval_end: string;
  cursor: string | null;
  created_at: string;
  finished_at: string | null;
  last_updated_at: string;
  attempts: number;
  /** When a Starting / FailedRetryable run is (re)tried; null once settled. */
  next_attempt_at: string | null;
  backfill_id: string | null;
  /** While Running: by when the attempt's invocation has surely ended; the run is due again from then (absent on older items). */
  lease_until?: string | null;
  /** The range of the backfill that queued it (its item's key), so settling the run counts it there. */
  backfill_range?: string | null;
  /** Queued while its export is paused: kept out of the scheduler's queue until the export is unpaused. */
  parked?: boolean;
}

/**
 * One backfill request: its windows become runs in pages (the request writes the first, the
 * scheduler the rest), so a request for 10,000 windows answers as fast as one for a few.
 */
export interface BackfillRecord {
  id: string;
  batch_export: string;
  organization_id: string;
  start_at: string;
  end_at: string;
  /** `<start_at>#<end_at>`: the item's key. */
  range: string;
  total_runs: number;
  /** Start of the next window to turn into a run; null once every window has its run. */
  next_window_start: string | null;
  /** Runs that reached Completed, Failed or Cancelled (and, once cancelled, windows never written): pending until this reaches total_runs. */
  settled_runs: number;
  created_at: string;
  /** Where its first window starts (start_at floored to the interval, or the project's first event when start_at was omitted). */
  adjusted_start_at?: string | null;
  /** Settled runs that ended Failed (absent on older items: 0). */
  failed_runs?: number;
  /** Records its runs exported (absent on older items: 0). */
  records_exported?: number;
  /** When its last run settled: its finished_at once every run has. */
  last_settled_at?: string | null;
  cancelled_at?: string | null;
  /** next_window_start when it was cancelled: windows from here on were settled by the cancel itself. */
  cancelled_from?: string | null;
}

export interface LogRecord {
  id: string;
  timestamp: string;
  level: 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';
  message: string;
  run_id: string | null;
}

const LOG_RETENTION_SECONDS = 30 * 86_400;

/** The export is due in the scheduler's index while active: not paused and a window left before end_at. */
function exportItem(e: ExportRecord) {
  const active = !e.paused && e.next_window_end !== null && (!e.end_at || e.next_window_end <= e.end_at);
  return {
    ...keys.batchExport(e.organization_id, e.id),
    ...(active ? keys.exportDue(e.next_window_end!, e.id) : {}),
    entity: 'BatchExport',
    ...e,
    destination: JSON.stringify(e.destination),
    filters: e.filters === null ? null : JSON.stringify(e.filters),
  };
}

function exportFromItem(item: Record<string, unknown>): ExportRecord {
  const { pk: _pk, sk: _sk, due_pk: _dp, due_sk: _ds, entity: _e, ...rest } = item;
  return {
    ...(rest as unknown as ExportRecord),
    destination: JSON.parse(String(item.destination)),
    filters: item.filters ? (JSON.parse(String(item.filters)) as unknown[]) : null,
  };
}

/** When the scheduler must look at a run: a Starting / FailedRetryable one at its next attempt, a Running one when its lease runs out. */
function dueAt(r: RunRecord): string | null {
  if (r.status === 'Running') return r.lease_until ?? null;
  return r.status === 'Starting' || r.status === 'FailedRetryable' ? r.next_attempt_at : null;
}

function runItem(r: RunRecord) {
  const at = dueAt(r);
  return {
    ...keys.exportRun(r.batch_export, r.id),
    ...(at
      ? r.parked
        ? keys.runParked(r.batch_export, r.data_interval_start, r.id)
        : keys.runDue(r.organization_id, at, r.id)
      : {}),
    ...keys.exportRunByWindow(r.batch_export, r.data_interval_start, r.id),
    entity: 'BatchExportRun',
    ...r,
  };
}

function runFromItem(item: Record<string, unknown>): RunRecord {
  const { pk: _pk, sk: _sk, due_pk: _dp, due_sk: _ds, parent_pk: _pp, parent_sk: _ps, entity: _e, ...rest } = item;
  return rest as unknown as RunRecord;
}

function backfillItem(b: BackfillRecord, teamId: number) {
  return {
    ...keys.exportBackfill(b.batch_export, b.range),
    ...(b.next_window_start !== null ? keys.backfillDue(b.created_at, b.batch_export, b.id) : {}),
    ...keys.backfillInFlight(teamId, b.created_at, b.id),
    entity: 'ExportBackfill',
    ...b,
  };
}

function backfillFromItem(item: Record<string, unknown>): BackfillRecord {
  const { pk: _pk, sk: _sk, due_pk: _dp, due_sk: _ds, parent_pk: _pp, parent_sk: _ps, entity: _e, ...rest } = item;
  return rest as unknown as BackfillRecord;
}

export async function getBackfill(exportId: string, range: string): Promise<BackfillRecord | undefined> {
  const out = await call(() =>
    db().send(
      new GetCommand({ TableName: tableName(), Key: keys.exportBackfill(exportId, range), ConsistentRead: true }),
    ),
  );
  return out.Item ? backfillFromItem(out.Item) : undefined;
}

/**
 * Stores a backfill and adds its runs to the export's pending count, in one transaction: 'exists' when
 * the same range is still pending (a settled one is replaced), 'full' when the count would pass `cap`.
 */
export async function createBackfill(
  b: BackfillRecord,
  teamId: number,
  cap: number,
): Promise<'created' | 'exists' | 'full' | 'conflict'> {
  const outcome = await transact([
    {
      name: 'backfill',
      Put: {
        TableName: tableName(),
        Item: backfillItem(b, teamId),
        ConditionExpression: 'attribute_not_exists(pk) OR settled_runs >= total_runs',
      },
    },
    {
      name: 'ledger',
      Update: {
        TableName: tableName(),
        Key: keys.exportBackfillLedger(b.batch_export),
        UpdateExpression: 'SET entity = :e ADD pending_runs :n',
        ConditionExpression: 'attribute_not_exists(pending_runs) OR pending_runs <= :room',
        ExpressionAttributeValues: { ':e': 'ExportBackfills', ':n': b.total_runs, ':room': cap - b.total_runs },
      },
    },
  ]);
  if (outcome.committed) return 'created';
  if ('conflict' in outcome) return 'conflict';
  return outcome.failed.includes('backfill') ? 'exists' : 'full';
}

/** The export's backfill runs not yet settled. */
export async function pendingBackfillRuns(exportId: string): Promise<number> {
  const out = await call(() =>
    db().send(
      new GetCommand({ TableName: tableName(), Key: keys.exportBackfillLedger(exportId), ConsistentRead: true }),
    ),
  );
  return Number(out.Item?.pending_runs ?? 0);
}

/**
 * Moves a backfill's cursor past the page whose runs were just written, if no one moved it since it
 * was read (an overlapping tick); its due entry goes once every window has its run.
 */
export async function advanceBackfill(b: BackfillRecord, next: string | null): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.exportBackfill(b.batch_export, b.range),
          UpdateExpression: `SET next_window_start = :next${next === null ? ' REMOVE due_pk, due_sk' : ''}`,
          ConditionExpression: 'id = :id AND next_window_start = :seen',
          ExpressionAttributeValues: { ':id': b.id, ':seen': b.next_window_start, ':next': next },
        }),
      ),
    )) !== undefined
  );
}

/** Counts a settled run on its backfill and frees its place under the cap, both or neither; false on a lost race. */
export async function settleBackfillRun(r: RunRecord, at: string = nowIso()): Promise<'settled' | 'gone' | 'conflict'> {
  if (!r.backfill_id || !r.backfill_range) return 'gone';
  const outcome = await transact([
    {
      name: 'backfill',
      Update: {
        TableName: tableName(),
        Key: keys.exportBackfill(r.batch_export, r.backfill_range),
        UpdateExpression:
          'SET last_settled_at = :at ADD settled_runs :one, failed_runs :failed, records_exported :records',
        ConditionExpression: 'id = :id',
        ExpressionAttributeValues: {
          ':id': r.backfill_id,
          ':one': 1,
          ':at': at,
          ':failed': r.status === 'Failed' ? 1 : 0,
          ':records': r.status === 'Completed' ? r.records_completed : 0,
        },
      },
    },
    {
      name: 'ledger',
      Update: {
        TableName: tableName(),
        Key: keys.exportBackfillLedger(r.batch_export),
        UpdateExpression: 'ADD pending_runs :minus',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':minus': -1 },
      },
    },
  ]);
  if (outcome.committed) return 'settled';
  return 'conflict' in outcome ? 'conflict' : 'gone';
}

/** Every backfill of an export, in the order of their ranges (start_at, then end_at): MAX_BACKFILLS_KEPT, give or take a race. */
export async function listBackfills(exportId: string): Promise<BackfillRecord[]> {
  return (await queryAll(keys.batchExportPartition(exportId).pk, keys.exportBackfillPrefix)).map(backfillFromItem);
}

/** Removes backfills (finished ones, to keep an export's list within its cap). */
export async function deleteBackfills(backfills: readonly BackfillRecord[]): Promise<void> {
  await batchDelete(backfills.map((b) => keys.exportBackfill(b.batch_export, b.range)));
}

/**
 * The project's backfills that were in flight when last looked at (their byParent entries; the index
 * may lag a settle by a moment). Few: an entry is written only while the project is under its cap,
 * and `forgetInFlight` removes the settled ones each time they are counted.
 */
export async function backfillsMaybeInFlight(teamId: number): Promise<BackfillRecord[]> {
  const entry = keys.backfillInFlight(teamId, '', '');
  return (await queryIndex(TABLE_SCHEMA.indexes.byParent, entry.parent_pk)).map(backfillFromItem);
}

/** Drops a settled backfill's in-flight entry (only if it is still settled: never a pending one's). */
export async function forgetInFlight(b: BackfillRecord): Promise<void> {
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.exportBackfill(b.batch_export, b.range),
        UpdateExpression: 'REMOVE parent_pk, parent_sk',
        ConditionExpression: 'id = :id AND (settled_runs >= total_runs OR attribute_type(cancelled_at, :s))',
        ExpressionAttributeValues: { ':id': b.id, ':s': 'S' },
      }),
    ),
  );
}

/**
 * Cancels a backfill not yet cancelled, if its cursor is still as read: no more runs are written, and the
 * windows not yet written count as settled at once (on the item and off the export's pending count).
 */
export async function cancelBackfillItem(b: BackfillRecord, unwritten: number, at: string): Promise<boolean> {
  const outcome = await transact([
    {
      name: 'backfill',
      Update: {
        TableName: tableName(),
        Key: keys.exportBackfill(b.batch_export, b.range),
        UpdateExpression:
          'SET cancelled_at = :at, cancelled_from = :seen, next_window_start = :null, last_settled_at = :at ADD settled_runs :n REMOVE due_pk, due_sk',
        ConditionExpression: `id = :id AND (attribute_not_exists(cancelled_at) OR attribute_type(cancelled_at, :nul)) AND ${
          b.next_window_start === null ? 'attribute_type(next_window_start, :nul)' : 'next_window_start = :seen'
        }`,
        ExpressionAttributeValues: {
          ':id': b.id,
          ':at': at,
          ':seen': b.next_window_start,
          ':null': null,
          ':nul': 'NULL',
          ':n': unwritten,
        },
      },
    },
    ...(unwritten
      ? [
          {
            name: 'ledger',
            Update: {
              TableName: tableName(),
              Key: keys.exportBackfillLedger(b.batch_export),
              UpdateExpression: 'ADD pending_runs :minus',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeValues: { ':minus': -unwritten },
            },
          },
        ]
      : []),
  ]);
  return outcome.committed;
}

/** Backfills with windows still to turn into runs, oldest request first. */
export async function dueBackfills(now: Date, limit: number): Promise<BackfillRecord[]> {
  const keysDue = await dueKeys(keys.backfillDue('', '', '').due_pk, now, limit);
  return (await batchGet(keysDue)).map(backfillFromItem).filter((b) => b.next_window_start !== null);
}

/** Writes the export if it is new (`expectedVersion` undefined) or still at the version read. */
export async function saveExport(e: ExportRecord, expectedVersion?: number): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new PutCommand({
          TableName: tableName(),
          Item: exportItem(e),
          ...(expectedVersion === undefined
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': expectedVersion } }),
        }),
      ),
    )) !== undefined
  );
}

export async function getExport(orgId: string, exportId: string): Promise<ExportRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.batchExport(orgId, exportId), ConsistentRead: true })),
  );
  return out.Item ? exportFromItem(out.Item) : undefined;
}

/** How many exports the organization has, counting no further than `atMost` (keys only). */
export async function countExports(orgId: string, atMost: number): Promise<number> {
  const { pk, skPrefix } = keys.batchExportsOfOrganization(orgId);
  const found = await queryAll(pk, skPrefix, {
    limit: atMost,
    projection: { expression: '#s', names: { '#s': 'sk' } },
  });
  return found.length;
}

/** An organization's exports in creation order (ids are UUID v7). */
export async function listExports(orgId: string): Promise<ExportRecord[]> {
  const { pk, skPrefix } = keys.batchExportsOfOrganization(orgId);
  return (await queryAll(pk, skPrefix)).map(exportFromItem);
}

/** Deletes every export of an organization with its runs, window claims and logs (the organization is gone). */
export async function deleteExportsOfOrganization(orgId: string): Promise<number> {
  const all = await listExports(orgId);
  for (const e of all) await deleteExport(e);
  return all.length;
}

/** Deletes the export, then everything in its partition: runs, window claims, logs. */
export async function deleteExport(e: ExportRecord): Promise<void> {
  await batchDelete([keys.batchExport(e.organization_id, e.id)]);
  const rest = await queryAll(keys.batchExportPartition(e.id).pk, '');
  await batchDelete(rest.map((i) => ({ pk: String(i.pk), sk: String(i.sk) })));
}

export async function saveRun(r: RunRecord): Promise<void> {
  const at = dueAt(r);
  if (at && !r.parked) await queueOrganization(r.organization_id, at);
  await call(() => db().send(new PutCommand({ TableName: tableName(), Item: runItem(r) })));
}

/** New runs in bulk (a backfill's up to 10,000: batched, so the request stays inside the API timeout). */
export async function saveRuns(runs: RunRecord[]): Promise<void> {
  const earliest = new Map<string, string>();
  for (const r of runs) {
    const at = r.parked ? null : dueAt(r);
    if (at && !(earliest.get(r.organization_id)! <= at)) earliest.set(r.organization_id, at);
  }
  for (const [orgId, at] of earliest) await queueOrganization(orgId, at);
  await batchPut(runs.map(runItem));
}

/**
 * Marks the organization as having runs due from `at` (moving its entry earlier, never later), before
 * the runs are written: so a due run always has its organization's entry. `touches` tells
 * `settleOrganizationQueue` that runs were queued since it looked.
 */
async function queueOrganization(orgId: string, at: string): Promise<void> {
  const due = keys.runQueueDue(at, orgId);
  const touch = { ':t': nowIso(), ':one': 1 };
  const moved = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.runQueue(orgId),
        UpdateExpression:
          'SET due_pk = :dp, due_sk = :ds, entity = :e, organization_id = :o, touched_at = :t ADD touches :one',
        ConditionExpression: 'attribute_not_exists(due_sk) OR due_sk > :ds',
        ExpressionAttributeValues: { ':dp': due.due_pk, ':ds': due.due_sk, ':e': 'RunQueue', ':o': orgId, ...touch },
      }),
    ),
  );
  if (moved) return;
  await call(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.runQueue(orgId),
        UpdateExpression: 'SET touched_at = :t ADD touches :one',
        ExpressionAttributeValues: touch,
      }),
    ),
  );
}

/** Organizations with runs due by `now`, the longest waiting first: one entry each, however many runs they queued. */
export async function dueOrganizations(now: Date): Promise<string[]> {
  return (await dueKeys(keys.runQueueDue('', '').due_pk, now)).map((k) => k.pk.slice(keys.runQueuePkPrefix.length));
}

/** At most `limit` of an organization's runs due by `now`, earliest first. */
export async function dueRunsOf(orgId: string, now: Date, limit: number): Promise<RunRecord[]> {
  const keysDue = await dueKeys(keys.runDue(orgId, '', '').due_pk, now, limit);
  const runs = new Map((await batchGet(keysDue)).map((i) => [String(i.sk), runFromItem(i)]));
  return keysDue.flatMap((k) => (runs.has(k.sk) ? [runs.get(k.sk)!] : []));
}

/**
 * After a tick: moves the organization's entry to its earliest run still in the index, or removes it
 * when none is left. Only if no run was queued since the entry was read (`touches`) and not in the
 * last minute (the index is eventually consistent: a run just written may not show yet), so a queued
 * run never loses its entry.
 */
export async function settleOrganizationQueue(orgId: string, now: Date): Promise<void> {
  const key = keys.runQueue(orgId);
  const entry = (
    await call(() => db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true })))
  ).Item;
  if (!entry || String(entry.touched_at) > new Date(now.getTime() - 60_000).toISOString()) return;
  const [next] = await queryIndex(TABLE_SCHEMA.indexes.dueByTime, keys.runDue(orgId, '', '').due_pk, undefined, 1);
  const unchanged = { ConditionExpression: 'touches = :seen', ExpressionAttributeValues: { ':seen': entry.touches } };
  if (!next) {
    await conditional(() => db().send(new DeleteCommand({ TableName: tableName(), Key: key, ...unchanged })));
    return;
  }
  const due = keys.runQueueDue(String(next.due_sk).split('#')[0]!, orgId);
  if (due.due_sk === entry.due_sk) return;
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET due_sk = :ds',
        ...unchanged,
        ExpressionAttributeValues: { ...unchanged.ExpressionAttributeValues, ':ds': due.due_sk },
      }),
    ),
  );
}

/**
 * Starts a run only if it is still as it was read (same status and attempt count, and lease for a
 * Running one): two scheduler ticks that overlap (a tick may outlast the 5-minute rate) cannot both execute it.
 */
export async function claimRun(read: RunRecord, running: RunRecord): Promise<boolean> {
  const leased = read.status === 'Running';
  return (
    (await conditional(() =>
      db().send(
        new PutCommand({
          TableName: tableName(),
          Item: runItem(running),
          ConditionExpression: `#s = :s AND attempts = :a${leased ? ' AND lease_until = :l' : ''}`,
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: {
            ':s': read.status,
            ':a': read.attempts,
            ...(leased ? { ':l': read.lease_until } : {}),
          },
        }),
      ),
    )) !== undefined
  );
}

export async function latestRuns(exportId: string, limit = 10): Promise<RunRecord[]> {
  return (
    await queryAll(keys.batchExportPartition(exportId).pk, keys.exportRunPrefix, { newestFirst: true, limit })
  ).map(runFromItem);
}

/** Claims a scheduled window for a run; false when that window already has one. */
export async function claimWindow(exportId: string, windowStart: string, runId: string): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new PutCommand({
          TableName: tableName(),
          Item: { ...keys.exportWindow(exportId, windowStart), entity: 'ExportWindow', run_id: runId },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    )) !== undefined
  );
}

export async function writeLog(exportId: string, entry: LogRecord): Promise<void> {
  await call(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.exportLog(exportId, entry.timestamp, entry.id),
          entity: 'ExportLog',
          ...entry,
          expires_at: Math.floor(Date.parse(entry.timestamp) / 1000) + LOG_RETENTION_SECONDS,
        },
      }),
    ),
  );
}

/**
 * Log items one request reads at most. A backfill logs at least once per window (up to 10,000 windows
 * each, and several may overlap), so an export can hold millions of entries within 30 days; past this
 * many, `before` and `after` narrow the read to a window of time.
 */
export const LOG_READ_BUDGET = 10_000;

/**
 * Newest first, strictly between `after` and `before` when given: at most LOG_READ_BUDGET items read
 * (`complete` false when the window held more). Entries past their 30 days are hidden even before
 * DynamoDB's TTL removes them.
 */
export async function listLogs(
  exportId: string,
  now: Date,
  window: { after?: string; before?: string } = {},
  budget = LOG_READ_BUDGET,
): Promise<{ entries: LogRecord[]; complete: boolean }> {
  // Sort keys are `LOG#<ISO timestamp>#<id>`: a timestamp bound is a key bound (after: past every id of that instant).
  const from = `${keys.exportLogPrefix}${window.after ? `${window.after}#\uffff` : ''}`;
  const to = `${keys.exportLogPrefix}${window.before ?? '\uffff'}`;
  const items = await queryAll(keys.batchExportPartition(exportId).pk, keys.exportLogPrefix, {
    newestFirst: true,
    range: [from, to],
    limit: budget + 1,
  });
  const entries = items
    .slice(0, budget)
    .filter((i) => Number(i.expires_at) * 1000 > now.getTime())
    .map((i) => ({
      id: String(i.id),
      timestamp: String(i.timestamp),
      level: i.level as LogRecord['level'],
      message: String(i.message),
      run_id: (i.run_id as string | null) ?? null,
    }));
  return { entries, complete: items.length <= budget };
}

/** Asks the scheduler to put the export's parked runs back in the queue (it was unpaused). */
export async function requestUnpark(e: ExportRecord, at: string): Promise<void> {
  await call(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.exportUnpark(e.id),
          ...keys.exportUnparkDue(at, e.id),
          entity: 'ExportUnpark',
          organization_id: e.organization_id,
        },
      }),
    ),
  );
}

export interface UnparkRequest {
  exportId: string;
  organizationId: string;
  dueSk: string;
}

/** Unpaused exports whose parked runs are to go back in the queue, earliest first. */
export async function dueUnparks(now: Date, limit: number): Promise<UnparkRequest[]> {
  const keysDue = await dueKeys(keys.exportUnparkDue('', '').due_pk, now, limit);
  return (await batchGet(keysDue)).map((i) => ({
    exportId: String(i.pk).slice('EXPORT#'.length),
    organizationId: String(i.organization_id),
    dueSk: String(i.due_sk),
  }));
}

/** Up to `limit` of the export's parked runs, in window order. */
export async function parkedRuns(exportId: string, limit: number): Promise<RunRecord[]> {
  const parked = keys.runParked(exportId, '', '');
  const found = await queryIndex(TABLE_SCHEMA.indexes.dueByTime, parked.due_pk, undefined, limit);
  return (await batchGet(found.map((i) => ({ pk: String(i.pk), sk: String(i.sk) })))).map(runFromItem);
}

/** Puts a parked run back in its organization's queue, due at `at`, if it is still parked (false if not). */
export async function unparkRun(r: RunRecord, at: string): Promise<boolean> {
  await queueOrganization(r.organization_id, at);
  const due = keys.runDue(r.organization_id, at, r.id);
  return (
    (await conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.exportRun(r.batch_export, r.id),
          UpdateExpression: 'SET parked = :f, next_attempt_at = :at, due_pk = :dp, due_sk = :ds',
          // Still waiting: a run cancelled while parked keeps its flag but must never come back.
          ConditionExpression: 'parked = :t AND #st IN (:starting, :retry)',
          ExpressionAttributeNames: { '#st': 'status' },
          ExpressionAttributeValues: {
            ':f': false,
            ':t': true,
            ':at': at,
            ':dp': due.due_pk,
            ':ds': due.due_sk,
            ':starting': 'Starting',
            ':retry': 'FailedRetryable',
          },
        }),
      ),
    )) !== undefined
  );
}

/** Done with an unpark request, unless the export was unpaused again since it was read. */
export async function finishUnpark(u: UnparkRequest): Promise<void> {
  await conditional(() =>
    db().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.exportUnpark(u.exportId),
        ConditionExpression: 'due_sk = :seen',
        ExpressionAttributeValues: { ':seen': u.dueSk },
      }),
    ),
  );
}

/** Exports whose next window has closed by `now` (the sparse index: never a scan). */
export async function dueExports(now: Date): Promise<ExportRecord[]> {
  const keysDue = await dueKeys(keys.exportDue('', '').due_pk, now);
  return (await batchGet(keysDue)).map(exportFromItem);
}

export async function getRun(exportId: string, runId: string): Promise<RunRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.exportRun(exportId, runId), ConsistentRead: true })),
  );
  return out.Item ? runFromItem(out.Item) : undefined;
}

export interface RunsPageQuery {
  /** `created`: the runs' own keys (ids are UUID v7); `window`: their byParent entries, by data_interval_start. */
  order: 'created' | 'window';
  descending: boolean;
  /** data_interval_start at or after / before. */
  after?: string;
  before?: string;
  status?: string[];
  /** The sort key the previous page ended at. */
  cursor?: string;
  limit: number;
}

/** Items a page may read before it answers with what it found (and a cursor): a filter matching little costs a bounded read. */
const RUNS_PAGE_READ_BUDGET = 2000;

const RUN_ID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const CREATED_CURSOR = new RegExp(`^${keys.exportRunPrefix}${RUN_ID}$`);
const WINDOW_CURSOR = new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z#${RUN_ID}$`);

/**
 * Whether a cursor (from a client) is a sort key `runsPage` with this query could have returned: a forged
 * one would reach DynamoDB as a start key it refuses (or one outside the page's key range).
 */
export function isRunsCursor(q: Pick<RunsPageQuery, 'order' | 'after' | 'before'>, cursor: string): boolean {
  if (q.order === 'created') return CREATED_CURSOR.test(cursor);
  return WINDOW_CURSOR.test(cursor) && (!q.after || cursor >= q.after) && (!q.before || cursor <= q.before);
}

/** One page of an export's runs; `next` is the sort key to resume after (absent at the end). */
export async function runsPage(exportId: string, q: RunsPageQuery): Promise<{ runs: RunRecord[]; next?: string }> {
  const pk = keys.batchExportPartition(exportId).pk;
  const byWindow = q.order === 'window';
  const parentPk = keys.exportRunByWindow(exportId, '', '').parent_pk;
  // In window order after/before are a key range; in creation order they are kept in memory.
  // Key values cannot be empty: every window start sorts after '0'.
  const low = byWindow ? (q.after ?? '0') : keys.exportRunPrefix;
  const high = byWindow ? (q.before ?? '\uffff') : `${keys.exportRunPrefix}\uffff`;
  const resumeAt = (cursor: string): Record<string, unknown> =>
    byWindow
      ? { parent_pk: parentPk, parent_sk: cursor, pk, sk: keys.exportRun(exportId, cursor.split('#')[1] ?? '').sk }
      : { pk, sk: cursor };
  const found: RunRecord[] = [];
  let start: Record<string, unknown> | undefined = q.cursor ? resumeAt(q.cursor) : undefined;
  let read = 0;
  let lastKey: string | undefined;
  while (found.length < q.limit && read < RUNS_PAGE_READ_BUDGET) {
    const out = await call(() =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          ...(byWindow
            ? {
                IndexName: TABLE_SCHEMA.indexes.byParent.name,
                KeyConditionExpression: 'parent_pk = :pk AND parent_sk BETWEEN :low AND :high',
                ExpressionAttributeValues: { ':pk': parentPk, ':low': low, ':high': high },
              }
            : {
                KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
                ExpressionAttributeValues: { ':pk': pk, ':low': low, ':high': high },
                ConsistentRead: true,
              }),
          ScanIndexForward: !q.descending,
          ExclusiveStartKey: start,
          Limit: Math.min(200, q.limit - found.length),
        }),
      ),
    );
    const items = out.Items ?? [];
    read += items.length;
    for (const [n, i] of items.entries()) {
      const r = runFromItem(i);
      lastKey = String(byWindow ? i.parent_sk : i.sk);
      const kept =
        (!q.status || q.status.includes(r.status)) &&
        (!q.after || r.data_interval_start >= q.after) &&
        (!q.before || r.data_interval_start < q.before);
      if (kept) found.push(r);
      if (found.length === q.limit) {
        const more = n < items.length - 1 || out.LastEvaluatedKey !== undefined;
        return more ? { runs: found, next: lastKey } : { runs: found };
      }
    }
    start = out.LastEvaluatedKey;
    if (!start) return { runs: found };
  }
  return { runs: found, next: lastKey };
}
