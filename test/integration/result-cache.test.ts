import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PutCommand } from '#shared/aws/dynamodb.ts';
import { db, tableName } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { loadValue, MAX_STORED_BYTES, readTrendCache, storeValue, writeTrendCache } from '#shared/db/result-cache.ts';

const head = () => keys.queryCache(999_000_001, `cache_${randomUUID()}`);
const inAnHour = () => Math.floor(Date.now() / 1000) + 3_600;
/** JSON that gzip cannot shrink much: base64 of random bytes. */
const incompressible = (bytes: number) => ({ rows: [randomBytes(bytes).toString('base64')] });

describe('stored values (gzip, chunked across items)', () => {
  it('stores and reads back a value far over one item (400 KB) in chunks, with its attributes', async () => {
    const key = head();
    const value = incompressible(1_500_000); // ~2 MB of JSON, ~1.5 MB gzip'd: 5 chunks
    expect(await storeValue(key, value, { last_refresh: '2026-01-01T00:00:00.000Z' }, inAnHour())).toBe(true);
    const read = await loadValue(key, new Date());
    expect(read?.value).toEqual(value);
    expect(read?.attributes).toEqual({ last_refresh: '2026-01-01T00:00:00.000Z' });
  });

  it('reads the newest write whole, never chunks of two writes, and nothing once expired', async () => {
    const key = head();
    await storeValue(key, incompressible(800_000), {}, inAnHour());
    const second = incompressible(800_000);
    await storeValue(key, second, {}, inAnHour());
    expect((await loadValue(key, new Date()))?.value).toEqual(second);
    // A chunk overwritten by another write (a racing writer) makes the entry a miss, not a mix.
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...keys.storedChunk(key, 1), write_id: 'someone-else', data: Buffer.from('x'), expires_at: inAnHour() },
      }),
    );
    expect(await loadValue(key, new Date())).toBeUndefined();
    const expiring = head();
    await storeValue(expiring, { a: 1 }, {}, Math.floor(Date.now() / 1000) + 1);
    expect(await loadValue(expiring, new Date(Date.now() + 2_000))).toBeUndefined();
  });

  it(`does not store a value over ${MAX_STORED_BYTES} bytes compressed, and says so`, async () => {
    const key = head();
    expect(await storeValue(key, incompressible(MAX_STORED_BYTES), {}, inAnHour())).toBe(false);
    expect(await loadValue(key, new Date())).toBeUndefined();
  });

  it('keeps the legacy trend cache: a trend over the old 350 KB limit is cached now', async () => {
    const body = { result: [{ labels: incompressible(400_000).rows }] };
    const at = new Date();
    const hash = randomUUID();
    await writeTrendCache(999_000_002, hash, body, at, 60);
    expect(await readTrendCache(999_000_002, hash, new Date())).toEqual({ body, last_refresh: at.toISOString() });
  });
});
