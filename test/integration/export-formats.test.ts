// Capture stamps ingestion time with the one clock: frozen here, so windows are known in advance.
process.env.ANALYTICS_FIXED_NOW = '2024-05-01T10:32:00Z';

import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { eventItem } from '#shared/db/events.ts';
import { runScheduler } from '#shared/domain/export-runs.ts';
import { TEST_OBJECT } from '#shared/domain/destination-test.ts';
import { DESTINATION_TIMEOUTS, networkOptions } from '#shared/exports/destination-http.ts';
import { COMPRESSIONS } from '#shared/exports/files.ts';
import { putObject, s3Client, type S3Destination } from '#shared/exports/s3.ts';
import { expectErrorShape, newProject, useApi } from '../support/api.ts';
import { exclusiveFile } from '../support/isolation.ts';

// The scheduler's tick runs every organization's due runs: one file at a time ticks it.
exclusiveFile('export-scheduler');
const api = useApi();
const endpoint = inject('s3Endpoint');
const s3 = new S3Client({
  endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  requestChecksumCalculation: 'WHEN_REQUIRED',
});
/** Every key the exporter writes, in the order it writes them. */
const written: string[] = [];
const put = (config: Record<string, unknown>, key: string, body: Buffer, type: string) => {
  written.push(key);
  return putObject(config as unknown as S3Destination, key, body, type);
};
const tick = (iso: string) => runScheduler(new Date(iso), put);

const duck = await (await DuckDBInstance.create(':memory:')).connect();
afterAll(() => duck.closeSync());

async function bucket(): Promise<string> {
  const name = `formats-${randomUUID().slice(0, 8)}`;
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  return name;
}
async function listKeys(name: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: name }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}
async function read(name: string, key: string): Promise<Buffer> {
  const out = await s3.send(new GetObjectCommand({ Bucket: name, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}
const jsonLines = (b: Buffer) =>
  b
    .toString()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** The Parquet file's rows and column types as DuckDB reads them (parquet is built into DuckDB). */
async function parquet(body: Buffer) {
  const path = join(tmpdir(), `export-${randomUUID()}.parquet`);
  writeFileSync(path, body);
  const reader = await duck.runAndReadAll(`SELECT * FROM read_parquet('${path}')`);
  const types = Object.fromEntries(reader.columnNames().map((n, i) => [n, String(reader.columnTypes()[i])]));
  const codecs = (await duck.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`))
    .getRowObjectsJS()
    .map((r) => r.compression);
  return { rows: reader.getRowObjectsJS() as Record<string, unknown>[], types, codecs };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});

const destination = (bucketName: string, extra: Record<string, unknown> = {}, type = 'S3Compatible') => ({
  type,
  config: {
    bucket_name: bucketName,
    region: 'us-east-1',
    prefix: 'p',
    endpoint_url: endpoint,
    aws_access_key_id: 'S3RVER',
    aws_secret_access_key: 'S3RVER',
    ...extra,
  },
});

const WINDOW = ['2024-05-01T08:00:00Z', '2024-05-01T09:00:00Z'] as const;
const FILE = 'p/2024-05-01T08:00:00.000Z-2024-05-01T09:00:00.000Z';

/** A project with events ingested in 08:00-09:00, and a way to export that hour with a destination config. */
async function project(events: { properties: Record<string, unknown>; at: string }[]) {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const base = `/api/organizations/${p.org.id}/batch_exports/`;
  const stored = events.map((e, i) => ({
    uuid: randomUUID(),
    event: i % 2 ? '$pageview' : 'signed up',
    distinct_id: `user-${i % 7}`,
    project_id: p.projectId,
    properties: e.properties,
    timestamp: e.at,
    inserted_at: e.at,
  }));
  // Straight into the ingestion-time index (a key prefix the stream worker ignores): exact ingestion times.
  await batchPut(stored.map(eventItem).map((item) => ({ ...item, pk: `TESTEXPORT#${String(item.pk)}` })));
  const exportWindow = async (dest: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const created = await c.post(base, {
      name: 'Formats',
      interval: 'hour',
      end_at: '2024-05-01T09:00:00Z',
      destination: dest,
      ...extra,
    });
    expect(created.status).toBe(201);
    cleanups.push(() => c.delete(`${base}${created.body.id}/`));
    expect(
      (await c.post(`${base}${created.body.id}/backfill/`, { start_at: WINDOW[0], end_at: WINDOW[1] })).status,
    ).toBe(200);
    written.length = 0;
    expect(await tick('2024-05-01T10:32:30Z')).toMatchObject({ completed: 1 });
    return created.body;
  };
  return { ...p, c, base, stored, exportWindow };
}

const sample = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    properties: { plan: i % 3 ? 'free' : 'pro', amount: i * 1.5, nested: { a: [i, 'x'] } },
    at: new Date(Date.parse('2024-05-01T08:00:00Z') + i * 1000).toISOString(),
  }));

describe('Parquet files', () => {
  it('are typed (timestamps, JSON properties) and hold the same rows as the JSONLines file of the window, in every codec', {
    timeout: 180_000,
  }, async () => {
    const p = await project(sample(25));
    const b = await bucket();
    await p.exportWindow(destination(b, { compression: 'gzip' }));
    const lines = jsonLines(gunzipSync(await read(b, `${FILE}.jsonl.gz`)));
    expect(lines).toHaveLength(25);
    const expected = [...lines].sort((x, y) => String(x.uuid).localeCompare(String(y.uuid)));
    const codecs = COMPRESSIONS.Parquet.filter((c) => c !== 'none');
    expect(codecs).toEqual(expect.arrayContaining(['snappy', 'gzip', 'brotli']));
    for (const compression of codecs) {
      const pb = await bucket();
      await p.exportWindow(destination(pb, { file_format: 'Parquet', compression }));
      expect(await listKeys(pb)).toEqual([`${FILE}.manifest.json`, `${FILE}.parquet`]);
      const file = await parquet(await read(pb, `${FILE}.parquet`));
      expect(file.codecs).toEqual([compression.toUpperCase()]);
      expect(file.types).toMatchObject({
        // 16 bytes, not 36 characters of text; DuckDB prints it back as the very text JSON Lines holds.
        uuid: 'UUID',
        event: 'VARCHAR',
        timestamp: 'TIMESTAMP',
        created_at: 'TIMESTAMP',
        _inserted_at: 'TIMESTAMP',
        properties: 'VARCHAR',
      });
      const rows = file.rows
        .map(
          (r): Record<string, unknown> => ({
            ...r,
            properties: JSON.parse(String(r.properties)),
            person_properties: JSON.parse(String(r.person_properties)),
            timestamp: (r.timestamp as Date).toISOString(),
            created_at: (r.created_at as Date).toISOString(),
            _inserted_at: (r._inserted_at as Date).toISOString(),
          }),
        )
        .sort((x, y) => String(x.uuid).localeCompare(String(y.uuid)));
      expect(rows).toEqual(expected);
    }
  });

  it('writes numbers as numbers: a hogql_query column of integers is BIGINT, of decimals DOUBLE', async () => {
    const p = await project(sample(4));
    const b = await bucket();
    await p.exportWindow(destination(b, { file_format: 'Parquet' }), {
      hogql_query: 'SELECT uuid, properties.amount AS amount, properties.plan AS plan FROM events',
    });
    const file = await parquet(await read(b, `${FILE}.parquet`));
    expect(file.types).toMatchObject({ uuid: 'UUID', amount: 'DOUBLE', plan: 'VARCHAR' });
    expect(file.rows.map((r) => r.amount).sort()).toEqual([0, 1.5, 3, 4.5]);
    expect(file.codecs).toEqual(['SNAPPY']);
  });
});

describe('JSONLines compression', () => {
  it('writes brotli as .jsonl.br', async () => {
    const p = await project(sample(3));
    const b = await bucket();
    await p.exportWindow(destination(b, { compression: 'brotli' }));
    expect(jsonLines(brotliDecompressSync(await read(b, `${FILE}.jsonl.br`)))).toHaveLength(3);
  });
});

describe('max_file_size_mb', () => {
  it('splits the window into numbered files of at most that size, and writes the manifest listing them last', {
    timeout: 180_000,
  }, async () => {
    // Ten events of 150 KB that do not compress: 1.5 MB, so at least two files of at most 1 MB.
    const events = Array.from({ length: 10 }, (_, i) => ({
      properties: { blob: randomBytes(110_000).toString('base64'), i },
      at: new Date(Date.parse('2024-05-01T08:00:00Z') + i * 2000).toISOString(),
    }));
    const p = await project(events);
    for (const file_format of ['JSONLines', 'Parquet']) {
      const b = await bucket();
      await p.exportWindow(destination(b, { file_format, max_file_size_mb: 1 }));
      const ext = file_format === 'Parquet' ? 'parquet' : 'jsonl';
      const keys = (await listKeys(b)).filter((k) => !k.endsWith('manifest.json'));
      expect(keys.length).toBeGreaterThanOrEqual(2);
      expect(
        keys.every((k, n) => k.startsWith(`${FILE}-`) && k.endsWith(`.${ext}`) && keys.includes(`${FILE}-${n}.${ext}`)),
      ).toBe(true);
      expect(written.at(-1)).toBe(`${FILE}.manifest.json`);
      expect(written.slice(0, -1).sort()).toEqual(keys);
      const manifest = JSON.parse((await read(b, `${FILE}.manifest.json`)).toString());
      expect(manifest.records).toBe(10);
      expect(manifest.files.map((f: { key: string }) => f.key).sort()).toEqual(keys);
      let total = 0;
      for (const f of manifest.files as { key: string; records: number; bytes: number }[]) {
        const body = await read(b, f.key);
        expect(body.length).toBe(f.bytes);
        expect(body.length).toBeLessThanOrEqual(1024 * 1024);
        const n = file_format === 'Parquet' ? (await parquet(body)).rows.length : jsonLines(body).length;
        expect(n).toBe(f.records);
        total += n;
      }
      expect(total).toBe(10);
    }
  });
});

describe('destination types and their fields', () => {
  const org = async () => {
    const p = await newProject(api.as);
    return { c: api.as(p.key), base: `/api/organizations/${p.org.id}/batch_exports/` };
  };
  const aws = (extra: Record<string, unknown>) => ({
    type: 'AwsS3',
    config: {
      bucket_name: 'my-bucket',
      region: 'eu-west-1',
      prefix: 'x',
      aws_access_key_id: 'A',
      aws_secret_access_key: 'S',
      ...extra,
    },
  });
  const compatible = (extra: Record<string, unknown>) => ({
    type: 'S3Compatible',
    config: {
      bucket_name: 'my-bucket',
      region: 'auto',
      prefix: 'x',
      endpoint_url: 'https://account.r2.cloudflarestorage.com',
      aws_access_key_id: 'A',
      aws_secret_access_key: 'S',
      ...extra,
    },
  });

  it.each([
    [aws({ endpoint_url: 'https://s3.example.com' }), 'destination__config', "'endpoint_url'"],
    [aws({ use_virtual_style_addressing: true }), 'destination__config', "'use_virtual_style_addressing'"],
    [compatible({ encryption: 'AES256' }), 'destination__config', "'encryption'"],
    [compatible({ role_arn: 'arn:aws:iam::123456789012:role/x' }), 'destination__config', "'role_arn'"],
    [compatible({ kms_key_id: 'alias/x', colour: 'blue' }), 'destination__config', "'colour'"],
    [compatible({ endpoint_url: undefined }), 'destination__config__endpoint_url', 'endpoint_url'],
    [aws({ file_format: 'Parquet', compression: 'lz4' }), 'destination__config__compression', 'lz4'],
    [aws({ file_format: 'Parquet', compression: 'zip' }), 'destination__config__compression', 'zip'],
    [aws({ compression: 'snappy' }), 'destination__config__compression', 'snappy'],
    [aws({ file_format: 'Avro' }), 'destination__config__file_format', 'Avro'],
    [aws({ encryption: 'aws:kms', kms_key_id: 'not a key' }), 'destination__config__kms_key_id', 'KMS'],
    [aws({ encryption: 'AES256', kms_key_id: 'alias/x' }), 'destination__config__kms_key_id', 'aws:kms'],
    [aws({ encryption: 'DES' }), 'destination__config__encryption', 'AES256'],
    [aws({ max_file_size_mb: 0 }), 'destination__config__max_file_size_mb', '1'],
    [aws({ max_file_size_mb: 1.5 }), 'destination__config__max_file_size_mb', 'int'],
    [compatible({ use_virtual_style_addressing: 'yes' }), 'destination__config__use_virtual_style_addressing', 'bool'],
    [compatible({ region: 'Not A Region' }), 'destination__config__region', 'region'],
  ])('refuses %j with 400 on %s naming %s', async (dest, attr, named) => {
    const { c, base } = await org();
    const res = await c.post(base, {
      name: 'Bad',
      interval: 'hour',
      start_at: '2099-01-01T00:00:00Z',
      destination: JSON.parse(JSON.stringify(dest)),
    });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(attr);
    expect(res.body.detail).toContain(named);
  });

  it('accepts each type with its own fields, and answers them back without secrets', async () => {
    const { c, base } = await org();
    const a = await c.post(base, {
      name: 'AWS',
      interval: 'hour',
      start_at: '2099-01-01T00:00:00Z',
      destination: aws({
        file_format: 'Parquet',
        compression: 'snappy',
        encryption: 'aws:kms',
        kms_key_id: 'alias/exports',
        max_file_size_mb: '50',
      }),
    });
    expect(a.status).toBe(201);
    expect(a.body.destination).toEqual({
      type: 'AwsS3',
      config: {
        bucket_name: 'my-bucket',
        region: 'eu-west-1',
        prefix: 'x',
        file_format: 'Parquet',
        compression: 'snappy',
        encryption: 'aws:kms',
        kms_key_id: 'alias/exports',
        max_file_size_mb: 50,
      },
    });
    const s = await c.post(base, {
      name: 'R2',
      interval: 'hour',
      start_at: '2099-01-01T00:00:00Z',
      destination: compatible({ use_virtual_style_addressing: true, include_events: ['$pageview'] }),
    });
    expect(s.status).toBe(201);
    expect(s.body.destination.type).toBe('S3Compatible');
    expect(s.text).not.toContain('"S"');
    // A PATCH that changes the format re-checks the compression against it.
    const patched = await c.patch(`${base}${a.body.id}/`, {
      destination: { type: 'AwsS3', config: { file_format: 'JSONLines' } },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.attr).toBe('destination__config__compression');
  });
});

describe('server-side encryption and addressing', () => {
  it('sends the SSE headers on PutObject and CreateMultipartUpload, not on UploadPart', async () => {
    const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
    const server = createServer((req, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      req.resume();
      req.on('end', () => {
        if (req.method === 'POST' && req.url!.includes('uploads'))
          return res
            .writeHead(200)
            .end('<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>');
        // CompleteMultipartUpload answers its result document (the SDK, like S3's docs, takes an empty 200 as a failure).
        if (req.method === 'POST') return res.writeHead(200).end('<CompleteMultipartUploadResult/>');
        res.writeHead(200, { etag: '"e"' }).end('');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const net = { loopbackOrigins: new Set([url]), ...DESTINATION_TIMEOUTS };
    const d: S3Destination = {
      bucket_name: 'b',
      region: 'us-east-1',
      endpoint_url: url,
      aws_access_key_id: 'A',
      aws_secret_access_key: 'S',
      encryption: 'aws:kms',
      kms_key_id: 'alias/k',
    };
    await putObject(d, 'small', Buffer.from('x'), 'text/plain', net);
    await putObject(
      { ...d, encryption: 'AES256', kms_key_id: null },
      'big',
      randomBytes(9 * 1024 * 1024),
      'application/octet-stream',
      net,
    );
    server.close();
    const sse = seen.map((s) => [
      s.method,
      s.headers['x-amz-server-side-encryption'] ?? null,
      s.headers['x-amz-server-side-encryption-aws-kms-key-id'] ?? null,
    ]);
    expect(sse).toEqual([
      ['PUT', 'aws:kms', 'alias/k'],
      ['POST', 'AES256', null],
      ['PUT', null, null],
      ['PUT', null, null],
      ['POST', null, null],
    ]);
  });

  it('addresses an S3-compatible store virtual-hosted when asked, path-style otherwise', async () => {
    const d = {
      bucket_name: 'bkt',
      region: 'auto',
      endpoint_url: 'https://acct.r2.example.com',
      aws_access_key_id: 'A',
      aws_secret_access_key: 'S',
    };
    /** The request the exporter's S3 client would send for a PutObject, stopped before it leaves. */
    const target = async (dest: S3Destination, key: string) => {
      const client = s3Client(dest, networkOptions());
      let sent: { hostname: string; path: string } | undefined;
      client.middlewareStack.add(
        () => async (args) => {
          sent = args.request as { hostname: string; path: string };
          throw new Error('stopped before sending');
        },
        { step: 'finalizeRequest', priority: 'low' },
      );
      await client.send(new PutObjectCommand({ Bucket: dest.bucket_name, Key: key, Body: 'x' })).catch(() => undefined);
      return { url: { hostname: sent!.hostname }, path: sent!.path };
    };
    expect(await target(d, 'a/b.jsonl')).toMatchObject({ path: '/bkt/a/b.jsonl' });
    const v = await target({ ...d, use_virtual_style_addressing: true }, 'a/b.jsonl');
    expect([v.url.hostname, v.path]).toEqual(['bkt.acct.r2.example.com', '/a/b.jsonl']);
  });
});

describe('the destination check (POST .../batch_exports/test/)', () => {
  it('passes a bucket that exists (role skipped, test object written) and fails one that does not, in our own words', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const url = `/api/organizations/${p.org.id}/batch_exports/test/`;
    const b = await bucket();
    const good = await c.post(url, { destination: destination(b, { prefix: 'checks/{year}' }) });
    expect(good.status).toBe(200);
    expect(good.body.steps.map((s: any) => [s.name, s.result.status])).toEqual([
      ['Assume the role', 'Skipped'],
      ['Check the bucket exists', 'Passed'],
      ['Write a test object', 'Passed'],
    ]);
    expect(await listKeys(b)).toEqual([`checks/2024/${TEST_OBJECT}`]);

    const missing = await c.post(url, { destination: destination(`${b}-missing`) });
    expect(missing.status).toBe(200);
    const [, head, write] = missing.body.steps;
    expect(head.result.status).toBe('Failed');
    expect(head.result.message).toMatch(
      /^Bucket '.*-missing' does not exist, or these credentials may not see it\. \(S3 HeadBucket failed: 404/,
    );
    expect(write.result.status).toBe('Skipped');
    // s3rver's own words never reach the answer.
    expect(missing.text).not.toMatch(/specified bucket/i);

    const one = await c.post(url, { destination: destination(b), step: 1 });
    expect(one.body).toMatchObject({ name: 'Check the bucket exists', result: { status: 'Passed', message: null } });

    const bad = await c.post(url, { destination: destination(b, { file_format: 'Parquet', compression: 'lz4' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.attr).toBe('destination__config__compression');
  });

  it('refuses a private endpoint before connecting, like a create', async () => {
    const p = await newProject(api.as);
    const res = await api.as(p.key).post(`/api/organizations/${p.org.id}/batch_exports/test/`, {
      destination: destination('bkt', { endpoint_url: 'https://169.254.169.254' }),
    });
    expect(res.status).toBe(400);
    expect(res.body.attr).toBe('destination__config__endpoint_url');
  });
});
