// Capture stamps ingestion time with the one clock: frozen here, so windows are known in advance.
process.env.ANALYTICS_FIXED_NOW = '2024-05-01T10:32:00Z';

import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '#shared/aws/dynamodb.ts';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { db, tableName } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { listBackfills } from '#shared/db/batch-exports.ts';
import { batchPut } from '#shared/db/batch.ts';
import { queryIndex } from '#shared/db/query.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { MAX_BACKFILLS_KEPT, MAX_CONCURRENT_BACKFILLS_PER_TEAM } from '#shared/domain/export-backfills.ts';
import { runScheduler } from '#shared/domain/export-runs.ts';
import { putObject, type S3Destination } from '#shared/exports/s3.ts';
import { eventually, expectErrorShape, newProject, useApi } from '../support/api.ts';
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
const put = (config: Record<string, unknown>, key: string, body: Buffer, type: string) =>
  putObject(config as unknown as S3Destination, key, body, type);
const noPut = async () => {};
/** A tick that only schedules: reading day- and week-long windows is not what these tests are about. */
const noTimeLeft = () => 0;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});

const destination = (bucketName: string) => ({
  type: 'S3',
  config: {
    bucket_name: bucketName,
    region: 'us-east-1',
    prefix: 'bf',
    endpoint_url: endpoint,
    aws_access_key_id: 'S3RVER',
    aws_secret_access_key: 'S3RVER',
  },
});

async function setup(extra: Record<string, unknown> = {}) {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const bucketName = `exports-${randomUUID().slice(0, 8)}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucketName }));
  const base = `/api/organizations/${p.org.id}/batch_exports/`;
  // Its schedule ended at 10:30, before the frozen clock: its only runs are the backfilled ones.
  const created = await c.post(base, {
    name: 'Backfilled',
    interval: 'every 5 minutes',
    end_at: '2024-05-01T10:30:00Z',
    destination: destination(bucketName),
    ...extra,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.id as string;
  cleanups.push(() => c.delete(`${base}${id}/`));
  const at = `${base}${id}/`;
  return { ...p, c, bucketName, base, id, at };
}

describe('backfills as a resource', () => {
  it('walks a backfill from Starting through Running to Completed, with progress and records', async () => {
    const s = await setup();
    await api.as().post('/batch', {
      api_key: s.token,
      batch: [
        { event: 'paid', distinct_id: 'a', uuid: randomUUID(), timestamp: '2024-05-01T10:00:00Z' },
        { event: 'paid', distinct_id: 'b', uuid: randomUUID(), timestamp: '2024-05-01T10:01:00Z' },
      ],
    });
    const res = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:25:00Z',
      end_at: '2024-05-01T10:30:00Z',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // The window of 10:30-10:35 holds the events (ingested at the frozen 10:32).
    const wide = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:30:00Z',
      end_at: '2024-05-01T10:32:00Z',
    });
    expect(wide.status).toBe(201);
    expect(Object.keys(wide.body)).toEqual(['backfill_id']);
    const view = async () => (await s.c.get(`${s.at}backfills/${wide.body.backfill_id}/`)).body;
    expect(await view()).toMatchObject({
      id: wide.body.backfill_id,
      status: 'Starting',
      start_at: '2024-05-01T10:30:00.000Z',
      end_at: '2024-05-01T10:32:00.000Z',
      adjusted_start_at: '2024-05-01T10:30:00.000Z',
      finished_at: null,
      progress: { total_runs: 1, finished_runs: 0, progress: 0 },
    });
    // The other backfill's window fails once: ours completes, theirs waits for a retry.
    const flaky = async (cfg: Record<string, unknown>, key: string, body: Buffer, type: string) => {
      if (key.includes('T10:25:00.000Z-')) throw new Error('destination down');
      await put(cfg, key, body, type);
    };
    await runScheduler(new Date('2024-05-01T10:33:00Z'), flaky);
    const first = (await s.c.get(`${s.at}backfills/${res.body.backfill_id}/`)).body;
    expect(first).toMatchObject({ status: 'Starting', progress: { finished_runs: 0 } });
    expect(await view()).toMatchObject({
      status: 'Completed',
      total_records_count: 2,
      progress: { total_runs: 1, finished_runs: 1, progress: 1 },
      finished_at: expect.any(String),
    });
    await runScheduler(new Date('2024-05-01T10:40:00Z'), put);
    expect((await s.c.get(`${s.at}backfills/${res.body.backfill_id}/`)).body).toMatchObject({
      status: 'Completed',
      progress: { total_runs: 1, finished_runs: 1, progress: 1 },
    });
    const list = await s.c.get(`${s.at}backfills/?ordering=start_at`);
    expect(list.status).toBe(200);
    expect(list.body.results.map((b: any) => b.id)).toEqual([res.body.backfill_id, wide.body.backfill_id]);
    expect(list.body.next).toBeNull();
  });

  it('reports Running with partial progress while some runs have settled', async () => {
    const s = await setup();
    const res = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:00:00Z',
      end_at: '2024-05-01T10:15:00Z',
    });
    expect(res.status).toBe(201);
    const flaky = async (cfg: Record<string, unknown>, key: string, body: Buffer, type: string) => {
      if (key.includes('T10:05:00.000Z-')) throw new Error('destination down');
      await put(cfg, key, body, type);
    };
    await runScheduler(new Date('2024-05-01T10:33:00Z'), flaky);
    const at = `${s.at}backfills/${res.body.backfill_id}/`;
    expect((await s.c.get(at)).body).toMatchObject({
      status: 'Running',
      finished_at: null,
      progress: { total_runs: 3, finished_runs: 2, progress: 0.6667 },
    });
    await runScheduler(new Date('2024-05-01T10:40:00Z'), put);
    expect((await s.c.get(at)).body).toMatchObject({
      status: 'Completed',
      progress: { total_runs: 3, finished_runs: 3, progress: 1 },
    });
  });

  it('pages the list with a cursor in created_at order', async () => {
    const s = await setup();
    const ids: string[] = [];
    for (const h of ['08', '09', '10']) {
      const r = await s.c.post(`${s.at}backfills/`, {
        start_at: `2024-05-01T${h}:00:00Z`,
        end_at: `2024-05-01T${h}:10:00Z`,
      });
      ids.push(r.body.backfill_id);
    }
    const one = await s.c.get(`${s.at}backfills/?limit=2&ordering=created_at`);
    expect(one.body.results.map((b: any) => b.id)).toEqual(ids.slice(0, 2));
    const next = new URL(one.body.next);
    const two = await s.c.get(`${next.pathname}${next.search}`);
    expect(two.body.results.map((b: any) => b.id)).toEqual([ids[2]]);
    expect(two.body.next).toBeNull();
    const desc = await s.c.get(`${s.at}backfills/`);
    expect(desc.body.results.map((b: any) => b.id)).toEqual([...ids].reverse());
  });

  it('refuses an overlap with a backfill in flight or completed (409) unless allow_overlap; the deprecated alias allows it', async () => {
    const s = await setup();
    const a = await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T10:00:00Z', end_at: '2024-05-01T10:15:00Z' });
    expect(a.status).toBe(201);
    const clash = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:10:00Z',
      end_at: '2024-05-01T10:20:00Z',
    });
    expect(clash.status).toBe(409);
    expectErrorShape(clash.body);
    expect(clash.body.detail).toContain(a.body.backfill_id);
    expect(clash.body.detail).toContain('allow_overlap');
    // Adjacent is not overlapping.
    const next = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:15:00Z',
      end_at: '2024-05-01T10:20:00Z',
    });
    expect(next.status).toBe(201);
    await runScheduler(new Date('2024-05-01T10:33:00Z'), noPut);
    expect((await s.c.get(`${s.at}backfills/${a.body.backfill_id}/`)).body.status).toBe('Completed');
    expect(
      (await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T10:05:00Z', end_at: '2024-05-01T10:10:00Z' }))
        .status,
    ).toBe(409);
    const allowed = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:05:00Z',
      end_at: '2024-05-01T10:10:00Z',
      allow_overlap: true,
    });
    expect(allowed.status).toBe(201);
    const legacy = await s.c.post(`${s.at}backfill/`, {
      start_at: '2024-05-01T10:00:00Z',
      end_at: '2024-05-01T10:20:00Z',
    });
    expect(legacy.status).toBe(200);
    expect(legacy.body).toMatchObject({ backfill_id: expect.any(String), runs: 4 });
    // The alias created a backfill like any other: the resource lists it.
    const listed = (await s.c.get(`${s.at}backfills/`)).body.results.map((b: any) => b.id);
    expect(listed).toContain(legacy.body.backfill_id);
  });

  it("applies PostHog's date rules: end in the future or not after start is 400; daily exports take whole days", async () => {
    const s = await setup();
    const future = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:00:00Z',
      end_at: '2024-05-02T00:00:00Z',
    });
    expect([future.status, future.body.attr]).toEqual([400, 'end_at']);
    const reversed = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:00:00Z',
      end_at: '2024-05-01T09:00:00Z',
    });
    expect([reversed.status, reversed.body.attr]).toEqual([400, 'start_at']);
    const daily = await setup({ interval: 'day', end_at: null });
    const off = await daily.c.post(`${daily.at}backfills/`, {
      start_at: '2024-04-28T06:00:00Z',
      end_at: '2024-04-30T00:00:00Z',
    });
    expect(off.status).toBe(400);
    expectErrorShape(off.body);
    expect(off.body).toMatchObject({ attr: 'start_at', detail: expect.stringContaining('whole days') });
    const offEnd = await daily.c.post(`${daily.at}backfill/`, {
      start_at: '2024-04-28T00:00:00Z',
      end_at: '2024-04-30T12:00:00Z',
    });
    expect([offEnd.status, offEnd.body.attr]).toEqual([400, 'end_at']);
    const whole = await daily.c.post(`${daily.at}backfills/`, {
      start_at: '2024-04-28T00:00:00Z',
      end_at: '2024-04-30T00:00:00Z',
    });
    expect(whole.status).toBe(201);
    expect((await daily.c.get(`${daily.at}backfills/${whole.body.backfill_id}/`)).body.progress.total_runs).toBe(2);
  });

  it("starts from the project's first event when start_at is omitted, and says so when there is none", async () => {
    const s = await setup();
    const none = await s.c.post(`${s.at}backfills/`, { end_at: '2024-05-01T10:30:00Z' });
    expect([none.status, none.body.attr]).toEqual([400, 'start_at']);
    await api.as().post('/batch', {
      api_key: s.token,
      batch: [{ event: 'first', distinct_id: 'a', uuid: randomUUID(), timestamp: '2024-05-01T09:47:12Z' }],
    });
    const res = await eventually(async () => {
      const r = await s.c.post(`${s.at}backfills/`, { end_at: '2024-05-01T10:30:00Z' });
      expect(r.status).toBe(201);
      return r;
    });
    expect((await s.c.get(`${s.at}backfills/${res.body.backfill_id}/`)).body).toMatchObject({
      start_at: '2024-05-01T09:45:00.000Z',
      adjusted_start_at: '2024-05-01T09:45:00.000Z',
      progress: { total_runs: 9 },
    });
  });

  it(`answers 429 once a project has ${MAX_CONCURRENT_BACKFILLS_PER_TEAM} backfills in flight, and accepts again once one is cancelled`, async () => {
    const s = await setup();
    const ids: string[] = [];
    for (let i = 0; i < MAX_CONCURRENT_BACKFILLS_PER_TEAM; i += 1) {
      const start = new Date(Date.parse('2024-05-01T08:00:00Z') + i * 300_000).toISOString();
      const end = new Date(Date.parse(start) + 300_000).toISOString();
      const r = await s.c.post(`${s.at}backfills/`, { start_at: start, end_at: end });
      expect(r.status).toBe(201);
      ids.push(r.body.backfill_id);
    }
    const more = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:00:00Z',
      end_at: '2024-05-01T10:05:00Z',
    });
    expect(more.status).toBe(429);
    expectErrorShape(more.body);
    expect(more.body.detail).toContain(`(${MAX_CONCURRENT_BACKFILLS_PER_TEAM})`);
    expect((await s.c.post(`${s.at}backfills/${ids[0]}/cancel/`, {})).status).toBe(200);
    expect(
      (await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T10:00:00Z', end_at: '2024-05-01T10:05:00Z' }))
        .status,
    ).toBe(201);
  }, 60_000);

  it(`keeps at most ${MAX_BACKFILLS_KEPT} backfills per export (the oldest finished ones go), and counts in-flight ones from their own index`, async () => {
    const s = await setup();
    const finished = Array.from({ length: MAX_BACKFILLS_KEPT }, (_, i) => {
      const start = new Date(Date.parse('2020-01-01T00:00:00Z') + i * 300_000).toISOString();
      const end = new Date(Date.parse(start) + 300_000).toISOString();
      return {
        ...keys.exportBackfill(s.id, `${start}#${end}`),
        entity: 'ExportBackfill',
        id: randomUUID(),
        batch_export: s.id,
        organization_id: s.org.id,
        start_at: start,
        end_at: end,
        range: `${start}#${end}`,
        total_runs: 1,
        settled_runs: 1,
        failed_runs: 0,
        records_exported: 0,
        next_window_start: null,
        created_at: new Date(Date.parse('2024-01-01T00:00:00Z') + i * 1000).toISOString(),
        last_settled_at: null,
        cancelled_at: null,
        cancelled_from: null,
      };
    });
    await batchPut(finished);
    const inFlight = async () =>
      (await queryIndex(TABLE_SCHEMA.indexes.byParent, keys.backfillInFlight(s.projectId, '', '').parent_pk)).map(
        (i) => i.id,
      );
    const first = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T08:00:00Z',
      end_at: '2024-05-01T08:05:00Z',
    });
    expect(first.status).toBe(201);
    const ids = (await listBackfills(s.id)).map((b) => b.id);
    expect(ids).toHaveLength(MAX_BACKFILLS_KEPT);
    expect(ids).not.toContain(finished[0]!.id);
    expect(ids).toContain(finished[1]!.id);
    expect(ids).toContain(first.body.backfill_id);
    // Only backfills created while the project was under its cap have an entry; a settled one leaves it when next counted.
    expect(await inFlight()).toEqual([first.body.backfill_id]);
    expect((await s.c.post(`${s.at}backfills/${first.body.backfill_id}/cancel/`, {})).status).toBe(200);
    const second = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T09:00:00Z',
      end_at: '2024-05-01T09:05:00Z',
    });
    expect(second.status).toBe(201);
    expect(await inFlight()).toEqual([second.body.backfill_id]);
    expect((await listBackfills(s.id)).map((b) => b.id)).not.toContain(finished[1]!.id);
  }, 60_000);

  it('cancels a backfill: no more runs are written, its queued runs end Cancelled without executing, the pending count is freed', async () => {
    const s = await setup();
    // 1,234 windows: the request writes the first 100, the rest would follow tick by tick.
    const res = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-04-27T03:40:00Z',
      end_at: '2024-05-01T10:30:00Z',
    });
    expect(res.status).toBe(201);
    const at = `${s.at}backfills/${res.body.backfill_id}/`;
    const cancelled = await s.c.post(`${at}cancel/`, {});
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'Cancelled', finished_at: expect.any(String) });
    let uploads = 0;
    // A tick reaches 50 runs of an organization: two ticks reach the 100 written.
    for (const tickAt of ['2024-05-01T10:33:00Z', '2024-05-01T10:38:00Z'])
      await runScheduler(new Date(tickAt), async () => {
        uploads += 1;
      });
    expect(uploads).toBe(0);
    const runs = (await s.c.get(`${s.at}runs/?limit=1000`)).body.results;
    expect(runs).toHaveLength(100);
    expect(new Set(runs.map((r: any) => r.status))).toEqual(new Set(['Cancelled']));
    const ledger = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.exportBackfillLedger(s.id), ConsistentRead: true }),
    );
    expect(ledger.Item?.pending_runs).toBe(0);
    expect((await s.c.get(at)).body).toMatchObject({
      status: 'Cancelled',
      progress: { total_runs: 1234, finished_runs: 1234 },
    });
    // Cancelling again answers the same; a finished backfill cannot be cancelled.
    expect((await s.c.post(`${at}cancel/`, {})).body.status).toBe('Cancelled');
    const done = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-05-01T10:30:00Z',
      end_at: '2024-05-01T10:32:00Z',
    });
    await runScheduler(new Date('2024-05-01T10:34:00Z'), noPut);
    expect((await s.c.post(`${s.at}backfills/${done.body.backfill_id}/cancel/`, {})).status).toBe(409);
    expect((await s.c.get(`${s.at}backfills/${randomUUID()}/`)).status).toBe(404);
  }, 60_000);
});

describe('runs as a resource', () => {
  it('lists runs in cursor pages with status, after/before and window ordering; retrieves one', async () => {
    const s = await setup();
    await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T10:00:00Z', end_at: '2024-05-01T10:15:00Z' });
    await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T09:00:00Z', end_at: '2024-05-01T09:10:00Z' });
    const fails = async (_cfg: Record<string, unknown>, key: string) => {
      if (key.includes('T09:05:00.000Z-')) throw new Error('destination down');
    };
    await runScheduler(new Date('2024-05-01T10:33:00Z'), fails);
    const byWindow = await s.c.get(`${s.at}runs/?ordering=data_interval_start&limit=2`);
    expect(byWindow.status).toBe(200);
    expect(byWindow.body.results.map((r: any) => r.data_interval_start)).toEqual([
      '2024-05-01T09:00:00.000Z',
      '2024-05-01T09:05:00.000Z',
    ]);
    const rest = new URL(byWindow.body.next);
    const page2 = await s.c.get(`${rest.pathname}${rest.search}`);
    expect(page2.body.results.map((r: any) => r.data_interval_start)).toEqual([
      '2024-05-01T10:00:00.000Z',
      '2024-05-01T10:05:00.000Z',
    ]);
    const last = new URL(page2.body.next);
    const page3 = await s.c.get(`${last.pathname}${last.search}`);
    expect(page3.body.results.map((r: any) => r.data_interval_start)).toEqual(['2024-05-01T10:10:00.000Z']);
    expect(page3.body.next).toBeNull();
    // A forged cursor (not a key this listing returns, or outside its after/before range) is a 400, not a 500.
    for (const query of [
      'cursor=%7B%22a%22%3A1%7D',
      'ordering=data_interval_start&cursor=RUN%23x',
      `ordering=data_interval_start&before=2024-05-01T09:00:00Z&cursor=${encodeURIComponent(new URL(byWindow.body.next).searchParams.get('cursor')!)}`,
    ]) {
      const forged = await s.c.get(`${s.at}runs/?${query}`);
      expect(forged.status, query).toBe(400);
      expect(forged.body).toMatchObject({ type: 'validation_error', attr: 'cursor', detail: 'Invalid cursor.' });
    }
    const desc = await s.c.get(
      `${s.at}runs/?ordering=-data_interval_start&after=2024-05-01T09:05:00Z&before=2024-05-01T10:10:00Z`,
    );
    expect(desc.body.results.map((r: any) => r.data_interval_start)).toEqual([
      '2024-05-01T10:05:00.000Z',
      '2024-05-01T10:00:00.000Z',
      '2024-05-01T09:05:00.000Z',
    ]);
    const retryable = await s.c.get(`${s.at}runs/?status=FailedRetryable`);
    expect(retryable.body.results).toHaveLength(1);
    const run = retryable.body.results[0];
    expect(run).toMatchObject({
      data_interval_start: '2024-05-01T09:05:00.000Z',
      latest_error: expect.stringContaining('destination down'),
      records_failed: 0,
      bytes_exported: 0,
      backfill: expect.any(String),
    });
    const one = await s.c.get(`${s.at}runs/${run.id}/`);
    expect(one.body).toEqual(run);
    expect((await s.c.get(`${s.at}runs/${randomUUID()}/`)).status).toBe(404);
    const bad = await s.c.get(`${s.at}runs/?status=Nope`);
    expect(bad.status).toBe(400);
  });

  it("retries a run as a one-window backfill (201 {backfill_id}); cancels a queued run so it never executes; shows a run's logs", async () => {
    const s = await setup();
    await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T10:00:00Z', end_at: '2024-05-01T10:10:00Z' });
    const runs = (await s.c.get(`${s.at}runs/?ordering=data_interval_start`)).body.results;
    expect(runs.map((r: any) => r.status)).toEqual(['Starting', 'Starting']);
    const cancelled = await s.c.post(`${s.at}runs/${runs[1].id}/cancel/`, {});
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('Cancelled');
    const keysPut: string[] = [];
    await runScheduler(new Date('2024-05-01T10:33:00Z'), async (_c, key) => {
      keysPut.push(key);
    });
    expect(keysPut.some((k) => k.includes('T10:05:00.000Z-'))).toBe(false);
    expect((await s.c.get(`${s.at}runs/${runs[0].id}/`)).body.status).toBe('Completed');
    expect((await s.c.get(`${s.at}runs/${runs[1].id}/`)).body.status).toBe('Cancelled');
    const backfill = (await s.c.get(`${s.at}backfills/`)).body.results[0];
    expect(backfill).toMatchObject({ status: 'Completed', progress: { finished_runs: 2 } });
    // A finished run cannot be cancelled.
    const late = await s.c.post(`${s.at}runs/${runs[0].id}/cancel/`, {});
    expect(late.status).toBe(409);
    expectErrorShape(late.body);
    const retried = await s.c.post(`${s.at}runs/${runs[0].id}/retry/`, {});
    expect(retried.status).toBe(201);
    expect(Object.keys(retried.body)).toEqual(['backfill_id']);
    expect((await s.c.get(`${s.at}backfills/${retried.body.backfill_id}/`)).body).toMatchObject({
      start_at: '2024-05-01T10:00:00.000Z',
      end_at: '2024-05-01T10:05:00.000Z',
      progress: { total_runs: 1 },
    });
    const again = (await s.c.get(`${s.at}runs/?status=Starting`)).body.results;
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({
      data_interval_start: '2024-05-01T10:00:00.000Z',
      backfill: retried.body.backfill_id,
    });
    const logs = await s.c.get(`${s.at}runs/${runs[0].id}/logs/`);
    expect(logs.status).toBe(200);
    expect(logs.body.results.length).toBeGreaterThan(0);
    expect(logs.body.results.every((l: any) => l.run_id === runs[0].id)).toBe(true);
    expect(logs.body.results[0].message).toMatch(/^Exported 0 record/);
  });
});

describe('a failed run', () => {
  it('counts the rows it read but could not deliver in records_failed', async () => {
    const s = await setup();
    await api.as().post('/batch', {
      api_key: s.token,
      batch: ['a', 'b', 'c'].map((d) => ({ event: 'paid', distinct_id: d, uuid: randomUUID() })),
    });
    await s.c.post(`${s.at}backfills/`, { start_at: '2024-05-01T10:30:00Z', end_at: '2024-05-01T10:32:00Z' });
    await runScheduler(new Date('2024-05-01T10:33:00Z'), async () => {
      throw new Error('destination down');
    });
    const [run] = (await s.c.get(`${s.at}runs/`)).body.results;
    expect(run).toMatchObject({ status: 'FailedRetryable', records_failed: 3, records_completed: 0 });
  });
});

describe('pause and unpause', () => {
  it('pauses and unpauses; {"backfill": true} backfills the paused gap', async () => {
    const s = await setup({ end_at: null });
    const paused = await s.c.post(`${s.at}pause/`, {});
    expect(paused.status).toBe(200);
    expect((await s.c.get(s.at)).body).toMatchObject({ paused: true, last_paused_at: '2024-05-01T10:32:00.000Z' });
    // The export was paused at 09:00 (the clock is frozen: the item says so).
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.batchExport(s.org.id, s.id),
        UpdateExpression: 'SET last_paused_at = :t',
        ExpressionAttributeValues: { ':t': '2024-05-01T09:00:00.000Z' },
      }),
    );
    const resumed = await s.c.post(`${s.at}unpause/`, { backfill: true });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ paused: false, backfill_id: expect.any(String) });
    expect((await s.c.get(s.at)).body.paused).toBe(false);
    expect((await s.c.get(`${s.at}backfills/${resumed.body.backfill_id}/`)).body).toMatchObject({
      start_at: '2024-05-01T09:00:00.000Z',
      end_at: '2024-05-01T10:30:00.000Z',
      progress: { total_runs: 18 },
    });
    // Without backfill, nothing is queued.
    await s.c.post(`${s.at}pause/`, {});
    const plain = await s.c.post(`${s.at}unpause/`, {});
    expect(plain.body).toEqual({ paused: false });
    expect((await s.c.get(`${s.at}backfills/`)).body.results).toHaveLength(1);
    const keysInBucket = await s3.send(new ListObjectsV2Command({ Bucket: s.bucketName }));
    expect(keysInBucket.Contents ?? []).toEqual([]);
  });
});

describe("schedules in the customer's time zone", () => {
  const windowsOf = async (s: Awaited<ReturnType<typeof setup>>) =>
    (await s.c.get(`${s.at}runs/?ordering=data_interval_start`)).body.results.map((r: any) => [
      r.data_interval_start,
      r.data_interval_end,
    ]);

  it('runs a daily export at local midnight in New York across the fall-back day (a 25-hour window)', async () => {
    const s = await setup({
      interval: 'day',
      end_at: null,
      timezone: 'America/New_York',
      offset_hour: 0,
      start_at: '2024-11-02T04:00:00Z',
    });
    expect((await s.c.get(s.at)).body).toMatchObject({
      timezone: 'America/New_York',
      offset_hour: 0,
      offset_day: null,
    });
    await runScheduler(new Date('2024-11-05T06:00:00Z'), noPut, noTimeLeft);
    expect(await windowsOf(s)).toEqual([
      ['2024-11-02T04:00:00.000Z', '2024-11-03T04:00:00.000Z'],
      ['2024-11-03T04:00:00.000Z', '2024-11-04T05:00:00.000Z'],
      ['2024-11-04T05:00:00.000Z', '2024-11-05T05:00:00.000Z'],
    ]);
  });

  it('backfills a daily New York export across the spring-forward day (a 23-hour window), on local-midnight dates only', async () => {
    const s = await setup({ interval: 'day', end_at: null, timezone: 'America/New_York' });
    const utcMidnight = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-03-09T00:00:00Z',
      end_at: '2024-03-12T04:00:00Z',
    });
    expect(utcMidnight.status).toBe(400);
    expect(utcMidnight.body.detail).toContain('00:00 America/New_York');
    const res = await s.c.post(`${s.at}backfills/`, {
      start_at: '2024-03-09T05:00:00Z',
      end_at: '2024-03-12T04:00:00Z',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await windowsOf(s)).toEqual([
      ['2024-03-09T05:00:00.000Z', '2024-03-10T05:00:00.000Z'],
      ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z'],
      ['2024-03-11T04:00:00.000Z', '2024-03-12T04:00:00.000Z'],
    ]);
  });

  it('runs a weekly export on offset_day at offset_hour, local time', async () => {
    // Mondays 09:00 in Berlin (07:00 UTC in summer); the first window starts on the first Monday after start_at.
    const s = await setup({
      interval: 'week',
      end_at: null,
      timezone: 'Europe/Berlin',
      offset_day: 1,
      offset_hour: 9,
      start_at: '2024-05-06T07:00:00Z',
    });
    await runScheduler(new Date('2024-05-21T00:00:00Z'), noPut, noTimeLeft);
    expect(await windowsOf(s)).toEqual([
      ['2024-05-06T07:00:00.000Z', '2024-05-13T07:00:00.000Z'],
      ['2024-05-13T07:00:00.000Z', '2024-05-20T07:00:00.000Z'],
    ]);
  });

  it.each([
    [{ interval: 'day', timezone: 'Mars/Olympus' }, 'timezone'],
    [{ interval: 'day', offset_day: 2 }, 'offset_day'],
    [{ interval: 'hour', offset_hour: 3 }, 'offset_hour'],
    [{ interval: 'week', offset_hour: 24 }, 'offset_hour'],
    [{ interval: 'week', offset_day: 7 }, 'offset_day'],
  ])('refuses %j with 400 on %s', async (fields, attr) => {
    const p = await newProject(api.as);
    const res = await api.as(p.key).post(`/api/organizations/${p.org.id}/batch_exports/`, {
      name: 'Zoned',
      destination: destination('any-bucket'),
      ...fields,
    });
    expect([res.status, res.body.attr]).toEqual([400, attr]);
    expectErrorShape(res.body);
  });
});
