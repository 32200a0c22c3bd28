import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { personIdOf, getPerson, listPersonChanges } from '#shared/db/persons.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { getEvent } from '#shared/db/events.ts';
import { firstEventAt } from '#shared/db/projects.ts';
import { expectErrorShape, eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();

async function person(projectId: number, distinctId: string) {
  const id = await personIdOf(projectId, distinctId);
  if (id === undefined) throw new Error(`no person for ${distinctId}`);
  const p = await getPerson(projectId, id);
  if (!p) throw new Error(`person ${id} missing`);
  return p;
}

describe('capture', () => {
  it('stores a batch, creates persons with their properties and counts hourly rollups', async () => {
    const { projectId, token } = await newProject(api.as);
    const ts = '2024-05-01T10:15:00.000Z';
    const res = await api.as().post('/batch/', {
      api_key: token,
      batch: [
        {
          event: '$pageview',
          distinct_id: 'u1',
          properties: { $set: { email: 'u1@x.io', plan: 'free' } },
          timestamp: ts,
        },
        {
          event: '$pageview',
          distinct_id: 'u1',
          properties: { $set_once: { first: 'a', plan: 'ignored' } },
          timestamp: '2024-05-01T10:45:00.000Z',
        },
        { event: 'signup', distinct_id: 'u2', properties: {}, timestamp: '2024-05-01T11:05:00.000Z' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 1, accepted: 3, deduplicated: 0, rejected: 0, errors: [] });
    const u1 = await eventually(async () => {
      const p = await person(projectId, 'u1');
      expect(p.properties).toEqual({ email: 'u1@x.io', plan: 'free', first: 'a' });
      return p;
    });
    expect(Number.isInteger(u1.id)).toBe(true);
    expect(u1.distinct_ids).toEqual(['u1']);
    await eventually(async () => {
      expect(await readRollups(projectId, '$pageview', '2024-05-01T00', '2024-05-01T23')).toEqual(
        new Map([['2024-05-01T10', 2]]),
      );
      expect(await readRollups(projectId, null, '2024-05-01T00', '2024-05-01T23')).toEqual(
        new Map([
          ['2024-05-01T10', 2],
          ['2024-05-01T11', 1],
        ]),
      );
    });
    const changes = await listPersonChanges(projectId, u1.id);
    expect(changes.map((c) => c.changed)).toEqual([['email', 'plan'], ['first']]);
  });

  it('stores and counts a resent batch once', async () => {
    const { projectId, token } = await newProject(api.as);
    const batch = Array.from({ length: 30 }, (_, i) => ({
      event: 'resend',
      distinct_id: `d${i % 3}`,
      uuid: randomUUID(),
      timestamp: '2024-06-02T08:00:00Z',
    }));
    const results = await Promise.all([1, 2, 3].map(() => api.as().post('/batch', { api_key: token, batch })));
    const accepted = results.reduce((n, r) => n + r.body.accepted, 0);
    const deduplicated = results.reduce((n, r) => n + r.body.deduplicated, 0);
    // Concurrent copies may each find the uuids not yet stored (the response says what each request saw);
    // storage and counting stay exactly once either way.
    expect(accepted + deduplicated).toBe(90);
    const again = await api.as().post('/batch', { api_key: token, batch });
    expect(again.body).toMatchObject({ accepted: 0, deduplicated: 30 });
    await eventually(async () => {
      expect(await readRollups(projectId, 'resend', '2024-06-02T00', '2024-06-02T23')).toEqual(
        new Map([['2024-06-02T08', 30]]),
      );
    });
  });

  it('merges persons on $identify and $create_alias', async () => {
    const { projectId, token } = await newProject(api.as);
    const send = (batch: unknown[]) => api.as().post('/batch', { api_key: token, batch });
    await send([
      { event: '$pageview', distinct_id: 'anon-1', properties: { $set: { seen: 'landing', shared: 'anon' } } },
      { event: '$pageview', distinct_id: 'user@x.io', properties: { $set: { shared: 'user' } } },
    ]);
    await eventually(() => person(projectId, 'user@x.io'));
    await eventually(() => person(projectId, 'anon-1'));
    await send([
      {
        event: '$identify',
        distinct_id: 'user@x.io',
        properties: { $anon_distinct_id: 'anon-1', $set: { email: 'user@x.io' } },
      },
    ]);
    await eventually(async () => {
      const merged = await person(projectId, 'anon-1');
      expect(merged.id).toBe((await person(projectId, 'user@x.io')).id);
      expect(merged.distinct_ids.sort()).toEqual(['anon-1', 'user@x.io']);
      expect(merged.properties).toEqual({ seen: 'landing', shared: 'user', email: 'user@x.io' });
      expect(merged.is_identified).toBe(true);
    });
    await send([{ event: '$create_alias', distinct_id: 'user@x.io', properties: { alias: 'crm-42' } }]);
    await eventually(async () => {
      expect((await person(projectId, 'crm-42')).distinct_ids.sort()).toEqual(['anon-1', 'crm-42', 'user@x.io']);
    });
  });

  it('rejects events without event or distinct_id by index and keeps the rest', async () => {
    const { token } = await newProject(api.as);
    const res = await api.as().post('/e/', [
      { event: 'ok', distinct_id: 'a', properties: { token } },
      { distinct_id: 'b', properties: { token } },
      { event: 'no-id', properties: { token } },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 1, accepted: 1, rejected: 2 });
    expect(res.body.errors.map((e: any) => e.index)).toEqual([1, 2]);
    expect(res.body.errors[1].reason).toMatch(/distinct_id/);
  });

  it('answers 401 for an unknown token and 400 for a malformed body, in the error shape', async () => {
    const unknown = await api.as().post('/capture', { api_key: 'phc_nope', event: 'x', distinct_id: 'a' });
    expect(unknown.status).toBe(401);
    expectErrorShape(unknown.body);
    const malformed = await api
      .as()
      .request('POST', '/i/v0/e/', { raw: '{"event": ', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expectErrorShape(malformed.body);
  });

  it('accepts gzip bodies as posthog-js sends them', async () => {
    const { projectId, token } = await newProject(api.as);
    const body = gzipSync(
      JSON.stringify([{ event: 'gz', distinct_id: 'g1', properties: { token }, timestamp: '2024-07-01T00:00:00Z' }]),
    );
    const res = await api
      .as()
      .request('POST', '/e/?compression=gzip-js&ver=1.0', { raw: body, headers: { 'content-type': 'text/plain' } });
    expect(res.body).toMatchObject({ accepted: 1 });
    expect(res.status).toBe(200);
    await eventually(() => person(projectId, 'g1'));
  });
});

describe('capture limits and time', () => {
  it('answers 413 for a batch over 20 MB and for an event over 1 MB, storing nothing', async () => {
    const { token } = await newProject(api.as);
    const big = 'x'.repeat(1024 * 1024);
    const batch = Array.from({ length: 21 }, (_, i) => ({
      event: 'big',
      distinct_id: `b${i}`,
      properties: { blob: big },
    }));
    const tooBig = await api.as().post('/batch', { api_key: token, batch });
    expect(tooBig.status).toBe(413);
    expectErrorShape(tooBig.body);
    const oneHuge = await api.as().post('/batch', {
      api_key: token,
      batch: [
        { event: 'ok', distinct_id: 'a' },
        { event: 'huge', distinct_id: 'b', properties: { blob: big } },
      ],
    });
    expect(oneHuge.status).toBe(413);
    expect(oneHuge.body.detail).toMatch(/maximum event size exceeded/);
  });

  it('corrects client clock skew with sent_at and keeps the uuid the client sent', async () => {
    const { projectId, token } = await newProject(api.as);
    const uuid = randomUUID();
    const clientNow = Date.now() - 3_600_000; // the client's clock is an hour behind
    const res = await api.as().post('/batch', {
      api_key: token,
      sent_at: new Date(clientNow).toISOString(),
      batch: [{ event: 'skewed', distinct_id: 's1', uuid, timestamp: new Date(clientNow - 5_000).toISOString() }],
    });
    expect(res.body.accepted).toBe(1);
    const stored = await getEvent(projectId, uuid);
    expect(Math.abs(Date.parse(stored!.timestamp) - (Date.now() - 5_000))).toBeLessThan(3_000);
    expect(stored!.uuid).toBe(uuid);
  });

  it('refuses an event dated before 2000 and stores the valid one of the same batch', async () => {
    const { projectId, token } = await newProject(api.as);
    const [old, valid] = [randomUUID(), randomUUID()];
    const res = await api.as().post('/batch', {
      api_key: token,
      batch: [
        { event: 'old', distinct_id: 'o', uuid: old, timestamp: '1999-12-31T23:59:59Z' },
        { event: 'new', distinct_id: 'o', uuid: valid, timestamp: '2024-05-01T00:00:00Z' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 1,
      accepted: 1,
      deduplicated: 0,
      rejected: 1,
      errors: [{ index: 0, reason: 'timestamp before 2000-01-01T00:00:00.000Z' }],
    });
    expect(await getEvent(projectId, old)).toBeUndefined();
    expect((await getEvent(projectId, valid))?.event).toBe('new');
    // The first-event time trends clamp their reads to is lowered before capture answers, not later by the ingest worker.
    expect(await firstEventAt(projectId)).toEqual(new Date('2024-05-01T00:00:00Z'));

    const alone = await api.as().post('/batch', {
      api_key: token,
      batch: [{ event: 'old', distinct_id: 'o', timestamp: '1970-01-01T00:00:00Z' }],
    });
    expect(alone.status).toBe(400);
    expectErrorShape(alone.body);
    expect(alone.body.detail).toBe('timestamp before 2000-01-01T00:00:00.000Z');
  });

  it('replaces a timestamp more than 23 hours ahead with the server time', async () => {
    const { projectId, token } = await newProject(api.as);
    const uuid = randomUUID();
    await api.as().post('/batch', {
      api_key: token,
      batch: [
        { event: 'future', distinct_id: 'f', uuid, timestamp: new Date(Date.now() + 30 * 3_600_000).toISOString() },
      ],
    });
    const stored = await getEvent(projectId, uuid);
    expect(Math.abs(Date.parse(stored!.timestamp) - Date.now())).toBeLessThan(3_000);
  });
});

/** Waits until the capture_batches queue holds no message, visible or in a worker's hands. */
async function stagedBatchesStored(): Promise<void> {
  const client = new SQSClient({});
  try {
    await eventually(async () => {
      const { Attributes } = await client.send(
        new GetQueueAttributesCommand({
          QueueUrl: inject('queues').capture_batches,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      expect(Number(Attributes?.ApproximateNumberOfMessages)).toBe(0);
      expect(Number(Attributes?.ApproximateNumberOfMessagesNotVisible)).toBe(0);
    }, 120_000);
  } finally {
    client.destroy();
  }
}

const hourCount = async (projectId: number, event: string) =>
  (await readRollups(projectId, event, '2024-05-01T10', '2024-05-01T10')).get('2024-05-01T10') ?? 0;

describe('capture retries and large batches', () => {
  it('stores a batch sent twice without uuids once, and keeps two identical events of one batch apart', async () => {
    const { projectId, token } = await newProject(api.as);
    const twin = { event: 'retried', distinct_id: 'r1', timestamp: '2024-05-01T10:00:00Z' };
    const body = { api_key: token, batch: [twin, twin, { ...twin, distinct_id: 'r2' }] };
    const first = await api.as().post('/batch/', body);
    expect(first.body).toEqual({ status: 1, accepted: 3, deduplicated: 0, rejected: 0, errors: [] });
    // The same events in another encoding (as a client resending through a gzip transport) are the same request.
    const again = await api.as().request('POST', '/batch/?compression=gzip-js', {
      raw: gzipSync(JSON.stringify(body)),
      headers: { 'content-type': 'text/plain' },
    });
    expect(again.body).toEqual({ status: 1, accepted: 0, deduplicated: 3, rejected: 0, errors: [] });
    await eventually(async () => expect(await hourCount(projectId, 'retried')).toBe(3));
  });

  it('answers a 2,000-event batch without uuids with a 200 within the budget, and a resend doubles nothing', async () => {
    const { projectId, token } = await newProject(api.as);
    const batch = Array.from({ length: 2_000 }, (_, i) => ({
      event: 'bulk',
      distinct_id: `bulk-${i % 50}`,
      timestamp: new Date(Date.UTC(2024, 4, 1, 10, 0, 0, i)).toISOString(),
      properties: { i, $current_url: `https://example.com/${i % 40}` },
    }));
    const first = await api.as().post('/batch/', { api_key: token, batch });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 1, rejected: 0, queued: 2_000 });
    await eventually(async () => expect(await hourCount(projectId, 'bulk')).toBe(2_000), 120_000);
    const again = await api.as().post('/batch/', { api_key: token, batch });
    expect(again.status).toBe(200);
    await stagedBatchesStored();
    // Anything the resend stored would reach the stream worker within a second or two of the queue emptying.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await hourCount(projectId, 'bulk')).toBe(2_000);
  }, 240_000);
});

describe('capture from browsers', () => {
  it('mirrors the origin on responses, errors included, and answers the preflight', async () => {
    const { token } = await newProject(api.as);
    const ok = await api.as().request('POST', '/e/', {
      body: [{ event: 'x', distinct_id: 'c', properties: { token } }],
      headers: { origin: 'https://shop.example' },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    const denied = await api.as().request('POST', '/e/', {
      body: [{ event: 'x', distinct_id: 'c', properties: { token: 'phc_unknown' } }],
      headers: { origin: 'https://shop.example' },
    });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    const preflight = await api.as().request('OPTIONS', '/i/v0/e/', {
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type');
  });

  it('sends no CORS headers from the management API', async () => {
    const res = await api.as().request('GET', '/api/organizations/', { headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await api
      .as()
      .request('OPTIONS', '/api/organizations/', { headers: { origin: 'https://evil.example' } });
    expect(preflight.status).toBe(405);
  });
});
