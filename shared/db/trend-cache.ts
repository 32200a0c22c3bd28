import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { call, db, tableName } from './client.ts';
import { keys } from './keys.ts';

export interface CachedTrend {
  body: unknown;
  last_refresh: string;
}

/** DynamoDB deletes expired items lazily, so an entry past `expires_at` is treated as absent. */
export async function readTrendCache(projectId: number, hash: string, now: Date): Promise<CachedTrend | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.trendCache(projectId, hash) })),
  );
  if (!out.Item || Number(out.Item.expires_at) * 1000 <= now.getTime()) return undefined;
  return { body: JSON.parse(String(out.Item.body)), last_refresh: String(out.Item.last_refresh) };
}

const MAX_CACHED_BYTES = 350 * 1024;

export async function writeTrendCache(
  projectId: number,
  hash: string,
  body: unknown,
  lastRefresh: Date,
  ttlSeconds: number,
): Promise<void> {
  const json = JSON.stringify(body);
  if (Buffer.byteLength(json) > MAX_CACHED_BYTES) return; // item limit: such results are recomputed
  await call(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.trendCache(projectId, hash),
          entity: 'TrendCache',
          body: json,
          last_refresh: lastRefresh.toISOString(),
          expires_at: Math.floor(lastRefresh.getTime() / 1000) + ttlSeconds,
        },
      }),
    ),
  );
}
