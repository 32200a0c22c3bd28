// Capture stamps ingestion time with the one clock: frozen here, so windows are known in advance.
process.env.ANALYTICS_FIXED_NOW = '2024-05-01T10:32:00Z';

import { gunzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { eventItem } from '#shared/db/events.ts';
import { runScheduler } from '#shared/domain/export-runs.ts';
import { putObject, type S3Destination } from '#shared/exports/s3.ts';
import { eventually, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();
const endpoint = inject('s3Endpoint');
const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, requestChecksumCalculation: 'WHEN_REQUIRED' });
const put = (config: Record<string, unknown>, key: string, body: Buffer, type: string) => putObject(config as unknown as S3Destination, key, body, type);
const tick = (iso: string) => runScheduler(new Date(iso), put);

async function bucket(): Promise<string> {
  const name = `exports-${randomUUID().slice(0, 8)}`;
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

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  // Scheduler ticks see every due export in the table: remove this test's so later ticks start clean.
  for (const f of cleanups.splice(0)) await f();
});

async function setup(exportBody: (bucketName: string) => Record<string, unknown>) {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const bucketName = await bucket();
  const base = `/api/organizations/${p.org.id}/batch_exports/`;
  const created = await c.post(base, exportBody(bucketName));
  expect(created.status).toBe(201);
  cleanups.push(() => c.delete(`${base}${created.body.id}/`));
  return { ...p, c, bucketName, base, exportId: created.body.id as string };
}

const config = (bucketName: string, extra: Record<string, unknown> = {}) => ({
  type: 'S3',
  config: { bucket_name: bucketName, region: 'us-east-1', prefix: 'posthog/{year}/{month}/{day}', endpoint_url: endpoint, aws_access_key_id: 'S3RVER', aws_secret_access_key: 'S3RVER', ...extra },
});

async function runsOf(c: Client, base: string, id: string) {
  return (await c.get(`${base}${id}/`)).body.latest_runs as any[];
}

describe('batch export runs into S3', () => {
  it('exports a closed window with every row, then writes its manifest', async () => {
    const s = await setup((b) => ({ name: 'Five-minutely', interval: 'every 5 minutes', destination: config(b, { compression: 'gzip' }) }));
    const batch = [
      { event: 'signed up', distinct_id: 'ada', uuid: randomUUID(), timestamp: '2024-05-01T10:31:00Z', properties: { plan: 'pro', $set: { email: 'ada@x.io' } } },
      { event: '$pageview', distinct_id: 'bob', uuid: randomUUID(), timestamp: '2024-04-30T23:00:00Z', properties: { $current_url: 'https://x.io' } },
    ];
    expect((await api.as().post('/batch', { api_key: s.token, batch })).body.accepted).toBe(2);
    const personUuid = await eventually(async () => {
      const res = await s.c.get(`/api/environments/${s.projectId}/persons/?distinct_id=ada`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0].uuid as string;
    });

    expect(await tick('2024-05-01T10:34:59Z')).toMatchObject({ runsCreated: 0 });
    expect(await tick('2024-05-01T10:36:00Z')).toMatchObject({ runsCreated: 1, completed: 1 });
    const key = 'posthog/2024/05/01/2024-05-01T10:30:00.000Z-2024-05-01T10:35:00.000Z.jsonl.gz';
    expect(await listKeys(s.bucketName)).toEqual([key, key.replace('.jsonl.gz', '.manifest.json')]);
    const rows = gunzipSync(await read(s.bucketName, key)).toString().trim().split('\n').map((l) => JSON.parse(l));
    expect(rows).toHaveLength(2);
    const byUuid = new Map(rows.map((r) => [r.uuid, r]));
    expect(byUuid.get(batch[0]!.uuid)).toEqual({
      uuid: batch[0]!.uuid,
      event: 'signed up',
      distinct_id: 'ada',
      person_id: personUuid,
      properties: { plan: 'pro', $set: { email: 'ada@x.io' } },
      person_properties: { email: 'ada@x.io' },
      elements_chain: '',
      timestamp: '2024-05-01T10:31:00.000Z',
      created_at: '2024-05-01T10:32:00.000Z',
      _inserted_at: '2024-05-01T10:32:00.000Z',
    });
    // Late events count where they were ingested: yesterday's pageview is in today's window.
    expect(byUuid.get(batch[1]!.uuid)).toMatchObject({ event: '$pageview', timestamp: '2024-04-30T23:00:00.000Z' });
    const manifest = JSON.parse((await read(s.bucketName, key.replace('.jsonl.gz', '.manifest.json'))).toString());
    expect(manifest).toMatchObject({ records: 2, files: [{ key, records: 2 }], data_interval_start: '2024-05-01T10:30:00.000Z' });
    const [run] = await runsOf(s.c, s.base, s.exportId);
    expect(run).toMatchObject({ status: 'Completed', records_completed: 2, records_total_count: 2, data_interval_end: '2024-05-01T10:35:00.000Z' });
    expect(run.finished_at).toBeTruthy();
    // A second tick in the same place does nothing: the window is claimed.
    expect(await tick('2024-05-01T10:36:30Z')).toMatchObject({ runsCreated: 0, runsExecuted: 0 });
  });

  it('backfills twice over the same windows without duplicating a row, and shapes rows with hogql_query as CSV', async () => {
    const s = await setup((b) => ({
      name: 'Backfilled',
      interval: 'every 5 minutes',
      paused: false,
      start_at: '2024-05-01T12:00:00Z',
      hogql_query: 'SELECT uuid, event, properties.plan AS plan, person.properties.email AS email FROM events',
      filters: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }],
      destination: config(b, { file_format: 'CSV', prefix: 'bf' }),
    }));
    await api.as().post('/batch', {
      api_key: s.token,
      batch: [
        { event: 'paid', distinct_id: 'cy', properties: { plan: 'pro', $set: { email: 'cy@x.io' } } },
        { event: 'paid', distinct_id: 'di', properties: { plan: 'free' } },
      ],
    });
    await eventually(async () => expect((await s.c.get(`/api/environments/${s.projectId}/persons/?distinct_id=cy`)).body.count).toBe(1));
    for (let i = 0; i < 2; i += 1) {
      const res = await s.c.post(`${s.base}${s.exportId}/backfill/`, { start_at: '2024-05-01T10:20:00Z', end_at: '2024-05-01T10:32:00Z' });
      expect(res.body.runs).toBe(3);
      expect(await tick('2024-05-01T10:32:30Z')).toMatchObject({ runsExecuted: 3, completed: 3 });
    }
    const keys = await listKeys(s.bucketName);
    expect(keys.filter((k) => k.endsWith('.csv'))).toHaveLength(3);
    const csv = (await read(s.bucketName, 'bf/2024-05-01T10:30:00.000Z-2024-05-01T10:35:00.000Z.csv')).toString().trim().split('\r\n');
    expect(csv[0]).toBe('uuid,event,plan,email');
    expect(csv.slice(1)).toEqual([expect.stringMatching(/^[0-9a-f-]{36},paid,pro,cy@x\.io$/)]);
    expect((await runsOf(s.c, s.base, s.exportId)).filter((r) => r.status === 'Completed')).toHaveLength(6);
    const logs = (await s.c.get(`${s.base}${s.exportId}/logs/`)).body.results.map((l: any) => l.message);
    expect(logs.filter((m: string) => m.includes('no duplicate rows'))).toHaveLength(2);
  });

  it('retries a failing destination, marks the run Failed with a useful log, and pauses after 3 failed runs', async () => {
    // end_at in the past: only the backfilled runs exist, no scheduled window opens during the test.
    const s = await setup((b) => ({ name: 'Broken', interval: 'every 5 minutes', end_at: '2024-05-01T10:30:00Z', destination: config(`${b}-missing`) }));
    await s.c.post(`${s.base}${s.exportId}/backfill/`, { start_at: '2024-05-01T10:00:00Z', end_at: '2024-05-01T10:15:00Z' });
    expect(await tick('2024-05-01T10:32:10Z')).toMatchObject({ runsExecuted: 3, failed: 3 });
    expect((await runsOf(s.c, s.base, s.exportId)).map((r) => r.status)).toEqual(['FailedRetryable', 'FailedRetryable', 'FailedRetryable']);
    await tick('2024-05-01T10:33:20Z'); // second attempts (retry after 1 minute)
    await tick('2024-05-01T10:35:30Z'); // third attempts (after 2 more minutes)
    const runs = await runsOf(s.c, s.base, s.exportId);
    expect(runs.map((r) => r.status)).toEqual(['Failed', 'Failed', 'Failed']);
    expect(runs[0].latest_error).toMatch(/NoSuchBucket|bucket does not exist/i);
    const exported = (await s.c.get(`${s.base}${s.exportId}/`)).body;
    expect(exported.paused).toBe(true);
    const errors = (await s.c.get(`${s.base}${s.exportId}/logs/?level=ERROR`)).body.results.map((l: any) => l.message);
    expect(errors[0]).toMatch(/paused after 3 consecutive failed runs/);
    expect(errors.filter((m: string) => m.startsWith('Run failed after 3 attempts'))).toHaveLength(3);
    expect(JSON.stringify(errors)).not.toContain('S3RVER');
  });

  it('reads an hour window in slices without losing, repeating or reordering events at slice edges', async () => {
    const s = await setup((b) => ({ name: 'Hourly', interval: 'hour', destination: config(b, { prefix: 'edges' }) }));
    // Straight into the ingestion-time index (a key prefix the stream worker ignores): exact ingestion times.
    const at = ['2024-05-01T07:59:59.999Z', '2024-05-01T08:00:00.000Z', '2024-05-01T08:04:59.999Z', '2024-05-01T08:05:00.000Z', '2024-05-01T08:30:00.000Z', '2024-05-01T08:30:00.000Z', '2024-05-01T08:59:59.999Z', '2024-05-01T09:00:00.000Z'];
    const events = at.map((t) => ({ uuid: randomUUID(), event: 'edge', distinct_id: 'edgy', project_id: s.projectId, properties: {}, timestamp: t, inserted_at: t }));
    await batchPut(events.map(eventItem).map((item) => ({ ...item, pk: `TESTEXPORT#${String(item.pk)}` })));
    expect((await s.c.post(`${s.base}${s.exportId}/backfill/`, { start_at: '2024-05-01T08:00:00Z', end_at: '2024-05-01T09:00:00Z' })).body.runs).toBe(1);
    expect(await tick('2024-05-01T10:32:30Z')).toMatchObject({ completed: 1 });
    const lines = (await read(s.bucketName, 'edges/2024-05-01T08:00:00.000Z-2024-05-01T09:00:00.000Z.jsonl')).toString().trim().split('\n');
    const inWindow = events.slice(1, -1).sort((a, b) => (a.inserted_at === b.inserted_at ? (a.uuid < b.uuid ? -1 : 1) : a.inserted_at < b.inserted_at ? -1 : 1));
    expect(lines.map((l) => JSON.parse(l).uuid)).toEqual(inWindow.map((e) => e.uuid));
  });

  it('completes a run at once when a filter holds a regex catastrophic for backtracking and an event 10,000 a\'s and a !', async () => {
    const s = await setup((b) => ({
      name: 'Hostile filter',
      interval: 'every 5 minutes',
      start_at: '2024-05-01T12:00:00Z',
      filters: [{ key: 'text', operator: 'regex', value: '^(a+)+$', type: 'event' }],
      destination: config(b, { prefix: 'rx' }),
    }));
    const batch = [
      { event: 'hostile', distinct_id: 'mallory', properties: { text: `${'a'.repeat(10_000)}!` } },
      { event: 'hostile', distinct_id: 'alice', properties: { text: 'aaaa' } },
    ];
    expect((await api.as().post('/batch', { api_key: s.token, batch })).body.accepted).toBe(2);
    await eventually(async () => expect((await s.c.get(`/api/environments/${s.projectId}/persons/?distinct_id=mallory`)).body.count).toBe(1));
    expect((await s.c.post(`${s.base}${s.exportId}/backfill/`, { start_at: '2024-05-01T10:30:00Z', end_at: '2024-05-01T10:32:00Z' })).body.runs).toBe(1);
    const started = performance.now();
    expect(await tick('2024-05-01T10:32:30Z')).toMatchObject({ completed: 1 });
    // Generous for a loaded 2-core machine; a backtracking engine takes 2^n steps for n a's.
    expect(performance.now() - started).toBeLessThan(5_000);
    const lines = (await read(s.bucketName, 'rx/2024-05-01T10:30:00.000Z-2024-05-01T10:35:00.000Z.jsonl')).toString().trim().split('\n');
    expect(lines.map((l) => JSON.parse(l).distinct_id)).toEqual(['alice']);
  });

  it('starts no run while paused, before start_at or after end_at', async () => {
    const paused = await setup((b) => ({ name: 'Paused', interval: 'every 5 minutes', paused: true, destination: config(b) }));
    const bounded = await setup((b) => ({ name: 'Bounded', interval: 'every 5 minutes', start_at: '2024-05-01T11:00:00Z', end_at: '2024-05-01T11:15:00Z', destination: config(b) }));
    await tick('2024-05-01T11:04:00Z');
    expect(await runsOf(bounded.c, bounded.base, bounded.exportId)).toEqual([]);
    await tick('2024-05-01T12:00:00Z');
    expect((await runsOf(bounded.c, bounded.base, bounded.exportId)).map((r) => r.data_interval_start).sort()).toEqual([
      '2024-05-01T11:00:00.000Z',
      '2024-05-01T11:05:00.000Z',
      '2024-05-01T11:10:00.000Z',
    ]);
    await tick('2024-05-01T13:00:00Z');
    expect(await runsOf(bounded.c, bounded.base, bounded.exportId)).toHaveLength(3);
    expect(await runsOf(paused.c, paused.base, paused.exportId)).toEqual([]);
    // Unpausing resumes from the next interval (the frozen clock says 10:32): no flood of missed windows.
    await paused.c.patch(`${paused.base}${paused.exportId}/`, { paused: false });
    await tick('2024-05-01T10:36:00Z');
    expect((await runsOf(paused.c, paused.base, paused.exportId)).map((r) => r.data_interval_start)).toEqual(['2024-05-01T10:30:00.000Z']);
  });
});

describe('overlapping scheduler ticks', () => {
  it('execute each due run once', async () => {
    const s = await setup((b) => ({ name: 'Raced', interval: 'every 5 minutes', end_at: '2024-05-01T10:30:00Z', destination: config(b) }));
    await s.c.post(`${s.base}${s.exportId}/backfill/`, { start_at: '2024-05-01T10:00:00Z', end_at: '2024-05-01T10:20:00Z' });
    const [a, b] = await Promise.all([tick('2024-05-01T10:33:00Z'), tick('2024-05-01T10:33:00Z')]);
    expect(a.runsExecuted + b.runsExecuted).toBe(4);
    const runs = await runsOf(s.c, s.base, s.exportId);
    expect(runs.map((r) => r.status)).toEqual(['Completed', 'Completed', 'Completed', 'Completed']);
    const logs = (await s.c.get(`${s.base}${s.exportId}/logs/?level=INFO`)).body.results.filter((l: any) => l.message.startsWith('Exported'));
    expect(logs).toHaveLength(4);
  });
});
