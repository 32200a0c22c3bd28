/**
 * DynamoDB going away under load. This file runs its OWN DynamoDB Local (persisted under a temporary
 * -dbPath, so data survives a restart), kills it mid-load, restarts it on the same port, and points its
 * own in-process API server at it. The environment is set before anything reads the config or builds a
 * table client (both happen lazily, at the first table call); the modules that make table calls are
 * imported dynamically after that.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '#shared/aws/dynamodb.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../infra/local/dynamodb-local.ts';
import { configureLocalEnv } from '../../infra/local/env.ts';
import { freePort } from '../../infra/local/ports.ts';
import { ensureTable } from '../../infra/local/table.ts';

const TABLE = 'analytics-faults';
const dataDir = await mkdtemp(join(tmpdir(), 'analytics-faults-'));
const port = await freePort();
const endpoint = `http://127.0.0.1:${port}`;
configureLocalEnv({ tableName: TABLE, dynamodb: endpoint });
// Load from one key for several seconds: far above the per-key limits, which stay on (their counter is a table call too).
process.env.ANALYTICS_RATE_LIMITS = '{"crud":{"minute":1000000,"hour":10000000}}';

const { client, newKey } = await import('../support/api.ts');
const { startApiServer } = await import('../../infra/local/http-server.ts');

let dynamodb: DynamoDbLocal;
let server: Awaited<ReturnType<typeof startApiServer>>;
const admin = () =>
  new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

async function startTable(): Promise<DynamoDbLocal> {
  const started = await startDynamoDbLocal({ dataDir, port });
  const c = admin();
  await ensureTable(c, TABLE);
  c.destroy();
  return started;
}

beforeAll(async () => {
  dynamodb = await startTable();
  server = await startApiServer();
}, 60_000);

afterAll(async () => {
  await server?.close();
  dynamodb?.process.kill('SIGCONT');
  await dynamodb?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

interface Sample {
  op: string;
  status: number;
  startedAt: number;
  endedAt: number;
  body: any;
  retryAfter: string | null;
}

/** `workers` loops of create / list / retrieve / update on organizations until `stop()`. */
function load(key: string, orgId: string, workers = 8) {
  const c = client(server.baseUrl, key);
  const samples: Sample[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (running) {
      const i = n++;
      const op = ['create', 'list', 'retrieve', 'update'][i % 4]!;
      const startedAt = Date.now();
      let res: { status: number; body: any; headers: Headers };
      try {
        res =
          op === 'create'
            ? await c.post('/api/organizations', { name: `Load ${i}` })
            : op === 'list'
              ? await c.get('/api/organizations?limit=5')
              : op === 'retrieve'
                ? await c.get(`/api/organizations/${orgId}`)
                : await c.patch(`/api/organizations/${orgId}`, { name: `Renamed ${i}` });
      } catch (error) {
        res = { status: 0, body: String(error), headers: new Headers() };
      }
      samples.push({
        op,
        status: res.status,
        startedAt,
        endedAt: Date.now(),
        body: res.body,
        retryAfter: res.headers.get('retry-after'),
      });
    }
  });
  return {
    samples,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return samples;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const latency = (s: Sample) => s.endedAt - s.startedAt;

function expectUnavailable(s: Sample) {
  expect(s.status, JSON.stringify(s)).toBe(503);
  expect(s.body).toEqual({
    type: 'server_error',
    code: 'service_unavailable',
    detail: 'The service is temporarily unavailable, please retry.',
    attr: null,
  });
  expect(s.retryAfter).toBe('1');
}

describe('DynamoDB outage under load', () => {
  it('answers 503 in the error shape within a bounded time while DynamoDB is dead, recovers by itself, and leaves no partial organization', async () => {
    const { key } = await newKey();
    const c = client(server.baseUrl, key);
    const org = (await c.post('/api/organizations', { name: 'Survivor' })).body;

    // Warm: every handler module loaded before the clock starts.
    await c.get('/api/organizations');
    await c.get(`/api/organizations/${org.id}`);
    await c.patch(`/api/organizations/${org.id}`, { name: 'Survivor' });
    await c.post('/api/organizations', { name: 'Warm-up' });

    // Each phase lasts until it has enough requests to judge (the machine may be busy with other test files).
    const traffic = load(key, org.id);
    const enough = async (count: () => number, minMs: number, maxMs: number) => {
      const start = Date.now();
      while (Date.now() - start < minMs || (count() < 20 && Date.now() - start < maxMs)) await sleep(100);
    };
    // At least 3.5 s of healthy load, and a create acknowledged 2 s before the kill (checked for
    // durability below), however slow a busy machine makes the first requests.
    await enough(() => traffic.samples.length, 3_500, 15_000);
    const settledCreate = () =>
      traffic.samples.some((s) => s.op === 'create' && s.status === 201 && s.endedAt < Date.now() - 2_000);
    for (const start = Date.now(); !settledCreate() && Date.now() - start < 20_000; ) await sleep(100);
    const killedAt = Date.now();
    dynamodb.process.kill('SIGKILL');
    await new Promise((r) =>
      dynamodb.process.exitCode !== null || dynamodb.process.signalCode !== null
        ? r(undefined)
        : dynamodb.process.once('exit', r),
    );
    await enough(() => traffic.samples.filter((x) => x.startedAt > killedAt + 200).length, 3_000, 15_000);
    const restartingAt = Date.now();
    dynamodb = await startTable();
    const restartedAt = Date.now();
    await enough(() => traffic.samples.filter((x) => x.startedAt > restartedAt + 1_000).length, 2_000, 20_000);
    const samples = await traffic.stop();

    const healthy = samples.filter((s) => s.endedAt < killedAt);
    const outage = samples.filter((s) => s.startedAt > killedAt + 200 && s.endedAt < restartingAt);
    const recovered = samples.filter((s) => s.startedAt > restartedAt + 1_000);
    const max = (xs: Sample[]) => Math.max(0, ...xs.map(latency));
    console.info(
      `faults: ${samples.length} requests; before the kill ${healthy.length} (max ${max(healthy)} ms); during the outage ${outage.length}, ` +
        `all 503 (max ${max(outage)} ms); DynamoDB Local restart took ${restartedAt - restartingAt} ms; after it ${recovered.length} (max ${max(recovered)} ms); ` +
        `first 2xx ${Math.min(...samples.filter((s) => s.startedAt >= restartingAt && s.status < 300).map((s) => s.endedAt)) - restartedAt} ms after the restart`,
    );

    // Nothing but success or a clean 503: no 500, no hang, no dropped connection.
    for (const s of samples) {
      expect([200, 201, 503], JSON.stringify(s)).toContain(s.status);
      expect(latency(s), JSON.stringify(s)).toBeLessThan(15_000);
      if (s.status === 503) expectUnavailable(s);
    }
    expect(healthy.length).toBeGreaterThan(10);
    expect(healthy.every((s) => s.status < 300)).toBe(true);
    expect(outage.length).toBeGreaterThan(10);
    for (const s of outage) expectUnavailable(s);
    // By itself: the same server process, the same table client, no restart of anything but DynamoDB.
    expect(recovered.length).toBeGreaterThan(10);
    expect(recovered.filter((s) => s.status !== 200 && s.status !== 201)).toEqual([]);

    // Every create acknowledged well before the kill survived (persisted under -dbPath) and is whole.
    // DynamoDB Local writes its file behind the acknowledgement, so a create answered in the last
    // moment before SIGKILL may be missing afterwards: the emulator's durability, not the service's.
    const acknowledged = samples
      .filter((s) => s.op === 'create' && s.status === 201 && s.endedAt < killedAt - 2_000)
      .map((s) => s.body.id as string);
    for (const id of acknowledged) expect((await c.get(`/api/organizations/${id}`)).status).toBe(200);
    const list = await c.get('/api/organizations?limit=1000');
    expect(list.status).toBe(200);
    for (const o of list.body.results) {
      expect(o.teams).toHaveLength(1);
      expect(o.slug).toBeTruthy();
    }

    // No partial organization anywhere in the table: the create transaction wrote all its items or none.
    const items: Record<string, any>[] = [];
    const doc = DynamoDBDocumentClient.from(admin());
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const out = await doc.send(new ScanCommand({ TableName: TABLE, ExclusiveStartKey, ConsistentRead: true }));
      items.push(...(out.Items ?? []));
      ExclusiveStartKey = out.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    doc.destroy();
    const has = (pk: string, sk: string) => items.some((i) => i.pk === pk && i.sk === sk);
    const orgs = items.filter((i) => i.sk === 'ORG');
    expect(orgs.length).toBe(list.body.count);
    for (const o of orgs) {
      const projects = items.filter((i) => i.pk === o.pk && String(i.sk).startsWith('PROJECT#'));
      expect(projects, o.id).toHaveLength(1);
      expect(has(`SLUG#${o.slug}`, 'SLUG'), o.id).toBe(true);
      expect(
        items.some((i) => String(i.pk).startsWith('USER#') && i.sk === `ORG#${o.id}`),
        o.id,
      ).toBe(true);
      expect(has(`PROJECT#${projects[0]!.id}`, 'LOOKUP'), o.id).toBe(true);
      expect(has(`TOKEN#${projects[0]!.api_token}`, 'TOKEN'), o.id).toBe(true);
    }
    // ... and nothing that belongs to an organization outlives or precedes it.
    const orgIds = new Set(orgs.map((o) => o.id as string));
    for (const i of items) {
      if (i.pk.startsWith('SLUG#') || i.entity === 'ProjectLookup' || i.entity === 'ProjectToken')
        expect(orgIds.has(i.organization_id), JSON.stringify(i)).toBe(true);
      if (i.entity === 'Membership') expect(orgIds.has(i.organization_id), JSON.stringify(i)).toBe(true);
    }
    expect(acknowledged.length).toBeGreaterThan(0);
    console.info(
      `faults: ${acknowledged.length} creates acknowledged 2 s or more before the kill, all there; ${orgs.length} organizations in the table, all whole`,
    );
  }, 120_000);

  it('answers 503 before the function timeout (10 s) while DynamoDB hangs, and serves again when it resumes', async () => {
    const { key } = await newKey();
    const c = client(server.baseUrl, key);
    const org = (await c.post('/api/organizations', { name: 'Hung' })).body;
    dynamodb.process.kill('SIGSTOP');
    try {
      const timed = async (fn: () => Promise<{ status: number; body: any; headers: Headers }>) => {
        const started = Date.now();
        const res = await fn();
        return { ...res, ms: Date.now() - started };
      };
      const answers = await Promise.all([
        timed(() => c.get(`/api/organizations/${org.id}`)),
        timed(() => c.post('/api/organizations', { name: 'During the hang' })),
        timed(() => c.patch(`/api/organizations/${org.id}`, { name: 'Renamed during the hang' })),
      ]);
      console.info(`faults: while DynamoDB hangs, answers in ${answers.map((a) => a.ms).join(', ')} ms`);
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.body.code).toBe('service_unavailable');
        expect(a.headers.get('retry-after')).toBe('1');
        // API Gateway gives up on the function at its timeout (10 s) with a response we do not shape.
        expect(a.ms).toBeLessThan(10_000);
      }
    } finally {
      dynamodb.process.kill('SIGCONT');
    }
    const after = await c.get(`/api/organizations/${org.id}`);
    expect(after.status).toBe(200);
  }, 60_000);
});
