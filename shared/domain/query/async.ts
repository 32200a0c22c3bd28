import { randomUUID } from 'node:crypto';
import { now as clockNow } from '../../clock.ts';
import {
  cancelQueryRun,
  finishQueryRun,
  getQueryStatus,
  freeRunSlots,
  getRunning,
  loadQueryResult,
  markRunning,
  putQueryStatus,
  type QueryStatusRecord,
  releaseRun,
  takeRunSlot,
} from '../../db/query-store.ts';
import { Conflict, NotFound, Throttled } from '../../errors.ts';
import { TRANSIENT, retryTransient } from '../../retry.ts';
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
  /** The id is the body's client_query_id (it may name a status already kept), not a new one. */
  clientQueryId: boolean;
  query: Record<string, unknown>;
  cacheKey: string;
  /** The project's answers generation the run started in: a later bump withholds its result. */
  generation: number;
  timezone: string;
}

/**
 * Background runs a project may have started and not finished: PostHog caps a team's concurrent API
 * queries at 3 (posthog/clickhouse/client/limit.py, the API per-team limiter); a start beyond them is
 * a 429. With the worker's own concurrency (functions/routes.ts, run_queries) this keeps one project
 * to a fraction of the worker, so other projects' queries still start at once.
 */
export const QUERY_RUNS_PER_PROJECT = 3;

/** What a 429 asks the client to wait: a typical background run's length, not the longest. */
export const QUERY_RUNS_RETRY_AFTER_SECONDS = 5;

/**
 * How long a run may hold its question's mark and its slot: the worker's 15 minutes plus time in the
 * queue. A run that dies without releasing them (its container lost) frees them after this.
 */
export const RUN_HOLD_SECONDS = 20 * 60;

const pendingRecord = (request: RunRequest, runId: string, startTime: string): QueryStatusRecord => ({
  id: request.queryId,
  team_id: request.projectId,
  complete: false,
  error: false,
  error_message: null,
  start_time: startTime,
  pickup_time: null,
  end_time: null,
  expiration_time: null,
  cancelled: false,
  run_id: runId,
  query: request.query,
  membership: request.membership,
  cache_key: request.cacheKey,
  generation: request.generation,
  timezone: request.timezone,
});

function clientIdTaken(): Conflict {
  return new Conflict(
    'This client_query_id is used by a query another user started; choose another id.',
    'client_query_id',
  );
}

function tooManyRuns(): Throttled {
  return new Throttled(
    QUERY_RUNS_RETRY_AFTER_SECONDS,
    `This project already has ${QUERY_RUNS_PER_PROJECT} queries running in the background, the most it may have at once; retry after ${QUERY_RUNS_RETRY_AFTER_SECONDS} seconds, or wait for one to finish.`,
  );
}

/**
 * Starts the query in the background, or joins the run already in flight for the same question of
 * the project (same `cache_key`): its status, not complete. A joining request answers the running
 * query's id (its own client_query_id is not used), whoever started it: the answer is the same, and
 * it is one run. A new run takes one of the project's QUERY_RUNS_PER_PROJECT slots, else it is a 429.
 * A client_query_id whose live status belongs to another user is a 409; its creator's reuse replaces
 * it (the replaced run is released, and its worker stops at its next check).
 */
export async function startBackgroundRun(request: RunRequest): Promise<QueryStatusView> {
  const { projectId, cacheKey } = request;
  const now = clockNow();
  const nowSeconds = Math.floor(now.getTime() / 1000);
  // A generated id is new; only a client's id may name a status already kept (its owner's, or another user's).
  const previous = request.clientQueryId ? await getQueryStatus(projectId, request.queryId, now) : undefined;
  if (previous && previous.membership.user_id !== request.membership.user_id) throw clientIdTaken();
  const record = pendingRecord(request, randomUUID(), now.toISOString());
  const marker = { query_id: record.id, run_id: record.run_id, start_time: record.start_time };
  // Reads first: joining a run, or being refused for want of a slot, writes nothing.
  const joined = await retryTransient(
    'The running query',
    async () => {
      const running = await getRunning(projectId, cacheKey, now);
      if (running) {
        const status = await getQueryStatus(projectId, running.query_id, now);
        if (!status) return statusView({ ...record, id: running.query_id, start_time: running.start_time });
        if (status.run_id === running.run_id) return statusView(status);
        // Its id was reused for another question: that mark no longer stands for a run of this one.
        await releaseRun(projectId, running.run_id, { cacheKey });
        return TRANSIENT;
      }
      const free = await freeRunSlots(projectId, QUERY_RUNS_PER_PROJECT, nowSeconds);
      if (!free.length) throw tooManyRuns();
      const marked = await markRunning(projectId, cacheKey, marker, nowSeconds + RUN_HOLD_SECONDS, nowSeconds);
      // Marked meanwhile by an identical request: read it again, and join it.
      return marked ? { free } : TRANSIENT;
    },
    { attempts: 3, baseMs: 0 },
  );
  if ('id' in joined) return joined;
  const release = () => releaseRun(projectId, record.run_id, { cacheKey, slot: record.slot });
  record.slot = await takeRunSlot(projectId, joined.free, record.run_id, nowSeconds + RUN_HOLD_SECONDS, nowSeconds);
  if (record.slot === undefined) {
    await release();
    throw tooManyRuns();
  }
  if (!(await putQueryStatus(record, QUERY_STATUS_TTL_SECONDS))) {
    await release();
    throw clientIdTaken();
  }
  if (previous && !previous.complete)
    await releaseRun(projectId, previous.run_id, { cacheKey: previous.cache_key, slot: previous.slot });
  try {
    await queueQueryRun({ project_id: projectId, query_id: record.id, run_id: record.run_id });
  } catch (error) {
    // Nobody will run it: say so in its status rather than leave it pending until it expires.
    await finishQueryRun(
      projectId,
      record.id,
      record.run_id,
      { error: true, error_message: 'The query could not be started.', end_time: clockNow().toISOString() },
      QUERY_STATUS_TTL_SECONDS,
    );
    await release();
    throw error;
  }
  return statusView(record);
}

/** Frees the mark and slot of a run that ended (finished, failed, cancelled or skipped by the worker). */
export async function releaseRunOf(record: Pick<QueryStatusRecord, 'team_id' | 'run_id' | 'cache_key' | 'slot'>) {
  await releaseRun(record.team_id, record.run_id, { cacheKey: record.cache_key, slot: record.slot });
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
  const cancelled = await cancelQueryRun(projectId, queryId, at, CANCELLED_MESSAGE);
  if (cancelled) {
    // Its slot and question are free at once; the worker notices within a second and stops.
    await releaseRun(projectId, cancelled.run_id, { cacheKey: cancelled.cache_key, slot: cancelled.slot });
    return { message: CANCELLED_MESSAGE };
  }
  const after = await getQueryStatus(projectId, queryId, clockNow());
  if (!after) throw new NotFound();
  return { message: after.cancelled ? CANCELLED_MESSAGE : 'Query already complete' };
}
