import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, exportLoopbackOrigins } from '#shared/config.ts';
import {
  AWS_REGIONS,
  bucketProblem,
  endpointProblem,
  regionProblem,
  roleArnProblem,
} from '#shared/exports/destination-rules.ts';
import { encodeRows, objectKey, renderPrefix } from '#shared/exports/files.ts';
import { parseExportQuery } from '#shared/exports/hogql.ts';
import {
  ceilBoundary,
  firstWindowEnd,
  floorBoundary,
  INTERVALS,
  windowCount,
  windowsBetween,
} from '#shared/exports/intervals.ts';
import { ValidationError } from '#shared/errors.ts';
import { readSlices, RUN_LEASE_MS, takeTurns } from '#shared/domain/export-runs.ts';
import { workers } from '#functions/routes.ts';

const d = (iso: string) => new Date(iso);

describe('export intervals', () => {
  it.each([
    ['hour', '2024-05-01T10:20:00Z', '2024-05-01T10:00:00.000Z', '2024-05-01T11:00:00.000Z'],
    ['day', '2024-05-01T10:20:00Z', '2024-05-01T00:00:00.000Z', '2024-05-02T00:00:00.000Z'],
    ['week', '2024-05-01T10:20:00Z', '2024-04-28T00:00:00.000Z', '2024-05-05T00:00:00.000Z'],
    ['every 5 minutes', '2024-05-01T10:21:30Z', '2024-05-01T10:20:00.000Z', '2024-05-01T10:25:00.000Z'],
    ['every 15 minutes', '2024-05-01T10:21:30Z', '2024-05-01T10:15:00.000Z', '2024-05-01T10:30:00.000Z'],
  ] as const)('%s windows around %s: floor %s, ceil %s', (interval, t, floor, ceil) => {
    expect(floorBoundary(d(t), interval).toISOString()).toBe(floor);
    expect(ceilBoundary(d(t), interval).toISOString()).toBe(ceil);
  });

  it('first runs at the end of the first full interval, never for a window before start_at', () => {
    expect(firstWindowEnd(d('2024-05-01T10:20:00Z'), 'hour').toISOString()).toBe('2024-05-01T11:00:00.000Z');
    expect(firstWindowEnd(d('2024-05-01T11:00:00Z'), 'hour').toISOString()).toBe('2024-05-01T12:00:00.000Z');
    expect(firstWindowEnd(d('2024-05-01T10:20:00Z'), 'hour', d('2024-05-01T13:30:00Z')).toISOString()).toBe(
      '2024-05-01T15:00:00.000Z',
    );
  });

  it('covers a backfill range with aligned windows', () => {
    const w = windowsBetween(d('2024-05-01T10:30:00Z'), d('2024-05-01T13:00:00Z'), 'hour');
    expect(w.map((x) => x.start.toISOString().slice(11, 16))).toEqual(['10:00', '11:00', '12:00']);
  });

  it('counts the windows of a range by arithmetic, exactly as many as windowsBetween builds', () => {
    const ranges = [
      ['2024-05-01T10:30:00Z', '2024-05-01T13:00:00Z'],
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00.001Z'],
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z'],
      ['2024-05-01T10:21:30Z', '2024-05-01T10:20:00Z'],
      ['2024-02-28T23:59:59Z', '2024-03-31T01:00:00Z'],
      ['2023-12-30T12:00:00Z', '2024-01-07T00:00:00Z'],
      ['2024-04-27T23:59:59.999Z', '2024-05-12T00:00:00Z'],
    ];
    for (const interval of INTERVALS) {
      for (const [from, to] of ranges)
        expect([interval, from, to, windowCount(d(from!), d(to!), interval)]).toEqual([
          interval,
          from,
          to,
          windowsBetween(d(from!), d(to!), interval).length,
        ]);
    }
  });

  it('counts a range of millions of windows without building them', () => {
    const started = performance.now();
    // Year 1 to 9999 in 5-minute windows: about 1e9 windows, which windowsBetween could never hold.
    expect(windowCount(d('0001-01-01T00:00:00Z'), d('9999-12-31T23:59:59Z'), 'every 5 minutes')).toBe(1_051_792_992);
    expect(windowCount(d('2000-01-01T00:00:00Z'), d('2024-01-01T00:00:00Z'), 'day')).toBe(8766);
    expect(windowCount(d('2000-01-01T00:00:00Z'), d('2024-01-01T00:00:00Z'), 'week')).toBe(1254);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('export scheduling', () => {
  it('takes turns across organizations: every first run before any second run, order kept within each', () => {
    const hostile = Array.from({ length: 500 }, (_, i) => `a${i}`);
    const turns = takeTurns([hostile, ['b0'], ['c0', 'c1']]);
    expect(turns.slice(0, 6)).toEqual(['a0', 'b0', 'c0', 'a1', 'c1', 'a2']);
    expect(turns).toHaveLength(503);
    expect(turns.filter((x) => x.startsWith('a'))).toEqual(hostile);
    expect(takeTurns([])).toEqual([]);
  });

  it("leases a claimed run for longer than the exporter's invocation can live", () => {
    const exporter = workers.find((w) => w.name === 'run_batch_exports')!;
    expect(RUN_LEASE_MS).toBeGreaterThan(exporter.timeoutSeconds * 1000);
  });
});

describe('export window read slices', () => {
  const spans = (start: string, end: string) =>
    readSlices(new Date(start), new Date(end)).map(
      (x) => [x.start.toISOString(), x.end.getTime() - x.start.getTime()] as const,
    );

  it('cuts a window into contiguous half-open slices covering it exactly: 5 minutes, at most 48', () => {
    for (const [start, end, count] of [
      ['2024-05-01T10:00:00Z', '2024-05-01T10:05:00Z', 1],
      ['2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z', 12],
      ['2024-05-01T00:00:00Z', '2024-05-02T00:00:00Z', 48],
      ['2024-04-28T00:00:00Z', '2024-05-05T00:00:00Z', 48],
    ] as const) {
      const slices = readSlices(new Date(start), new Date(end));
      expect(slices).toHaveLength(count);
      expect(slices[0]!.start.toISOString()).toBe(new Date(start).toISOString());
      expect(slices.at(-1)!.end.toISOString()).toBe(new Date(end).toISOString());
      for (const [i, x] of slices.slice(1).entries()) expect(x.start.getTime()).toBe(slices[i]!.end.getTime());
    }
    expect(spans('2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z')[11]).toEqual(['2024-05-01T10:55:00.000Z', 300_000]);
    expect(spans('2024-05-01T00:00:00Z', '2024-05-02T00:00:00Z')[1]).toEqual(['2024-05-01T00:30:00.000Z', 1_800_000]);
    expect(readSlices(new Date('2024-05-01T10:00:00Z'), new Date('2024-05-01T10:00:00Z'))).toEqual([]);
  });
});

describe('export files', () => {
  const rows = [
    { uuid: 'u1', event: 'a,b', properties: { x: 1 } },
    { uuid: 'u2', event: 'c"d', properties: {} },
  ];

  it('writes JSON Lines with nested objects intact', () => {
    const { body, extension } = encodeRows(rows, ['uuid', 'event', 'properties'], 'JSONLines', 'none');
    expect(extension).toBe('jsonl');
    expect(
      body
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(rows);
  });

  it('writes CSV with quoting and nested values as JSON', () => {
    const { body } = encodeRows(rows, ['uuid', 'event', 'properties'], 'CSV', 'none');
    expect(body.toString()).toBe('uuid,event,properties\r\nu1,"a,b","{""x"":1}"\r\nu2,"c""d",{}\r\n');
  });

  it('compresses with gzip and brotli, naming the file accordingly', () => {
    const gz = encodeRows(rows, [], 'JSONLines', 'gzip');
    expect(gz.extension).toBe('jsonl.gz');
    expect(gunzipSync(gz.body).toString()).toBe(encodeRows(rows, [], 'JSONLines', 'none').body.toString());
    const br = encodeRows(rows, ['uuid'], 'CSV', 'brotli');
    expect(br.extension).toBe('csv.br');
    expect(brotliDecompressSync(br.body).toString()).toBe('uuid\r\nu1\r\nu2\r\n');
  });

  it('renders prefix variables and keeps keys deterministic per window', () => {
    const w = { start: d('2024-05-01T10:00:00Z'), end: d('2024-05-01T11:00:00Z') };
    expect(renderPrefix('exports/{year}/{month}/{day}/{hour}/{table}', w, 'events')).toBe(
      'exports/2024/05/01/10/events',
    );
    expect(objectKey('exports/{year}-{month}/', w, 'events', 'jsonl.gz')).toBe(
      'exports/2024-05/2024-05-01T10:00:00.000Z-2024-05-01T11:00:00.000Z.jsonl.gz',
    );
    expect(objectKey('', w, 'events', 'csv')).toBe('2024-05-01T10:00:00.000Z-2024-05-01T11:00:00.000Z.csv');
  });
});

describe('export hogql_query', () => {
  const source = {
    columns: { uuid: 'u1', event: 'signup' },
    properties: { $browser: 'Chrome', 'odd key': 1 },
    person_properties: { email: 'a@b.c' },
  };

  it('selects columns, event and person properties, with aliases', () => {
    const fields = parseExportQuery(
      "SELECT uuid, event AS name, properties.$browser AS browser, properties['odd key'], person.properties.email FROM events",
    );
    expect(fields.map((f) => f.alias)).toEqual(['uuid', 'name', 'browser', 'odd key', 'email']);
    expect(fields.map((f) => f.read(source))).toEqual(['u1', 'signup', 'Chrome', 1, 'a@b.c']);
  });

  it.each([
    'SELECT * FROM events',
    'SELECT uuid FROM persons',
    'SELECT uuid FROM events WHERE event = 1',
    'SELECT uuid FROM events JOIN persons',
    'SELECT (SELECT 1) FROM events',
    'SELECT nope FROM events',
    'SELECT uuid, event AS uuid FROM events',
    'DROP TABLE events',
  ])('refuses %s with 400 on hogql_query', (q) => {
    const error = (() => {
      try {
        parseExportQuery(q);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).attr).toBe('hogql_query');
  });
});

describe('export destination rules', () => {
  it('knows the commercial, China and GovCloud regions and nothing else', () => {
    for (const r of ['us-east-1', 'eu-central-2', 'ap-southeast-7', 'mx-central-1', 'cn-northwest-1', 'us-gov-west-1'])
      expect(regionProblem(r), r).toBeUndefined();
    for (const r of ['us-east-7', 'US-EAST-1', 'local', 'us-iso-east-1', '']) expect(regionProblem(r), r).toBeDefined();
    expect(AWS_REGIONS.size).toBe(40);
  });

  it("follows S3's bucket naming rules", () => {
    for (const b of ['abc', 'my-bucket', 'my.bucket.v2', '1bucket', 'a'.repeat(63)])
      expect(bucketProblem(b), b).toBeUndefined();
    for (const b of [
      'ab',
      'a'.repeat(64),
      'Bucket',
      'my_bucket',
      '-abc',
      'abc-',
      '.abc',
      'a..b',
      '10.1.2.3',
      'xn--abc',
      'sthree-abc',
      'amzn-s3-demo-x',
      'abc-s3alias',
      'abc--ol-s3',
      'abc.mrap',
      'abc--x-s3',
      'abc--table-s3',
      'ab c',
    ]) {
      expect(bucketProblem(b), b).toBeDefined();
    }
  });

  it('takes role ARNs of any partition, with a path, 12-digit account and a name of at most 64 characters', () => {
    for (const a of [
      'arn:aws:iam::123456789012:role/w',
      'arn:aws-cn:iam::123456789012:role/a/b/c+=,.@-_',
      'arn:aws-us-gov:iam::123456789012:role/x',
    ])
      expect(roleArnProblem(a), a).toBeUndefined();
    for (const a of [
      'arn:aws:iam::12345678901:role/w',
      'arn:aws:iam::123456789012:user/w',
      'arn:aws:iam::123456789012:role/',
      `arn:aws:iam::123456789012:role/${'n'.repeat(65)}`,
      'arn:aws:sts::123456789012:role/w',
      `arn:aws:iam::123456789012:role/${'p/'.repeat(1100)}n`,
    ]) {
      expect(roleArnProblem(a), a.slice(0, 60)).toBeDefined();
    }
    expect(roleArnProblem(`arn:aws:iam::123456789012:role/${'p/'.repeat(1100)}n`)).toMatch(/at most 2048/);
  });

  it('wants https, and loopback only at the origins the local runtime names', () => {
    const none = new Set<string>();
    expect(endpointProblem('https://s3.eu-west-1.amazonaws.com', none)).toBeUndefined();
    expect(endpointProblem('https://minio.example.com:9000/base', none)).toBeUndefined();
    for (const url of [
      'http://127.0.0.1:4569',
      'https://127.0.0.1',
      'https://localhost:9000',
      'https://LOCALHOST.:9000',
      'https://s3.localhost',
      'http://[::1]:80',
      'https://[::1]',
      'https://10.1.2.3',
      'https://192.168.0.1',
      'https://172.20.0.1',
      'https://169.254.169.254',
      'https://[fd00::1]',
      'https://[::ffff:127.0.0.1]',
      'http://s3.example.com',
    ]) {
      expect(endpointProblem(url, none), url).toBeDefined();
    }
    const local = new Set(['http://127.0.0.1:4569']);
    for (const url of ['http://127.0.0.1:4569', 'http://127.0.0.1:4569/', 'http://127.0.0.1:4569/base'])
      expect(endpointProblem(url, local), url).toBeUndefined();
    // The named origin only: another port, another loopback address or name, https to it, private
    // addresses, plain http elsewhere and odd URLs stay refused.
    for (const url of [
      'http://127.0.0.1:4570',
      'http://127.0.0.2:4569',
      'http://localhost:4569',
      'http://[::1]:4569',
      'https://127.0.0.1:4569',
      'http://s3.example.com',
      'https://10.1.2.3',
      'https://u:p@127.0.0.1:4569',
      'http://127.0.0.1:4569/?x=1',
      'ftp://127.0.0.1:4569',
      'not a url',
    ]) {
      expect(endpointProblem(url, local), url).toBeDefined();
    }
  });

  it('reads EXPORT_LOOPBACK_ORIGINS only in the local runtime, and only loopback origins with a port', () => {
    const local = { ANALYTICS_RUNTIME: 'local' };
    expect([
      ...exportLoopbackOrigins({ ...local, EXPORT_LOOPBACK_ORIGINS: 'http://127.0.0.1:4569/, http://[::1]:9000,' }),
    ]).toEqual(['http://127.0.0.1:4569', 'http://[::1]:9000']);
    expect(exportLoopbackOrigins(local).size).toBe(0);
    expect(
      exportLoopbackOrigins({ EXPORT_LOOPBACK_ORIGINS: 'http://127.0.0.1:4569', AWS_LAMBDA_FUNCTION_NAME: 'fn' }).size,
    ).toBe(0);
    expect(exportLoopbackOrigins({ EXPORT_LOOPBACK_ORIGINS: 'http://127.0.0.1:4569' }).size).toBe(0);
    for (const bad of [
      'http://localhost:4569',
      'http://10.0.0.5:4569',
      'http://127.0.0.1',
      'http://127.0.0.1:4569/base',
      'ftp://127.0.0.1:21',
      '127.0.0.1:4569',
    ])
      expect(() => exportLoopbackOrigins({ ...local, EXPORT_LOOPBACK_ORIGINS: bad }), bad).toThrow(ConfigError);
  });
});

describe('sealed export secrets', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
    vi.resetModules();
  });
  const context = { organization_id: 'org-1', batch_export_id: 'exp-1' };

  it('opens only with the same organization and export, under a 0600 local key file', async () => {
    const { openSecrets, sealSecrets } = await import('#shared/exports/secrets.ts');
    const { config } = await import('#shared/config.ts');
    const sealed = await sealSecrets({ aws_secret_access_key: 'plain-secret' }, context);
    expect(JSON.stringify(sealed)).not.toContain('plain-secret');
    expect(sealed.wrap).toBe('local');
    expect(await openSecrets(sealed, context)).toEqual({ aws_secret_access_key: 'plain-secret' });
    await expect(openSecrets(sealed, { ...context, batch_export_id: 'exp-2' })).rejects.toThrow();
    await expect(openSecrets(sealed, { ...context, organization_id: 'org-2' })).rejects.toThrow();
    expect((await stat(config().localSecretsKeyFile)).mode & 0o777).toBe(0o600);
  });

  it("opens an export's keys into the run's config, and a box moved to another export fails in our words", async () => {
    const { sealSecrets } = await import('#shared/exports/secrets.ts');
    const { openDestination } = await import('#shared/domain/export-destinations.ts');
    const sealed = await sealSecrets({ aws_access_key_id: 'AKIA1', aws_secret_access_key: 'plain-secret' }, context);
    const record = {
      id: 'exp-1',
      organization_id: 'org-1',
      destination: { type: 'S3', config: { bucket_name: 'b', region: 'us-east-1' }, sealed_secrets: sealed },
    } as any;
    expect(await openDestination(record)).toEqual({
      bucket_name: 'b',
      region: 'us-east-1',
      aws_access_key_id: 'AKIA1',
      aws_secret_access_key: 'plain-secret',
    });
    await expect(openDestination({ ...record, id: 'exp-2' })).rejects.toThrow(
      'Could not open the stored credentials of this destination (a service-side problem; the run is retried).',
    );
  });

  it('uses a KMS data key with the export as encryption context when the stage names a key, and never a key file in a deployed stage', async () => {
    vi.stubEnv('EXPORT_SEALING_KMS_KEY_ID', 'arn:aws:kms:us-east-1:123456789012:key/k');
    vi.resetModules();
    const { openSecrets, sealSecrets } = await import('#shared/exports/secrets.ts');
    const dataKey = randomBytes(32);
    const kms = mockClient(KMSClient)
      .on(GenerateDataKeyCommand)
      .resolves({ Plaintext: Uint8Array.from(dataKey), CiphertextBlob: Buffer.from('wrapped-by-kms') })
      .on(DecryptCommand)
      .resolves({ Plaintext: Uint8Array.from(dataKey) });
    const inputs = () =>
      kms.calls().map(({ args: [command] }) => ({ name: command.constructor.name, input: command.input }));
    const sealed = await sealSecrets({ aws_secret_access_key: 'plain-secret' }, context);
    expect(sealed).toMatchObject({ wrap: 'kms', key: Buffer.from('wrapped-by-kms').toString('base64') });
    expect(await openSecrets(sealed, context)).toEqual({ aws_secret_access_key: 'plain-secret' });
    expect(inputs()).toEqual([
      {
        name: 'GenerateDataKeyCommand',
        input: { KeyId: 'arn:aws:kms:us-east-1:123456789012:key/k', KeySpec: 'AES_256', EncryptionContext: context },
      },
      {
        name: 'DecryptCommand',
        input: {
          CiphertextBlob: Buffer.from('wrapped-by-kms'),
          EncryptionContext: context,
          KeyId: 'arn:aws:kms:us-east-1:123456789012:key/k',
        },
      },
    ]);

    kms.restore();
    vi.unstubAllEnvs();
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'analytics-dev-batch_exports_create');
    vi.resetModules();
    const deployed = await import('#shared/exports/secrets.ts');
    await expect(deployed.sealSecrets({ a: 'b' }, context)).rejects.toThrow(/EXPORT_SEALING_KMS_KEY_ID is not set/);
  });
});
