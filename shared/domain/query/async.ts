import { randomUUID } from 'node:crypto';
import { now as clockNow } from '../../clock.ts';
import {
  cancelQueryRun,
  finishQueryRun,
  getQueryStatus,
  loadQueryResult,
  putQueryStatus,
  type QueryStatusRecord,
} from '../../db/query-store.ts';
import { NotFound } from '../../errors.ts';
import { uuidv7 } from '../../ids.ts';
import { queueQueryRun } from '../../queues/query-runs.ts';
import type { MembershipRecord } from '../../db/organizations.ts';
import { answersGeneration } from '../../db/projects.ts';
import type { Caller } from '../access.ts';
import { requireQueryKindScope } from './kinds.ts';

/**
 * A query's status (and its answer, once complete) is kept this long after it started or finished:
 * longer than PostHog's 10 minutes, since a query may wait in the queue and run up to the worker's 15.
 */
export const QUERY_STATUS_TTL_SECONDS = 3_600;

/** PostHog's QueryStatus, as POST /query (async) and GET /query/:id answer it. */
export interface QueryStatusView {
  id: string;
  team_id: number;
  complete: boolean;
  error: boolean;
  error_message: string | null;
  query_async: true;
  start_time: string;
  pickup_time: string | null;
  end_time: string | null;
  expiration_time: string | null;
  /** The whole answer (results and envelope) once complete without error. */
  results: unknown;
  task_id: null;
  insight_id: null;
  dashboard_id: null;
  labels: null;
  query_progress: null;
}

export function statusView(record: QueryStatusRecord, results: unknown = null): QueryStatusView {
  return {
    id: record.id,
    team_id: record.team_id,
    complete: record.complete,
    error: record.error,
    error_message: record.error_message,
    query_async: true,
    start_time: record.start_time,
    pickup_time: record.pickup_time,
    end_time: record.end_time,
    expiration_time: record.expiration_time,
    results,
    task_id: null,
    insight_id: null,
    dashboard_id: null,
    labels: null,
    query_progress: null,
  };
}

/** PostHog's query ids are uuid7 hex (32 characters, no dashes). */
export const newQueryId = () => uuidv7().replaceAll('-', '');

export interface RunRequest {
  membership: MembershipRecord;
  projectId: number;
  queryId: string;
  query: Record<string, unknown>;
  cacheKey: string;
  /** The project's answers generation the run started in: a later bump withholds its result. */
  generation: number;
  timezone: string;
}

/** Starts the query in the background (status, then the queue message): its status, not complete. */
export async function startBackgroundRun(request: RunRequest): Promise<QueryStatusView> {
  const record: QueryStatusRecord = {
    id: request.queryId,
    team_id: request.projectId,
    complete: false,
    error: false,
    error_message: null,
    start_time: clockNow().toISOString(),
    pickup_time: null,
    end_time: null,
    expiration_time: null,
    cancelled: false,
    run_id: randomUUID(),
    query: request.query,
    membership: request.membership,
    cache_key: request.cacheKey,
    generation: request.generation,
    timezone: request.timezone,
  };
  await putQueryStatus(record, QUERY_STATUS_TTL_SECONDS);
  try {
    await queueQueryRun({ project_id: request.projectId, query_id: record.id, run_id: record.run_id });
  } catch (error) {
    // Nobody will run it: say so in its status rather than leave it pending until it expires.
    await finishQueryRun(
      request.projectId,
      record.id,
      record.run_id,
      { error: true, error_message: 'The query could not be started.', end_time: clockNow().toISOString() },
      QUERY_STATUS_TTL_SECONDS,
    );
    throw error;
  }
  return statusView(record);
}

/** A query of this project that the key may see: of another project (or none) a 404, of a kind the key may not run a 403. */
async function visibleQuery(projectId: number, queryId: string, caller: Caller, now: Date): Promise<QueryStatusRecord> {
  const record = await getQueryStatus(projectId, queryId, now);
  if (!record) throw new NotFound();
  requireQueryKindScope(caller, record.query.kind);
  return record;
}

export const RETIRED_MESSAGE =
  'Persons, events or actions this query read were deleted or changed since it started: run the query again.';

/**
 * GET /query/:id: the status, with the answer once complete. An answer computed before the project's
 * answers generation moved on (a person deleted, say) is withheld: it may hold what was deleted.
 */
export async function queryStatus(
  projectId: number,
  queryId: string,
  caller: Caller,
): Promise<{ query_status: QueryStatusView }> {
  const now = clockNow();
  const [record, generation] = await Promise.all([
    visibleQuery(projectId, queryId, caller, now),
    answersGeneration(projectId),
  ]);
  if (record.complete && !record.error && (record.generation ?? 0) !== generation) {
    return { query_status: statusView({ ...record, error: true, error_message: RETIRED_MESSAGE }) };
  }
  const results = record.complete && !record.error ? ((await loadQueryResult(projectId, queryId, now)) ?? null) : null;
  return { query_status: statusView(record, results) };
}

export const CANCELLED_MESSAGE = 'Query cancelled';

/** DELETE /query/:id: a running query is marked cancelled (the worker leaves it so); a finished one stays as it is. */
export async function cancelQuery(projectId: number, queryId: string, caller: Caller): Promise<{ message: string }> {
  const record = await visibleQuery(projectId, queryId, caller, clockNow());
  if (record.complete) return { message: record.cancelled ? CANCELLED_MESSAGE : 'Query already complete' };
  const at = clockNow().toISOString();
  if (await cancelQueryRun(projectId, queryId, at, CANCELLED_MESSAGE)) return { message: CANCELLED_MESSAGE };
  const after = await getQueryStatus(projectId, queryId, clockNow());
  if (!after) throw new NotFound();
  return { message: after.cancelled ? CANCELLED_MESSAGE : 'Query already complete' };
}
