import { GetCommand, QueryCommand } from '#shared/aws/dynamodb.ts';
import { describe, expect, inject, it } from 'vitest';
import { db, tableName } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { listLogs, writeLog } from '#shared/db/batch-exports.ts';
import { batchPut } from '#shared/db/batch.ts';
import { MAX_EXPORTS_PER_ORGANIZATION } from '#shared/domain/batch-exports.ts';
import { uuidv7 } from '#shared/ids.ts';
import { expectErrorShape, newKey, useApi, type Client } from '../support/api.ts';

const api = useApi();

// Far-future start: these exports never become due, so scheduler ticks in other test files leave them alone.
const FUTURE = '2099-01-01T00:00:00Z';
const s3 = (config: Record<string, unknown> = {}) => ({
  type: 'S3',
  config: {
    bucket_name: 'my-bucket',
    region: 'us-east-1',
    prefix: 'posthog/{year}/{month}',
    aws_access_key_id: 'AKIA_TEST',
    aws_secret_access_key: 'super-secret-value',
    ...config,
  },
});

async function org(): Promise<{ c: Client; base: string; orgId: string; projectId: number }> {
  const { key } = await newKey();
  const c = api.as(key);
  const o = (await c.post('/api/organizations', { name: 'Exporter' })).body;
  return { c, base: `/api/organizations/${o.id}/batch_exports/`, orgId: o.id, projectId: o.teams[0].id };
}

describe('batch export create and read', () => {
  it('creates with the spec fields, the default project and model, and never returns the secret', async () => {
    const { c, base, projectId } = await org();
    const res = await c.post(base, { name: 'Hourly S3', destination: s3(), interval: 'hour', start_at: FUTURE });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Hourly S3',
      model: 'events',
      interval: 'hour',
      paused: false,
      team_id: projectId,
      latest_runs: [],
      last_paused_at: null,
      start_at: FUTURE,
      end_at: null,
    });
    expect(res.body.destination).toEqual({
      type: 'S3',
      config: { bucket_name: 'my-bucket', region: 'us-east-1', prefix: 'posthog/{year}/{month}' },
    });
    expect(res.text).not.toContain('super-secret-value');
    expect(res.text).not.toContain('AKIA_TEST');
    const got = await c.get(`${base}${res.body.id}/`);
    expect(got.body).toEqual(res.body);
    expect((await c.get(base)).body).toMatchObject({ count: 1, results: [{ id: res.body.id }] });
  });

  it.each([
    [{ destination: { type: 'Snowflake', config: {} } }, 'destination__type'],
    [{ destination: s3({ bucket_name: undefined }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ colour: 'blue' }) }, 'destination__config'],
    [{ destination: s3({ compression: 'zip' }) }, 'destination__config__compression'],
    [{ destination: s3({ region: 5 }) }, 'destination__config__region'],
    [{ destination: s3({ region: 'us-east-9' }) }, 'destination__config__region'],
    [{ destination: s3({ region: 'eu-west-1 ' }) }, 'destination__config__region'],
    [{ destination: s3({ bucket_name: 'My_Bucket' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: 'ab' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: 'b'.repeat(64) }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: 'my..bucket' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: '-bucket' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: '192.168.5.4' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: 'xn--bucket' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ bucket_name: 'my-bucket-s3alias' }) }, 'destination__config__bucket_name'],
    [{ destination: s3({ prefix: 'posthog/{week}' }) }, 'destination__config__prefix'],
    [{ destination: s3({ prefix: 'posthog/../other' }) }, 'destination__config__prefix'],
    [{ destination: s3({ prefix: 'p'.repeat(952) }) }, 'destination__config__prefix'],
    [{ destination: s3({ endpoint_url: 'http://s3.example.com' }) }, 'destination__config__endpoint_url'],
    [{ destination: s3({ endpoint_url: 'ftp://s3.example.com' }) }, 'destination__config__endpoint_url'],
    [{ destination: s3({ endpoint_url: 'https://user:pw@s3.example.com' }) }, 'destination__config__endpoint_url'],
    [{ destination: s3({ endpoint_url: 'https://10.0.0.5' }) }, 'destination__config__endpoint_url'],
    [{ destination: s3({ endpoint_url: 'http://169.254.169.254/latest' }) }, 'destination__config__endpoint_url'],
    [
      {
        destination: s3({
          role_arn: 'arn:aws:iam::123:role/x',
          aws_access_key_id: undefined,
          aws_secret_access_key: undefined,
        }),
      },
      'destination__config__role_arn',
    ],
    [
      {
        destination: s3({
          role_arn: 'arn:aws:s3:::bucket',
          aws_access_key_id: undefined,
          aws_secret_access_key: undefined,
        }),
      },
      'destination__config__role_arn',
    ],
    [{ destination: s3({ aws_access_key_id: undefined, aws_secret_access_key: undefined }) }, 'destination__config'],
    [{ destination: s3({ aws_access_key_id: null, aws_secret_access_key: null }) }, 'destination__config'],
    [{ destination: s3({ role_arn: 'arn:aws:iam::123456789012:role/exporter' }) }, 'destination__config'],
    [{ destination: s3({ aws_secret_access_key: undefined }) }, 'destination__config__aws_secret_access_key'],
    [{ destination: s3({ aws_secret_access_key: '' }) }, 'destination__config__aws_secret_access_key'],
    [{ interval: 'every 7 minutes' }, 'interval'],
    [{ start_at: '2024-05-02T00:00:00Z', end_at: '2024-05-01T00:00:00Z' }, 'end_at'],
    [{ start_at: '2024-05-02 00:00:00' }, 'start_at'],
    [{ hogql_query: 'SELECT * FROM events' }, 'hogql_query'],
    [{ filters: [{ key: 'x', operator: 'bogus', value: 1 }] }, 'filters__0__operator'],
    [{ team_id: 999999 }, 'team_id'],
    [{ model: 'sessions' }, 'model'],
  ])('rejects %j with 400 on %s and creates nothing', async (override, attr) => {
    const { c, base } = await org();
    const body = JSON.parse(
      JSON.stringify({ name: 'Bad', destination: s3(), interval: 'hour', start_at: FUTURE, ...override }),
    );
    const res = await c.post(base, body);
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body.attr).toBe(attr);
    expect((await c.get(base)).body.count).toBe(0);
  });

  it.each([
    ['https://[::a9fe:a9fe]/', '::a9fe:a9fe is IPv4-compatible IPv6 (::/96), carrying 169.254.169.254 is link-local'],
    ['https://[::ffff:169.254.169.254]/', 'IPv4-mapped IPv6 (::ffff:0:0/96), carrying 169.254.169.254'],
    ['https://[64:ff9b::10.0.0.1]/', 'NAT64 (64:ff9b::/96), carrying 10.0.0.1 is private'],
    ['https://[2002:a9fe:a9fe::1]/', '6to4 (2002::/16), carrying 169.254.169.254'],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'Teredo (2001::/32)'],
    ['https://[ff02::1]/', 'multicast (ff00::/8)'],
    ['https://0xa9fea9fe/latest', '169.254.169.254 is link-local (169.254.0.0/16)'],
    ['https://2852039166/', '169.254.169.254 is link-local'],
    ['https://198.18.0.1/', 'benchmarking (198.18.0.0/15)'],
    ['https://192.0.0.170/', 'IETF protocol assignments (192.0.0.0/24)'],
    ['https://240.0.0.1/', 'reserved (240.0.0.0/4)'],
    ['https://255.255.255.255/', 'broadcast (255.255.255.255/32)'],
    ['https://100.64.0.1/', 'carrier-grade NAT'],
    ['https://localhost.:9000/', 'not localhost'],
  ])('refuses the endpoint %s with a 400 naming the range (%s), in the error shape', async (endpoint_url, named) => {
    const { c, base } = await org();
    const res = await c.post(base, {
      name: 'Inward',
      destination: { type: 'S3Compatible', config: { bucket_name: 'b-1', prefix: 'p', endpoint_url } },
      interval: 'hour',
      start_at: FUTURE,
    });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'destination__config__endpoint_url' });
    expect(res.body.detail).toContain(named);
    expect((await c.get(base)).body.count).toBe(0);
  });

  it.each([
    ['posthog/{week}/{Year}', 'Unknown placeholders in the prefix: {week}, {Year}.'],
    ['exports/./{year}/..', 'The prefix must not have "." or ".." path segments (it has "." and "..").'],
    [
      `{data_interval_start}/${'p'.repeat(924)}`,
      "reach 1025 bytes (placeholders at their longest, plus up to 72 bytes of file name), over S3's limit of 1,024 bytes",
    ],
  ])('refuses the prefix %s with a 400 on the prefix field that says why, and creates nothing', async (prefix, why) => {
    const { c, base } = await org();
    const res = await c.post(base, { name: 'P', destination: s3({ prefix }), interval: 'hour', start_at: FUTURE });
    expect(res.status).toBe(400);
    expectErrorShape(res.body);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'destination__config__prefix' });
    expect(res.body.detail).toContain(why);
    expect((await c.get(base)).body.count).toBe(0);
    const atCap = `{data_interval_start}/${'p'.repeat(923)}`;
    expect(
      (await c.post(base, { name: 'P', destination: s3({ prefix: atCap }), interval: 'hour', start_at: FUTURE }))
        .status,
    ).toBe(201);
  });

  it('takes a loopback endpoint only at the origins the local runtime names (its s3rver), not any loopback', async () => {
    const { c, base } = await org();
    const create = (endpoint_url: string) =>
      c.post(base, {
        name: 'Local',
        destination: {
          type: 'S3Compatible',
          config: { bucket_name: 'b-1', prefix: 'p', endpoint_url, aws_access_key_id: 'K', aws_secret_access_key: 'S' },
        },
        interval: 'hour',
        start_at: FUTURE,
      });
    const s3rver = new URL(inject('s3Endpoint'));
    for (const other of [
      `http://127.0.0.1:${Number(s3rver.port) + 1}`,
      `http://localhost:${s3rver.port}`,
      `https://127.0.0.1:${s3rver.port}`,
    ]) {
      const res = await create(other);
      expect(res.status, other).toBe(400);
      expect(res.body.attr).toBe('destination__config__endpoint_url');
    }
    expect((await create(s3rver.origin)).status).toBe(201);
  });

  it('accepts a destination that names a role instead of keys, in any partition and with a path', async () => {
    const { c, base } = await org();
    for (const role_arn of [
      'arn:aws:iam::123456789012:role/exports/posthog-writer',
      'arn:aws-cn:iam::123456789012:role/w',
      'arn:aws-us-gov:iam::123456789012:role/w',
    ]) {
      const config = { bucket_name: 'my.dotted-bucket', region: 'cn-north-1', prefix: 'p', role_arn };
      const res = await c.post(base, {
        name: 'Role',
        destination: { type: 'S3', config },
        interval: 'hour',
        start_at: FUTURE,
      });
      expect(res.status).toBe(201);
      expect(res.body.destination.config).toEqual(config);
    }
  });

  it('stores the secret sealed: the raw item holds neither the secret nor the key id in plain text', async () => {
    const { c, base, orgId } = await org();
    const res = await c.post(base, { name: 'Sealed', destination: s3(), interval: 'hour', start_at: FUTURE });
    expect(res.status).toBe(201);
    const item = (
      await db().send(new GetCommand({ TableName: tableName(), Key: keys.batchExport(orgId, res.body.id) }))
    ).Item!;
    const raw = JSON.stringify(item);
    expect(raw).toContain('my-bucket');
    expect(raw).not.toContain('super-secret-value');
    expect(raw).not.toContain('AKIA_TEST');
    expect(raw).not.toContain(Buffer.from('super-secret-value').toString('base64').slice(0, 16));
    expect(JSON.parse(item.destination).sealed_secrets).toMatchObject({ v: 1, wrap: 'local' });
    // Nothing else written for the export (its log) holds it either.
    const rest = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.batchExportPartition(res.body.id).pk },
      }),
    );
    expect(JSON.stringify(rest.Items)).not.toMatch(/super-secret-value|AKIA_TEST/);
  });

  it("answers 404 for another organization's export", async () => {
    const a = await org();
    const b = await org();
    const created = await a.c.post(a.base, { name: 'Mine', destination: s3(), interval: 'day', start_at: FUTURE });
    expect((await b.c.get(`${b.base}${created.body.id}/`)).status).toBe(404);
    expect((await b.c.get(`${a.base}${created.body.id}/`)).status).toBe(404);
  });
});

describe('batch export update, pause, delete, logs', () => {
  it('merges config on PATCH keeping secrets, pauses with last_paused_at and logs it', async () => {
    const { c, base } = await org();
    const created = (await c.post(base, { name: 'E', destination: s3(), interval: 'hour', start_at: FUTURE })).body;
    const patched = await c.patch(`${base}${created.id}/`, {
      destination: { type: 'S3', config: { prefix: 'new/' } },
      paused: true,
    });
    expect(patched.status).toBe(200);
    expect(patched.body.destination.config).toEqual({ bucket_name: 'my-bucket', region: 'us-east-1', prefix: 'new/' });
    expect(patched.body.paused).toBe(true);
    expect(patched.body.last_paused_at).toBeTruthy();
    expect((await c.patch(`${base}${created.id}/`, { destination: { type: 'S3', config: { nope: 1 } } })).status).toBe(
      400,
    );
    // Keys and a role do not mix; switching to a role drops the keys.
    const both = await c.patch(`${base}${created.id}/`, {
      destination: { type: 'S3', config: { role_arn: 'arn:aws:iam::123456789012:role/w' } },
    });
    expect([both.status, both.body.attr]).toEqual([400, 'destination__config']);
    const role = await c.patch(`${base}${created.id}/`, {
      destination: {
        type: 'S3',
        config: { role_arn: 'arn:aws:iam::123456789012:role/w', aws_access_key_id: null, aws_secret_access_key: null },
      },
    });
    expect(role.status).toBe(200);
    expect(role.body.destination.config.role_arn).toBe('arn:aws:iam::123456789012:role/w');
    const neither = await c.patch(`${base}${created.id}/`, { destination: { type: 'S3', config: { role_arn: null } } });
    expect([neither.status, neither.body.attr]).toEqual([400, 'destination__config']);
    expect(
      (await c.patch(`${base}${created.id}/`, { destination: { type: 'S3', config: { region: 'moon-1' } } })).body.attr,
    ).toBe('destination__config__region');
    expect(
      (
        await c.patch(`${base}${created.id}/`, {
          destination: {
            type: 'S3',
            config: {
              role_arn: null,
              aws_access_key_id: 'AKIA_TEST',
              aws_secret_access_key: 'super-secret-value',
              prefix: 'new/',
            },
          },
        })
      ).status,
    ).toBe(200);
    expect((await c.patch(`${base}${created.id}/`, { interval: 'fortnightly' })).status).toBe(400);
    const logs = await c.get(`${base}${created.id}/logs/`);
    expect(logs.status).toBe(200);
    expect(logs.body.results.map((l: any) => l.message)).toEqual([
      expect.stringMatching(/^Batch export paused/),
      expect.stringMatching(/^Batch export created/),
    ]);
    expect(Object.keys(logs.body.results[0]).sort()).toEqual([
      'instance_id',
      'level',
      'log_source_id',
      'message',
      'run_id',
      'timestamp',
    ]);
    expect(logs.body.results[0].log_source_id).toBe(created.id);
    expect((await c.get(`${base}${created.id}/logs/?level=ERROR`)).body.count).toBe(0);
    expect((await c.get(`${base}${created.id}/logs/?level=nope`)).status).toBe(400);
  });

  it("narrows logs by search, after and before (PostHog's filters), reading a bounded window of entries", async () => {
    const { c, base } = await org();
    const created = (await c.post(base, { name: 'Logged', destination: s3(), interval: 'hour', paused: true })).body;
    const at = (minute: number) => `2026-11-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
    for (const [minute, message] of [
      [1, 'Run started'],
      [2, 'Upload FAILED: access denied'],
      [3, 'Run finished'],
      [4, 'upload failed again'],
    ] as const)
      await writeLog(created.id, { id: uuidv7(), timestamp: at(minute), level: 'INFO', message, run_id: null });
    const messages = async (q: string) =>
      (await c.get(`${base}${created.id}/logs/?${q}`)).body.results.map((l: any) => l.message);
    expect(await messages('search=upload%20failed')).toEqual(['upload failed again', 'Upload FAILED: access denied']);
    // Both bounds exclusive, as PostHog's.
    expect(await messages(`after=${at(1)}&before=${at(4)}`)).toEqual(['Run finished', 'Upload FAILED: access denied']);
    expect(await messages(`before=${at(2)}`)).toEqual(['Run started']);
    const bad = await c.get(`${base}${created.id}/logs/?search=${'x'.repeat(201)}`);
    expect([bad.status, bad.body.attr]).toEqual([400, 'search']);
    expect((await c.get(`${base}${created.id}/logs/?limit=501`)).status).toBe(400);
    expect((await c.get(`${base}${created.id}/logs/?after=yesterday`)).body.attr).toBe('after');
    // The read stops at its budget (10,000 in the API; 3 here): the newest that many, and it says so.
    const now = new Date(Date.parse(at(5)));
    const read = await listLogs(created.id, now, { before: at(5) }, 3);
    expect([read.entries.map((e) => e.message), read.complete]).toEqual([
      ['upload failed again', 'Run finished', 'Upload FAILED: access denied'],
      false,
    ]);
    const older = await listLogs(created.id, now, { before: at(3) }, 3);
    expect(older.complete).toBe(true);
    expect((await c.get(`${base}${created.id}/logs/`)).body.count_capped).toBeUndefined();
  });

  it(`an organization has at most ${MAX_EXPORTS_PER_ORGANIZATION} exports: the next is a 400 naming the cap, and nothing is stored`, async () => {
    const { c, base, orgId } = await org();
    // Items standing in for exports: the cap counts the organization's export keys.
    await batchPut(
      Array.from({ length: MAX_EXPORTS_PER_ORGANIZATION - 1 }, (_, i) => ({
        ...keys.batchExport(orgId, `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`),
        entity: 'BatchExport',
      })),
    );
    const last = await c.post(base, { name: 'Last', destination: s3(), interval: 'hour', paused: true });
    expect(last.status).toBe(201);
    const over = await c.post(base, { name: 'Over', destination: s3(), interval: 'hour', paused: true });
    expect([over.status, over.body.detail]).toEqual([
      400,
      `An organization may have at most ${MAX_EXPORTS_PER_ORGANIZATION} batch exports; delete one to create another.`,
    ]);
    expectErrorShape(over.body);
    const stored = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.batchExportsOfOrganization(orgId).pk },
        Select: 'COUNT',
      }),
    );
    expect(stored.Count).toBe(MAX_EXPORTS_PER_ORGANIZATION);
  });

  it('deletes the export with its runs and logs; a second delete is 404', async () => {
    const { c, base } = await org();
    const created = (await c.post(base, { name: 'Gone', destination: s3(), interval: 'hour', paused: true })).body;
    const backfill = await c.post(`${base}${created.id}/backfill/`, {
      start_at: '2024-01-01T00:00:00Z',
      end_at: '2024-01-01T03:00:00Z',
    });
    expect(backfill.status).toBe(200);
    expect(backfill.body).toMatchObject({ runs: 3 });
    expect(backfill.body.note).toMatch(/no duplicate rows/);
    expect((await c.get(`${base}${created.id}/`)).body.latest_runs).toHaveLength(3);
    expect((await c.delete(`${base}${created.id}/`)).status).toBe(204);
    expect((await c.get(`${base}${created.id}/`)).status).toBe(404);
    expect((await c.get(`${base}${created.id}/logs/`)).status).toBe(404);
    expect((await c.delete(`${base}${created.id}/`)).status).toBe(404);
  });

  it.each([
    [{ start_at: '2024-01-01T00:00:00Z', end_at: '2099-01-01T00:00:00Z' }, 'end_at'],
    [{ start_at: '2024-01-02T00:00:00Z', end_at: '2024-01-01T00:00:00Z' }, 'start_at'],
    [{ start_at: '2024-01-01T00:00:00', end_at: '2024-01-01T05:00:00Z' }, 'start_at'],
    [{ start_at: '2024-01-01T00:00:00Z' }, 'end_at'],
    [{ start_at: '1999-12-31T23:00:00Z', end_at: '2000-01-01T01:00:00Z' }, 'start_at'],
  ])('refuses the backfill %j with 400 on %s', async (body, attr) => {
    const { c, base } = await org();
    const created = (await c.post(base, { name: 'B', destination: s3(), interval: 'hour', paused: true })).body;
    const res = await c.post(`${base}${created.id}/backfill/`, body);
    expect(res.status).toBe(400);
    expect(res.body.attr).toBe(attr);
    expect((await c.get(`${base}${created.id}/`)).body.latest_runs).toEqual([]);
  });

  it.each([
    [
      'week',
      '1990-01-01T00:00:00Z',
      '2024-01-01T00:00:00Z',
      /cannot start before 2000-01-01T00:00:00.000Z; start_at is 1990-01-01T00:00:00.000Z/,
    ],
    [
      'every 5 minutes',
      '2000-01-01T00:00:00Z',
      '2024-01-01T00:00:00Z',
      /at most 10000 intervals; this one covers 2524608\./,
    ],
    ['hour', '2023-01-01T00:00:00Z', '2024-02-21T17:00:00Z', /at most 10000 intervals; this one covers 10001\./],
  ])(
    'refuses a %s backfill from %s with a detail naming the limit, and queues no run',
    async (interval, start_at, end_at, detail) => {
      const { c, base } = await org();
      const created = (await c.post(base, { name: 'Capped', destination: s3(), interval, paused: true })).body;
      const started = performance.now();
      const res = await c.post(`${base}${created.id}/backfill/`, { start_at, end_at });
      // Counted, not built: 2.5 million 5-minute windows took 18 s and 700 MB to build before the refusal.
      expect(performance.now() - started).toBeLessThan(5000);
      expect(res.status).toBe(400);
      expectErrorShape(res.body);
      expect(res.body).toMatchObject({ attr: 'start_at', detail: expect.stringMatching(detail) });
      expect((await c.get(`${base}${created.id}/`)).body.latest_runs).toEqual([]);
      expect((await c.get(`${base}${created.id}/logs/`)).body.results.map((l: any) => l.message)).toEqual([
        expect.stringMatching(/^Batch export created/),
      ]);
    },
  );
});
