import { GetCommand, PutCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { batchGet } from './batch.ts';
import { call, conditional, db, tableName } from './client.ts';
import { type ItemKey, keys } from './keys.ts';
import type { MembershipRecord } from './organizations.ts';
import { loadValue, storeValue } from './result-cache.ts';

/**
 * An async query as stored: PostHog's QueryStatus fields (the API returns them), and what the query
 * worker needs to run it (the query, whose membership it runs with, the answer's envelope fields).
 */
export interface QueryStatusRecord {
  id: string;
  team_id: number;
  complete: boolean;
  error: boolean;
  error_message: string | null;
  start_time: string;
  pickup_time: string | null;
  end_time: string | null;
  expiration_time: string | null;
  /** Set by DELETE: the worker does not run it, nor overwrite it when it finishes. */
  cancelled: boolean;
  /** One per enqueue: a message for an earlier run of the same id (a client_query_id sent again) is ignored. */
  run_id: string;
  query: Record<string, unknown>;
  membership: MembershipRecord;
  cache_key: string;
  /** The project's answers generation when the query started (absent on statuses stored before it existed: 0). */
  generation?: number;
  timezone: string;
  /** The project's run slot this run holds (released when it ends; it expires on its own if the run dies). */
  slot?: number;
  /** How many times a worker claimed this run (more than 1 only when SQS redelivered it). */
  claims?: number;
  /** When the worker stopped computing this run after it was cancelled (its checkpoint saw the cancel). */
  stopped_at?: string;
}

const statusKey = keys.queryStatus;

/** Epoch seconds: when the table may drop the item (its TTL). */
const ttlOf = (iso: string, seconds: number) => Math.floor(Date.parse(iso) / 1000) + seconds;

/**
 * Starts (or restarts, for a client_query_id sent again by its creator) a query's status; it lives
 * `ttlSeconds`. False, and nothing written, when a live status of that id belongs to another user.
 */
/**
 * The query is kept as JSON text: its unvalidated parts (a filter's `properties`, say) may hold what a
 * DynamoDB map cannot (numbers beyond its range such as 1e300, empty keys, deep nesting), and they are
 * the client's, so they must never turn into our 500.
 */
function withQueryText({ query, ...rest }: QueryStatusRecord) {
  return { ...rest, query_json: JSON.stringify(query) };
}

export async function putQueryStatus(record: QueryStatusRecord, ttlSeconds: number): Promise<boolean> {
  const out = await conditional(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...withQueryText(record),
          ...statusKey(record.team_id, record.id),
          entity: 'QueryStatus',
          expires_at: ttlOf(record.start_time, ttlSeconds),
        },
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now OR #m.#u = :me',
        ExpressionAttributeNames: { '#m': 'membership', '#u': 'user_id' },
        ExpressionAttributeValues: {
          ':now': Math.floor(Date.parse(record.start_time) / 1000),
          ':me': record.membership.user_id,
        },
      }),
    ),
  );
  return out !== undefined;
}

export async function getQueryStatus(
  projectId: number,
  queryId: string,
  now: Date,
): Promise<QueryStatusRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: statusKey(projectId, queryId), ConsistentRead: true })),
  );
  const item = out.Item;
  if (!item || Number(item.expires_at) * 1000 <= now.getTime()) return undefined;
  const { pk: _pk, sk: _sk, entity: _e, expires_at: _x, query_json, ...record } = item;
  // Statuses stored before the query was kept as text (they live an hour) hold it as a map.
  const query = typeof query_json === 'string' ? JSON.parse(query_json) : record.query;
  return { ...record, query } as QueryStatusRecord;
}

/** The worker takes run `runId` of the query: false when it was cancelled, finished or replaced by a later run. */
export async function claimQueryRun(projectId: number, queryId: string, runId: string, at: string): Promise<boolean> {
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: statusKey(projectId, queryId),
        UpdateExpression: 'SET pickup_time = :at ADD claims :one',
        ConditionExpression: 'run_id = :run AND complete = :no',
        ExpressionAttributeValues: { ':at': at, ':run': runId, ':no': false, ':one': 1 },
      }),
    ),
  );
  return out !== undefined;
}

export interface QueryOutcome {
  error: boolean;
  error_message: string | null;
  end_time: string;
}

/**
 * Records how run `runId` ended (its result, if any, stored first with storeQueryResult); false, and
 * nothing changed, when the query was cancelled or replaced meanwhile.
 */
export async function finishQueryRun(
  projectId: number,
  queryId: string,
  runId: string,
  outcome: QueryOutcome,
  ttlSeconds: number,
): Promise<boolean> {
  const expires = ttlOf(outcome.end_time, ttlSeconds);
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: statusKey(projectId, queryId),
        UpdateExpression:
          'SET complete = :yes, #error = :error, error_message = :message, end_time = :end, expiration_time = :expiration, expires_at = :expires',
        ConditionExpression: 'run_id = :run AND complete = :no',
        ExpressionAttributeNames: { '#error': 'error' },
        ExpressionAttributeValues: {
          ':yes': true,
          ':no': false,
          ':error': outcome.error,
          ':message': outcome.error_message,
          ':end': outcome.end_time,
          ':expiration': new Date(expires * 1000).toISOString(),
          ':expires': expires,
          ':run': runId,
        },
      }),
    ),
  );
  return out !== undefined;
}

/**
 * Marks a running query cancelled (complete, with an error saying so): the cancelled run (to release
 * what it holds), or undefined when there is none or it had finished.
 */
export async function cancelQueryRun(
  projectId: number,
  queryId: string,
  at: string,
  message: string,
): Promise<Pick<QueryStatusRecord, 'run_id' | 'cache_key' | 'slot'> | undefined> {
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: statusKey(projectId, queryId),
        UpdateExpression:
          'SET complete = :yes, cancelled = :yes, #error = :yes, error_message = :message, end_time = :at',
        ConditionExpression: 'attribute_exists(pk) AND complete = :no',
        ExpressionAttributeNames: { '#error': 'error' },
        ExpressionAttributeValues: { ':yes': true, ':no': false, ':message': message, ':at': at },
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  const item = out?.Attributes;
  return (
    item && { run_id: String(item.run_id), cache_key: String(item.cache_key), slot: item.slot as number | undefined }
  );
}

/** Notes when the worker stopped run `runId` after its cancel (nothing when the id was since reused). */
export async function noteRunStopped(projectId: number, queryId: string, runId: string, at: string): Promise<void> {
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: statusKey(projectId, queryId),
        UpdateExpression: 'SET stopped_at = :at',
        ConditionExpression: 'run_id = :run',
        ExpressionAttributeValues: { ':at': at, ':run': runId },
      }),
    ),
  );
}

/** The run in flight for one question (keys.queryRunning): whose status to answer a request that joins it. */
export interface RunningMarker {
  query_id: string;
  run_id: string;
  start_time: string;
}

/**
 * Marks `marker`'s run as the one in flight for (project, cache key) until `expiresAt` (epoch
 * seconds): false when another live run holds the mark (expired or released marks are taken over).
 */
export async function markRunning(
  projectId: number,
  cacheKey: string,
  marker: RunningMarker,
  expiresAt: number,
  nowSeconds: number,
): Promise<boolean> {
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.queryRunning(projectId, cacheKey),
        UpdateExpression: 'SET query_id = :q, run_id = :run, start_time = :start, expires_at = :exp, entity = :entity',
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now',
        ExpressionAttributeValues: {
          ':q': marker.query_id,
          ':run': marker.run_id,
          ':start': marker.start_time,
          ':exp': expiresAt,
          ':now': nowSeconds,
          ':entity': 'QueryRunning',
        },
      }),
    ),
  );
  return out !== undefined;
}

/** The live run in flight for (project, cache key), if any. */
export async function getRunning(projectId: number, cacheKey: string, now: Date): Promise<RunningMarker | undefined> {
  const out = await call(() =>
    db().send(
      new GetCommand({ TableName: tableName(), Key: keys.queryRunning(projectId, cacheKey), ConsistentRead: true }),
    ),
  );
  const item = out.Item;
  if (!item || Number(item.expires_at) * 1000 <= now.getTime()) return undefined;
  return { query_id: String(item.query_id), run_id: String(item.run_id), start_time: String(item.start_time) };
}

/**
 * Frees what run `runId` holds: its question's mark and its slot (each only if still its own). An
 * UpdateItem (expired at once) rather than a delete: the cancel route may only update query items.
 */
export async function releaseRun(
  projectId: number,
  runId: string,
  held: { cacheKey: string; slot?: number },
): Promise<void> {
  const free = (Key: ItemKey) =>
    conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key,
          UpdateExpression: 'SET expires_at = :zero',
          ConditionExpression: 'run_id = :run',
          ExpressionAttributeValues: { ':zero': 0, ':run': runId },
        }),
      ),
    );
  await Promise.all([
    free(keys.queryRunning(projectId, held.cacheKey)),
    held.slot === undefined ? undefined : free(keys.querySlot(projectId, held.slot)),
  ]);
}

/**
 * The project's run slots (of `slots`) free now: released, expired or never taken. Read eventually
 * consistently in one BatchGetItem: a refusal costs no write, and takeRunSlot's condition decides.
 */
export async function freeRunSlots(projectId: number, slots: number, nowSeconds: number): Promise<number[]> {
  const all = Array.from({ length: slots }, (_, n) => n);
  const held = new Set(
    (await batchGet(all.map((n) => keys.querySlot(projectId, n))))
      .filter((item) => Number(item.expires_at) > nowSeconds)
      .map((item) => String(item.pk)),
  );
  return all.filter((n) => !held.has(keys.querySlot(projectId, n).pk));
}

/**
 * Takes one of the `candidates` slots of the project for run `runId` until `expiresAt` (epoch
 * seconds): its number, or undefined when each was taken by a live run meanwhile. Tried from a random
 * one on, so concurrent starts mostly try different items.
 */
export async function takeRunSlot(
  projectId: number,
  candidates: readonly number[],
  runId: string,
  expiresAt: number,
  nowSeconds: number,
): Promise<number | undefined> {
  const first = Math.floor(Math.random() * candidates.length);
  for (let i = 0; i < candidates.length; i += 1) {
    const slot = candidates[(first + i) % candidates.length]!;
    const out = await conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.querySlot(projectId, slot),
          UpdateExpression: 'SET run_id = :run, expires_at = :exp, entity = :entity',
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now',
          ExpressionAttributeValues: { ':run': runId, ':exp': expiresAt, ':now': nowSeconds, ':entity': 'QuerySlot' },
        }),
      ),
    );
    if (out !== undefined) return slot;
  }
  return undefined;
}

/** A finished query's answer, beside its status; false (not stored) when over the stored-value cap. */
export async function storeQueryResult(
  projectId: number,
  queryId: string,
  answer: unknown,
  expiresAt: number,
): Promise<boolean> {
  return storeValue(keys.queryResult(projectId, queryId), answer, {}, expiresAt);
}

export async function loadQueryResult(projectId: number, queryId: string, now: Date): Promise<unknown> {
  return (await loadValue(keys.queryResult(projectId, queryId), now))?.value;
}

/** A cached query answer (POST /query), by project and `cache_key`, with when it was computed. */
export async function loadCachedAnswer(
  projectId: number,
  cacheKey: string,
  now: Date,
): Promise<{ answer: unknown; lastRefresh: Date } | undefined> {
  const stored = await loadValue(keys.queryCache(projectId, cacheKey), now);
  return stored && { answer: stored.value, lastRefresh: new Date(String(stored.attributes.last_refresh)) };
}

/** Caches an answer until `expiresAt` (epoch seconds); false (not cached) when over the stored-value cap. */
export async function storeCachedAnswer(
  projectId: number,
  cacheKey: string,
  answer: unknown,
  lastRefresh: string,
  expiresAt: number,
): Promise<boolean> {
  return storeValue(keys.queryCache(projectId, cacheKey), answer, { last_refresh: lastRefresh }, expiresAt);
}
