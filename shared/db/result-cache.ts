import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { PutCommand } from '../aws/dynamodb.ts';
import { call, db, tableName } from './client.ts';
import { keys, type ItemKey } from './keys.ts';
import { queryItems } from './query.ts';

/**
 * Computed answers kept for a while: the legacy trend cache and the query API's cache and async
 * results. A value is stored as gzip'd JSON across items of one partition (DynamoDB items are at most
 * 400 KB): chunk 0 at its head key with the metadata, the others beside it (keys.storedChunk), all
 * tagged with one write id so a reader never mixes two writes.
 */
const CHUNK_BYTES = 350 * 1024;
export const MAX_STORED_CHUNKS = 16;
/** Compressed size above which an answer is not stored (5.6 MB: JSON of 10-50 MB, typically). */
export const MAX_STORED_BYTES = CHUNK_BYTES * MAX_STORED_CHUNKS;

export interface StoredValue {
  value: unknown;
  /** The head item's own attributes, as written (last_refresh, ...). */
  attributes: Record<string, unknown>;
}

/** Splits bytes into chunks of at most `size` bytes (at least one chunk, possibly empty). */
export function chunksOf(bytes: Uint8Array, size = CHUNK_BYTES): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out.length ? out : [bytes];
}

const put = (Item: Record<string, unknown>) => call(() => db().send(new PutCommand({ TableName: tableName(), Item })));

/**
 * Stores `value` at `head` until `expiresAt` (epoch seconds, the table's TTL); false (nothing written)
 * when it is over MAX_STORED_BYTES compressed. The chunks are written before the head, so a head is
 * never read before its chunks are there.
 */
export async function storeValue(
  head: ItemKey,
  value: unknown,
  attributes: Record<string, unknown>,
  expiresAt: number,
): Promise<boolean> {
  const packed = gzipSync(JSON.stringify(value));
  if (packed.length > MAX_STORED_BYTES) return false;
  const chunks = chunksOf(packed);
  const write_id = randomUUID();
  await Promise.all(
    chunks
      .slice(1)
      .map((data, i) =>
        put({ ...keys.storedChunk(head, i + 1), entity: 'StoredChunk', write_id, data, expires_at: expiresAt }),
      ),
  );
  await put({
    ...attributes,
    ...head,
    entity: 'StoredValue',
    write_id,
    chunks: chunks.length,
    data: chunks[0],
    expires_at: expiresAt,
  });
  return true;
}

/**
 * The value at `head`, or undefined when there is none, it expired (DynamoDB deletes expired items
 * lazily, so `expires_at` is checked here) or its chunks are not all of the head's write.
 */
export async function loadValue(head: ItemKey, now: Date): Promise<StoredValue | undefined> {
  const items = await queryItems({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': head.pk, ':sk': head.sk },
    ConsistentRead: true,
  });
  const first = items.find((i) => i.sk === head.sk);
  if (!first || !(first.data instanceof Uint8Array) || Number(first.expires_at) * 1000 <= now.getTime())
    return undefined;
  const parts = [first.data];
  for (let n = 1; n < Number(first.chunks); n++) {
    const chunk = items.find((i) => i.sk === keys.storedChunk(head, n).sk);
    if (!chunk || chunk.write_id !== first.write_id || !(chunk.data instanceof Uint8Array)) return undefined;
    parts.push(chunk.data);
  }
  const { pk: _pk, sk: _sk, entity: _e, write_id: _w, chunks: _c, data: _d, expires_at: _x, ...attributes } = first;
  return { value: JSON.parse(gunzipSync(Buffer.concat(parts)).toString('utf8')), attributes };
}

export interface CachedTrend {
  body: unknown;
  last_refresh: string;
}

/** The legacy trend endpoint's cache (shared/domain/trends.ts), by project and a hash of everything it depends on. */
export async function readTrendCache(projectId: number, hash: string, now: Date): Promise<CachedTrend | undefined> {
  const stored = await loadValue(keys.trendCache(projectId, hash), now);
  return stored && { body: stored.value, last_refresh: String(stored.attributes.last_refresh) };
}

export async function writeTrendCache(
  projectId: number,
  hash: string,
  body: unknown,
  lastRefresh: Date,
  ttlSeconds: number,
): Promise<void> {
  await storeValue(
    keys.trendCache(projectId, hash),
    body,
    { last_refresh: lastRefresh.toISOString() },
    Math.floor(lastRefresh.getTime() / 1000) + ttlSeconds,
  );
}
