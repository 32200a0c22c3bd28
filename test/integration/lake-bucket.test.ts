import { randomBytes, randomUUID } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, inject, it } from 'vitest';

/**
 * The lake's bucket store (shared/lake/store.ts) through the function's own S3 client
 * (shared/aws/s3.ts), against the local S3 (s3rver), found the way the local stack points every client:
 * AWS_ENDPOINT_URL_S3, read by the SDK, with the role's keys from the environment (s3rver knows one
 * pair only; DynamoDB Local takes any). Set before the client is first built.
 */
const endpoint = inject('s3Endpoint');
Object.assign(process.env, {
  AWS_ENDPOINT_URL_S3: endpoint,
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
});
const { bucketStore } = await import('#shared/lake/store.ts');

const reader = new S3Client({
  endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  requestChecksumCalculation: 'WHEN_REQUIRED',
});
const bucket = `lake-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  await reader.send(new CreateBucketCommand({ Bucket: bucket }));
});

describe('the lake bucket store', () => {
  it('writes objects byte for byte, reads them back, answers undefined for a missing key, and deletes', async () => {
    const store = bucketStore(bucket);
    const key = 'events/project_id=1/day=2024-05-01/g1-0.parquet';
    // Binary, as a Parquet file is: any framing or re-encoding on the way would show.
    const body = new Uint8Array(randomBytes(70_000));
    await store.put(key, body, 'application/vnd.apache.parquet');
    const stored = await reader.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(Buffer.from(await stored.Body!.transformToByteArray()).equals(Buffer.from(body))).toBe(true);
    expect(stored.ContentType).toBe('application/vnd.apache.parquet');

    const manifest = 'manifests/events/project_id=1/day=2024-05-01/manifest';
    await store.put(manifest, new TextEncoder().encode(`${store.uri(key)}\n`), 'text/plain');
    expect(await store.getText(manifest)).toBe(`s3://${bucket}/${key}\n`);
    expect(store.keyOf(store.uri(key))).toBe(key);
    expect(store.keyOf(`s3://other-bucket/${key}`)).toBeUndefined();

    expect(await store.getText('manifests/none')).toBeUndefined();
    await store.delete(manifest);
    expect(await store.getText(manifest)).toBeUndefined();
    await store.delete(manifest); // already gone: no error
  });
});
