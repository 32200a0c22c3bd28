import { now as clockNow } from '../../clock.ts';
import { config } from '../../config.ts';
import { answersGeneration } from '../../db/projects.ts';
import {
  claimQueryRun,
  finishQueryRun,
  getQueryStatus,
  loadCachedAnswer,
  noteRunStopped,
  type QueryStatusRecord,
  storeCachedAnswer,
  storeQueryResult,
} from '../../db/query-store.ts';
import { MAX_STORED_BYTES } from '../../db/result-cache.ts';
import { ServiceError, ServiceUnavailable, Throttled } from '../../errors.ts';
import { logger } from '../../observability.ts';
import type { QueuedQuery } from '../../queues/query-runs.ts';
import type { AnyQuery, QueryBody, QueryKind } from '../../schemas/query/index.ts';
import type { Caller } from '../access.ts';
import { requireQueryKindScope } from './kinds.ts';
import type { QueryContext, QueryRunner, RunContext } from './runner.ts';
import { findProject, projectSettings } from '../projects.ts';
import {
  newQueryId,
  QUERY_STATUS_TTL_SECONDS,
  type QueryStatusView,
  releaseRunOf,
  startBackgroundRun,
  type RunRequest,
} from './async.ts';
import { checkpointOf, OutOfTime, RunAbandoned, untilSafePoint, watchAbandonment } from './checkpoint.ts';
import { CLIENT_REFRESH_AFTER_MS, cacheKeyOf, decide, executionModeOf, intervalOf, readsCache } from './refresh.ts';

/**
 * Each kind's runner is loaded on its first query (code splitting, infra/build.ts): a function answering
 * trends does not initialise HogQL's parser, the lake's SQL printer or the actors' walks at start-up.
 */
const runners: { [K in QueryKind]?: QueryRunner<K> } = {
  // With a source, the actors behind an insight's point: groups when its series counts them
  // (group-actors.ts), persons otherwise (insight-actors.ts); without, all persons.
  ActorsQuery: async (context, query) => {
    if (query.source === undefined || query.source === null)
      return (await import('./actors.ts')).runActorsQuery(context, query);
    const { groupActorsSource, runGroupActorsQuery } = await import('./group-actors.ts');
    const groups = groupActorsSource(query.source);
    return groups
      ? runGroupActorsQuery(context, query, groups)
      : (await import('./insight-actors.ts')).runInsightActorsQuery(context, query);
  },
  EventsQuery: async (context, query) => (await import('./events.ts')).runEventsQuery(context, query),
  HogQLQuery: async (context, query) => (await import('./hogql.ts')).runHogQLQuery(context, query),
  TrendsQuery: async (context, query) => (await import('./trends.ts')).runTrendsQuery(context, query),
};

export function runnerFor(kind: QueryKind): QueryRunner<QueryKind> {
  const runner = runners[kind] as QueryRunner<QueryKind> | undefined;
  if (!runner) throw new Error(`no runner for ${kind}`);
  return runner;
}

/** Cached answers are kept a day (PostHog's extended cache age), whatever their staleness: force_cache and lazy_async serve them. */
export const QUERY_CACHE_TTL_SECONDS = 86_400;

/** Kept back from the API function's deadline to hand a blocking query that ran out of time to the worker. */
const HANDOVER_MS = 1_500;

type Answer = Record<string, unknown>;

/** A freshly computed answer with PostHog's envelope: `is_cached`, `last_refresh`, `next_allowed_client_refresh`, `cache_key`, `timezone`, `timings`. */
function freshAnswer(body: Answer, cacheKey: string, timezone: string, computedAt: Date, tookMs: number): Answer {
  return {
    ...body,
    is_cached: false,
    last_refresh: computedAt.toISOString(),
    next_allowed_client_refresh: new Date(computedAt.getTime() + CLIENT_REFRESH_AFTER_MS).toISOString(),
    cache_key: cacheKey,
    timezone,
    timings: body.timings ?? [{ k: './query', t: tookMs / 1000 }],
  };
}

/** Stores an answer for later requests; a failure only costs the next request a computation. */
async function cacheAnswer(projectId: number, answer: Answer, computedAt: Date): Promise<void> {
  try {
    const stored = await storeCachedAnswer(
      projectId,
      String(answer.cache_key),
      answer,
      String(answer.last_refresh),
      Math.floor(computedAt.getTime() / 1000) + QUERY_CACHE_TTL_SECONDS,
    );
    if (!stored) logger.info('query answer not cached: over the stored-value cap', { cap_bytes: MAX_STORED_BYTES });
  } catch (error) {
    logger.warn('query answer not cached', { error: (error as Error).message });
  }
}

/**
 * `POST /query`: the body's query answered as its `refresh` mode says (refresh.ts, `decide`): from the
 * cache, computed now, or started in the background (`query_status`, complete false: the handler
 * answers 202 then, as PostHog does). A blocking computation still running at the function's safe
 * point is handed to the query worker and answered like an async one.
 */
export async function runQuery(context: QueryContext, body: QueryBody, caller: Caller): Promise<Answer> {
  requireQueryKindScope(caller, body.query.kind);
  const { membership, projectId } = context;
  const mode = executionModeOf(body);
  const [project, generation] = await Promise.all([findProject(membership, projectId), answersGeneration(projectId)]);
  const timezone = project.timezone;
  // ActorsQuery pages continue the asking user's walk (actors.ts): their cached copies are that user's.
  const viewer = body.query.kind === 'ActorsQuery' ? membership.user_id : null;
  const settings = projectSettings(project);
  const cacheKey = cacheKeyOf({ projectId, settings, generation, query: body.query, viewer });
  const now = clockNow();
  const cached = readsCache(mode) ? await loadCachedAnswer(projectId, cacheKey, now) : undefined;
  const served = (): Answer => ({ ...(cached?.answer as Answer), is_cached: true });
  const decision = decide(mode, cached, now, intervalOf(body.query));
  const run: RunRequest = {
    membership,
    projectId,
    queryId: body.client_query_id ?? newQueryId(),
    clientQueryId: body.client_query_id !== undefined,
    query: body.query as Record<string, unknown>,
    cacheKey,
    generation,
    timezone,
  };
  switch (decision) {
    case 'serve_cached':
      return served();
    case 'serve_cached_and_run_async':
      return { ...served(), query_status: await refreshUnlessFull(run) };
    case 'cache_miss':
      return { cache_key: cacheKey, query_status: null };
    case 'cache_miss_and_run_async':
      return { cache_key: cacheKey, query_status: await startBackgroundRun(run) };
    case 'run_async':
      return { query_status: await startBackgroundRun(run) };
    case 'compute':
      return computeOrHandOver({ ...context, project }, body.query, run);
  }
}

/**
 * The background refresh of a stale answer that is served anyway: skipped (no `query_status`) when the
 * project already runs all the queries it may, since the client has an answer to show.
 */
async function refreshUnlessFull(run: RunRequest): Promise<QueryStatusView | null> {
  try {
    return await startBackgroundRun(run);
  } catch (error) {
    if (error instanceof Throttled) return null;
    throw error;
  }
}

/**
 * Runs the query inline until the safe point (the function's deadline less the hand-over time, or the
 * configured blocking budget if sooner); a run not finished by then is left to the query worker. A run
 * failing after the safe point is handed over too: the worker's run reports its error.
 */
async function computeOrHandOver(
  context: Omit<RunContext, 'check'>,
  query: AnyQuery,
  run: RunRequest,
): Promise<Answer> {
  const started = Date.now();
  const safePoint = Math.min(context.deadline - HANDOVER_MS, started + config().queryBlockingBudgetMs);
  const outcome = await untilSafePoint(
    (check) => runnerFor(query.kind)({ ...context, deadline: safePoint, check }, query),
    safePoint,
  );
  if (outcome === 'late') return { cache_key: run.cacheKey, query_status: await startBackgroundRun(run) };
  const computedAt = clockNow();
  const answer = freshAnswer(outcome.value, run.cacheKey, run.timezone, computedAt, Date.now() - started);
  await cacheAnswer(context.projectId, answer, computedAt);
  return answer;
}

/** Receives of one message after which a transient failure is recorded rather than retried. */
const MAX_TRANSIENT_RETRIES = 2;

/**
 * The query worker's part (functions/workers/run-queries.ts): runs a queued query unless it was
 * cancelled or replaced, then stores its answer (and caches it) or its error, in PostHog's shape: a
 * message for the user when the query is at fault (a 4xx: `error_message` is its detail), none for
 * our own failures. A transient failure (503) is thrown for SQS to retry, up to a point.
 */
export async function runQueuedQuery(message: QueuedQuery, deadline: number, receiveCount: number): Promise<void> {
  const { project_id: projectId, query_id: queryId, run_id: runId } = message;
  const record = await getQueryStatus(projectId, queryId, clockNow());
  if (!record || record.run_id !== runId || record.complete) return;
  if (!(await claimQueryRun(projectId, queryId, runId, clockNow().toISOString()))) return;
  // A cancel (or a later run of the same id) is seen within a second: the run stops at its next checkpoint.
  const watch = watchAbandonment(async () => {
    const now = await getQueryStatus(projectId, queryId, clockNow());
    return !now || now.run_id !== runId || now.cancelled;
  });
  try {
    await runClaimed(record, { deadline, signal: watch.signal }, receiveCount);
  } finally {
    watch.stop();
  }
}

async function runClaimed(
  record: QueryStatusRecord,
  limits: { deadline: number; signal: AbortSignal },
  receiveCount: number,
): Promise<void> {
  const { team_id: projectId, id: queryId, run_id: runId } = record;
  const finish = async (error: boolean, error_message: string | null) => {
    await finishQueryRun(
      projectId,
      queryId,
      runId,
      { error, error_message, end_time: clockNow().toISOString() },
      QUERY_STATUS_TTL_SECONDS,
    );
    await releaseRunOf(record);
  };
  const started = Date.now();
  let body: Answer;
  try {
    const query = record.query as AnyQuery;
    const project = await findProject(record.membership, projectId);
    const check = checkpointOf(limits.deadline, limits.signal);
    const context = { membership: record.membership, projectId, deadline: limits.deadline, project, check };
    body = await runnerFor(query.kind)(context, query);
  } catch (error) {
    if (error instanceof RunAbandoned) {
      logger.info('query run stopped: cancelled or replaced', { query_id: queryId });
      await noteRunStopped(projectId, queryId, runId, clockNow().toISOString());
      await releaseRunOf(record);
      return;
    }
    if (error instanceof OutOfTime) {
      await finish(true, 'The query ran out of time; narrow it (date range, filters) and run it again.');
      return;
    }
    if (error instanceof ServiceUnavailable && receiveCount <= MAX_TRANSIENT_RETRIES) throw error;
    const exposed = error instanceof ServiceError && error.status < 500;
    if (!exposed) logger.error('query failed', { query_id: queryId, error: (error as Error).message });
    await finish(true, exposed ? error.detail : null);
    return;
  }
  const computedAt = clockNow();
  const answer = freshAnswer(body, record.cache_key, record.timezone, computedAt, Date.now() - started);
  await cacheAnswer(projectId, answer, computedAt);
  const kept = await storeQueryResult(
    projectId,
    queryId,
    answer,
    Math.floor(computedAt.getTime() / 1000) + QUERY_STATUS_TTL_SECONDS,
  );
  if (!kept) {
    await finish(
      true,
      `The answer is larger than the ${MAX_STORED_BYTES} bytes (compressed) a query result may keep; narrow the query (date range, filters, limit).`,
    );
    return;
  }
  await finish(false, null);
}
