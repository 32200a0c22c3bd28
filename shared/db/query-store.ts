import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { call, conditional, db, tableName } from './client.ts';
import { keys } from './keys.ts';
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
}

const statusKey = keys.queryStatus;

/** Epoch seconds: when the table may drop the item (its TTL). */
const ttlOf = (iso: string, seconds: number) => Math.floor(Date.parse(iso) / 1000) + seconds;

/** Starts (or restarts, for a client_query_id sent again) a query's status; it lives `ttlSeconds`. */
export async function putQueryStatus(record: QueryStatusRecord, ttlSeconds: number): Promise<void> {
  await call(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...record,
          ...statusKey(record.team_id, record.id),
          entity: 'QueryStatus',
          expires_at: ttlOf(record.start_time, ttlSeconds),
        },
      }),
    ),
  );
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
  const { pk: _pk, sk: _sk, entity: _e, expires_at: _x, ...record } = item;
  return record as QueryStatusRecord;
}

/** The worker takes run `runId` of the query: false when it was cancelled, finished or replaced by a later run. */
export async function claimQueryRun(projectId: number, queryId: string, runId: string, at: string): Promise<boolean> {
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: statusKey(projectId, queryId),
        UpdateExpression: 'SET pickup_time = :at',
        ConditionExpression: 'run_id = :run AND complete = :no',
        ExpressionAttributeValues: { ':at': at, ':run': runId, ':no': false },
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

/** Marks a running query cancelled (complete, with an error saying so): false when there is none or it had finished. */
export async function cancelQueryRun(
  projectId: number,
  queryId: string,
  at: string,
  message: string,
): Promise<boolean> {
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
      }),
    ),
  );
  return out !== undefined;
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
