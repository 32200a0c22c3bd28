import { createHash } from 'node:crypto';
import type { QueryBody, RefreshMode } from '../../schemas/query/index.ts';

/**
 * How POST /query treats its cache, as PostHog's query runner does (ExecutionMode in
 * posthog/hogql_queries/query_runner.py). Pure: the envelope (./index.ts) acts on the decision.
 */
export type ExecutionMode = RefreshMode;

/**
 * PostHog: `refresh: true` is force_blocking; `false`, absent or anything unknown is the cache-only
 * mode, which the query endpoint turns into blocking; the deprecated `async: true` is async.
 */
export function executionModeOf(body: Pick<QueryBody, 'refresh' | 'async'>): ExecutionMode {
  if (body.async === true) return 'async';
  if (body.refresh === true) return 'force_blocking';
  if (body.refresh === false || body.refresh === undefined) return 'blocking';
  return body.refresh;
}

/** A trend's interval, or `live`: the lists (ActorsQuery, EventsQuery), which a client reads to see what just happened. */
export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month' | 'live';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * How old a cached answer may be before it is stale: PostHog's staleness thresholds by the query's
 * interval for trends; a list is stale at once for blocking requests (a client polling for a person or
 * an event it just captured must see it) and served from the cache for a minute only to lazy_async.
 */
export const STALE_AFTER_MS: Record<'default' | 'lazy', Record<Interval, number>> = {
  default: { minute: 5 * MINUTE, hour: HOUR, day: 6 * HOUR, week: DAY, month: 2 * DAY, live: 0 },
  lazy: { minute: 15 * MINUTE, hour: 2 * HOUR, day: 12 * HOUR, week: DAY, month: 2 * DAY, live: MINUTE },
};

/** PostHog's `next_allowed_client_refresh`: a minute after the answer was computed. */
export const CLIENT_REFRESH_AFTER_MS = MINUTE;

/** The interval that sets how long an answer stays fresh: a TrendsQuery's own (day by default), else `live`. */
export function intervalOf(query: { kind: string; interval?: unknown }): Interval {
  if (query.kind !== 'TrendsQuery') return 'live';
  const interval = query.interval ?? 'day';
  return typeof interval === 'string' && interval in STALE_AFTER_MS.default ? (interval as Interval) : 'day';
}

/** What POST /query does with its body. */
export type Decision =
  /** Answer the cached answer as it is. */
  | 'serve_cached'
  /** Answer the cached (stale) answer with the status of a run started in the background. */
  | 'serve_cached_and_run_async'
  /** PostHog's CacheMissResponse: `cache_key`, no results, nothing started. */
  | 'cache_miss'
  /** CacheMissResponse with the status of a run started in the background. */
  | 'cache_miss_and_run_async'
  /** Only the status of a run started in the background (force_async: the cache is not read). */
  | 'run_async'
  /** Compute now, answering when done or, past the function's budget, with the status of a background run. */
  | 'compute';

/** The cache is read only when the mode may answer from it. */
export const readsCache = (mode: ExecutionMode) => mode !== 'force_blocking' && mode !== 'force_async';

export function decide(
  mode: ExecutionMode,
  cached: { lastRefresh: Date } | undefined,
  now: Date,
  interval: Interval,
): Decision {
  if (mode === 'force_blocking') return 'compute';
  if (mode === 'force_async') return 'run_async';
  if (!cached) {
    if (mode === 'force_cache') return 'cache_miss';
    if (mode === 'async' || mode === 'lazy_async') return 'cache_miss_and_run_async';
    return 'compute';
  }
  const age = now.getTime() - cached.lastRefresh.getTime();
  if (age < STALE_AFTER_MS.default[interval]) return 'serve_cached';
  switch (mode) {
    case 'force_cache':
      return 'serve_cached';
    case 'async':
      return 'serve_cached_and_run_async';
    case 'lazy_async':
      return age > STALE_AFTER_MS.lazy[interval] ? 'serve_cached_and_run_async' : 'serve_cached';
    default:
      return 'compute';
  }
}

/** JSON with object keys sorted at every level: equal queries, however their keys were ordered, give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Bumped when the shape of stored answers changes, so old entries are never served. */
const CACHE_VERSION = 1;

/** What a cached answer depends on. */
export interface CacheKeyParts {
  projectId: number;
  /** The project's settings that change answers (timezone, week start, test-account filters). */
  settings: unknown;
  /** The project's answers generation: bumped when persons, events or actions are deleted or changed. */
  generation: number;
  /** The validated query (keys in any order). */
  query: unknown;
  /** Scopes the answer to one user where it depends on who asks (an ActorsQuery page follows that user's walk). */
  viewer?: string | null;
}

/** PostHog's `cache_key`: what the answer depends on, hashed. */
export function cacheKeyOf({ projectId, settings, generation, query, viewer = null }: CacheKeyParts): string {
  const payload = canonicalJson({ version: CACHE_VERSION, project_id: projectId, settings, generation, query, viewer });
  return `cache_${createHash('sha256').update(payload).digest('hex').slice(0, 32)}`;
}
