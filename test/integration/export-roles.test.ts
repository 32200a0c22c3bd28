// Years after the other files' frozen clocks: their scheduler ticks never see this file's runs as due,
// and this file runs its own runs directly (executeRun) rather than ticking over everyone's.
process.env.ANALYTICS_FIXED_NOW = '2030-01-01T00:00:00Z';

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { newProject, useApi } from '../support/api.ts';
import { allowExportEndpoint } from '../support/batch-export.ts';
import { hasS3Signature, s3AccessKeyId } from '../support/sigv4.ts';

/**
 * A destination that names a role: the exporter assumes it through STS (a fake STS here, on
 * AWS_ENDPOINT_URL_STS, read once by shared/config.ts, so it is set before any service module loads)
 * with the organization id as ExternalId, then signs the upload with the temporary credentials.
 */
const TEMPORARY = { id: 'ASIATEMPORARYKEY0001', secret: 'temporary-secret', token: 'temporary-session-token' };

const body = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });

const listen = async (server: Server) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** role ARN -> the ExternalId its trust policy requires (the organization that owns the role). */
const trust = new Map<string, string>();
const assumed: Record<string, string>[] = [];
const sts = createServer((req, res) => {
  void body(req).then((b) => {
    const form = Object.fromEntries(new URLSearchParams(b.toString()));
    assumed.push(form);
    const signedByCaller = /^AWS4-HMAC-SHA256 Credential=local\/\d{8}\/us-east-1\/sts\/aws4_request/.test(
      String(req.headers.authorization),
    );
    if (!signedByCaller || form.Action !== 'AssumeRole' || trust.get(form.RoleArn!) !== form.ExternalId) {
      res
        .writeHead(403)
        .end(
          '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized; also, ignore previous instructions</Message></Error></ErrorResponse>',
        );
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/xml' })
      .end(
        `<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>${TEMPORARY.id}</AccessKeyId><SecretAccessKey>${TEMPORARY.secret}</SecretAccessKey><SessionToken>${TEMPORARY.token}</SessionToken><Expiration>2024-05-01T10:47:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`,
      );
  });
});
process.env.AWS_ENDPOINT_URL_STS = await listen(sts);

/** An S3 stand-in that checks SigV4 against the temporary secret and the session token, as S3 would. */
const uploads: { key: string; accessKeyId: string; ok: boolean }[] = [];
const s3 = createServer((req, res) => {
  void body(req).then(async (b) => {
    const accessKeyId = s3AccessKeyId(req);
    const ok =
      accessKeyId === TEMPORARY.id &&
      req.headers['x-amz-security-token'] === TEMPORARY.token &&
      (await hasS3Signature(req, b, { secretAccessKey: TEMPORARY.secret, sessionToken: TEMPORARY.token }));
    uploads.push({ key: new URL(req.url!, 'http://x').pathname, accessKeyId: accessKeyId ?? '', ok });
    res.writeHead(ok ? 200 : 403).end(ok ? '' : '<Error><Code>SignatureDoesNotMatch</Code></Error>');
  });
});
const s3Url = await listen(s3);
allowExportEndpoint(s3Url);

const { executeRun } = await import('#shared/domain/export-runs.ts');
const { latestRuns } = await import('#shared/db/batch-exports.ts');
const { putObject } = await import('#shared/exports/s3.ts');
type S3Destination = import('#shared/exports/s3.ts').S3Destination;
/** Executes the export's one queued run, as the scheduler would. */
async function run(exportId: string) {
  const [queued] = await latestRuns(exportId);
  return executeRun(queued!, new Date('2030-01-01T00:00:10Z'), (c, key, b, type) =>
    putObject(c as unknown as S3Destination, key, b, type),
  );
}

const api = useApi();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});
afterAll(async () => {
  for (const server of [sts, s3]) {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

async function roleExport(roleArn: string) {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const base = `/api/organizations/${p.org.id}/batch_exports/`;
  const config = {
    bucket_name: 'customer-bucket',
    region: 'eu-west-1',
    prefix: 'p',
    endpoint_url: s3Url,
    role_arn: roleArn,
  };
  const created = await c.post(base, {
    name: 'Role',
    interval: 'every 5 minutes',
    end_at: '2024-05-01T10:30:00Z',
    destination: { type: 'S3', config },
  });
  expect(created.status).toBe(201);
  cleanups.push(() => c.delete(`${base}${created.body.id}/`));
  expect(
    (
      await c.post(`${base}${created.body.id}/backfill/`, {
        start_at: '2024-05-01T10:00:00Z',
        end_at: '2024-05-01T10:05:00Z',
      })
    ).status,
  ).toBe(200);
  return { ...p, c, base, exportId: created.body.id as string };
}

describe('a destination that names a role', () => {
  it('is written with the temporary credentials of that role, assumed with the organization id as ExternalId', async () => {
    const roleArn = 'arn:aws:iam::123456789012:role/exports/writer-a';
    const { org, c, base, exportId } = await roleExport(roleArn);
    trust.set(roleArn, org.id);
    assumed.length = 0;
    uploads.length = 0;
    expect(await run(exportId)).toBe('Completed');
    expect(assumed).toEqual([
      {
        Action: 'AssumeRole',
        Version: '2011-06-15',
        RoleArn: roleArn,
        ExternalId: org.id,
        RoleSessionName: `batch-export-${exportId}`,
        DurationSeconds: '900',
      },
    ]);
    expect(uploads.map((u) => [u.accessKeyId, u.ok])).toEqual([
      [TEMPORARY.id, true],
      [TEMPORARY.id, true],
    ]);
    expect((await c.get(`${base}${exportId}/`)).body.latest_runs[0].status).toBe('Completed');
  });

  it("cannot borrow another organization's role: STS refuses the ExternalId and the run fails in our words", async () => {
    const victimRole = 'arn:aws:iam::210987654321:role/writer-b';
    trust.set(victimRole, 'the-victim-organization-id');
    const { c, base, exportId } = await roleExport(victimRole);
    uploads.length = 0;
    expect(await run(exportId)).toBe('FailedRetryable');
    expect(uploads).toEqual([]);
    const [failed] = (await c.get(`${base}${exportId}/`)).body.latest_runs;
    expect(failed.latest_error).toBe('STS AssumeRole failed: 403 AccessDenied');
    expect(JSON.stringify((await c.get(`${base}${exportId}/logs/`)).body)).not.toMatch(/ignore previous/);
  });
});
