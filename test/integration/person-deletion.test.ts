import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { getEvent } from '#shared/db/events.ts';
import { personItems } from '#shared/db/persons.ts';
import { runAs } from '#shared/invocation.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { runWorker, scheduledEvent } from '../../infra/local/workers.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

// Only this file puts messages on the run's deletion queue, so each drain here sees exactly this file's requests.
const api = useApi();
const sqs = new SQSClient({
  endpoint: inject('sqsEndpoint'),
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
const queueUrl = inject('queues').person_deletions!;
const dlqUrl = `${queueUrl}-dlq`;

const drain = () =>
  runWorker('drain_person_deletions', scheduledEvent('drain_person_deletions')) as Promise<{
    processed: number;
    eventsDeleted: number;
    failed: number;
  }>;
const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-02-01T00', '2024-02-29T23')).values()].reduce((a, b) => a + b, 0);

async function setup() {
  const p = await newProject(api.as);
  const c = api.as(p.key);
  const base = `/api/environments/${p.projectId}/persons/`;
  const uuids = { a: [randomUUID(), randomUUID(), randomUUID()], b: [randomUUID(), randomUUID()] };
  await api.as().post('/batch', {
    api_key: p.token,
    batch: [
      { event: 'view', distinct_id: 'anon-a', uuid: uuids.a[0], timestamp: '2024-02-01T10:00:00Z' },
      {
        event: '$identify',
        distinct_id: 'user-a',
        uuid: uuids.a[1],
        timestamp: '2024-02-01T10:05:00Z',
        properties: { $anon_distinct_id: 'anon-a' },
      },
      { event: 'view', distinct_id: 'user-a', uuid: uuids.a[2], timestamp: '2024-02-02T09:00:00Z' },
      { event: 'view', distinct_id: 'user-b', uuid: uuids.b[0], timestamp: '2024-02-01T11:00:00Z' },
      { event: 'view', distinct_id: 'user-b', uuid: uuids.b[1], timestamp: '2024-02-03T12:00:00Z' },
    ],
  });
  await eventually(async () => expect(await total(p.projectId)).toBe(5));
  const personOf = async (d: string) =>
    (await eventually(async () => {
      const res = await c.get(`${base}?distinct_id=${d}`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0];
    })) as { id: number; distinct_ids: string[] };
  const a = await eventually(async () => {
    const person = await personOf('user-a');
    expect(person.distinct_ids.sort()).toEqual(['anon-a', 'user-a']);
    return person;
  });
  return { ...p, c, base, uuids, a, b: await personOf('user-b') };
}

describe('deferred deletion of a person’s events', { timeout: 120_000 }, () => {
  it('keeps the events until the drain, then deletes all of them (every distinct id), corrects rollups and spares others', async () => {
    const s = await setup();
    expect((await s.c.delete(`${s.base}${s.a.id}/?delete_events=true`)).status).toBe(204);
    for (const uuid of s.uuids.a) expect(await getEvent(s.projectId, uuid)).toBeDefined();
    expect(await total(s.projectId)).toBe(5);

    const summary = await drain();
    expect(summary).toMatchObject({ processed: 1, eventsDeleted: 3, failed: 0 });
    for (const uuid of s.uuids.a) expect(await getEvent(s.projectId, uuid)).toBeUndefined();
    for (const uuid of s.uuids.b) expect(await getEvent(s.projectId, uuid)).toBeDefined();
    await eventually(async () => expect(await total(s.projectId)).toBe(2), 60_000);
    expect(await readRollups(s.projectId, 'view', '2024-02-01T00', '2024-02-29T23')).toEqual(
      new Map([
        ['2024-02-01T11', 1],
        ['2024-02-03T12', 1],
      ]),
    );

    expect(await drain()).toMatchObject({ processed: 0, eventsDeleted: 0 });
    expect(await total(s.projectId)).toBe(2);
  });

  it("retires every cached answer that counted the person's events once the drain deletes them", async () => {
    const s = await setup();
    expect((await s.c.delete(`${s.base}${s.a.id}/?delete_events=true`)).status).toBe(204);
    // Cached after the person went but before the drain: the events (user-a's) are still there.
    const query = (refresh: string) =>
      s.c.post(`/api/environments/${s.projectId}/query/`, {
        query: { kind: 'EventsQuery', select: ['uuid', 'distinct_id'], after: '2024-01-31', before: '2024-02-04' },
        refresh,
      });
    expect((await query('force_blocking')).text).toContain('user-a');
    expect((await query('force_cache')).body.is_cached).toBe(true);

    expect(await drain()).toMatchObject({ processed: 1, eventsDeleted: 3 });
    const after = await query('force_cache');
    expect(after.body.results).toBeUndefined();
    expect((await query('blocking')).text).not.toContain('user-a');
  });

  it('delete_events queues the deletion of the events of a person it keeps (both prefixes); the drain deletes them', async () => {
    const s = await setup();
    for (const base of [s.base, `/api/projects/${s.projectId}/persons/`]) {
      const res = await s.c.post(`${base}${s.a.id}/delete_events/`, {});
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
    }
    expect((await s.c.post(`${s.base}999999999/delete_events/`, {})).status).toBe(404);
    for (const uuid of s.uuids.a) expect(await getEvent(s.projectId, uuid)).toBeDefined();

    // One message per request; processed side by side, both may count the same three events.
    expect(await drain()).toMatchObject({ processed: 2, failed: 0 });
    for (const uuid of s.uuids.a) expect(await getEvent(s.projectId, uuid)).toBeUndefined();
    for (const uuid of s.uuids.b) expect(await getEvent(s.projectId, uuid)).toBeDefined();
    const kept = await s.c.get(`${s.base}${s.a.id}/`);
    expect(kept.status).toBe(200);
    expect(kept.body.distinct_ids.sort()).toEqual(['anon-a', 'user-a']);
    // The rollups are uncounted by the ingest worker from the stream's removals: slow on a busy run.
    await eventually(async () => expect(await total(s.projectId)).toBe(2), 60_000);
  });

  it('queues nothing without delete_events=true', async () => {
    const s = await setup();
    expect((await s.c.delete(`${s.base}${s.b.id}/?delete_events=false`)).status).toBe(204);
    expect((await s.c.delete(`${s.base}${s.a.id}/`)).status).toBe(204);
    expect(await drain()).toMatchObject({ processed: 0 });
    for (const uuid of [...s.uuids.a, ...s.uuids.b]) expect(await getEvent(s.projectId, uuid)).toBeDefined();
  });

  it('moves a malformed message to the DLQ after the configured receives while the valid ones drain', async () => {
    const s = await setup();
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: '{"project_id": "not a number"' }));
    expect((await s.c.delete(`${s.base}${s.b.id}/?delete_events=true`)).status).toBe(204);
    const summary = await drain();
    expect(summary.processed).toBe(1);
    expect(summary.failed).toBeGreaterThanOrEqual(1);
    for (const uuid of s.uuids.b) expect(await getEvent(s.projectId, uuid)).toBeUndefined();
    const poisoned = await eventually(async () => {
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      expect(out.Messages?.map((m) => m.Body)).toEqual(['{"project_id": "not a number"']);
      return out.Messages!;
    });
    expect(poisoned).toHaveLength(1);
    const left = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    expect(left.Attributes?.ApproximateNumberOfMessages).toBe('0');
  });

  it('deletes the events of persons removed through bulk_delete with delete_events', async () => {
    const s = await setup();
    const res = await s.c.post(`${s.base}bulk_delete/`, { ids: [s.a.id, s.b.id], delete_events: true });
    expect(res.status).toBe(202);
    expect(await drain()).toMatchObject({ processed: 2, eventsDeleted: 5 });
    await eventually(async () => expect(await total(s.projectId)).toBe(0), 60_000);
  });

  it('queues the deletion of the events of persons the bulk-delete worker removes', async () => {
    const s = await setup();
    const queued = {
      project_id: s.projectId,
      requested_by: { first_name: '', email: s.email },
      delete_events: true,
      person_ids: [s.a.id],
    };
    const event = {
      Records: [
        {
          messageId: 'm1',
          receiptHandle: 'r1',
          body: JSON.stringify(queued),
          attributes: {},
          messageAttributes: {},
          eventSource: 'aws:sqs',
          eventSourceARN: 'local',
          awsRegion: 'us-east-1',
        },
      ],
    };
    expect(await runWorker('delete_queued_persons', event)).toEqual({ batchItemFailures: [] });
    expect((await s.c.get(`${s.base}${s.a.id}`)).status).toBe(404);
    expect(await drain()).toMatchObject({ processed: 1, eventsDeleted: 3 });
    for (const uuid of s.uuids.a) expect(await getEvent(s.projectId, uuid)).toBeUndefined();
    for (const uuid of s.uuids.b) expect(await getEvent(s.projectId, uuid)).toBeDefined();
  });

  it('bulk deletes 1,000 persons with delete_events in one request and queues a deletion request for each of them', async () => {
    const s = await setup();
    const ids = Array.from({ length: 1000 }, (_, i) => 5_000_000 + i);
    // Seeded with the workers' table timeouts: 2,000 writes beside other files' load outlast the API's 2 x 4.5 s.
    await runAs('worker', () =>
      batchPut(
        ids.flatMap((id) =>
          personItems({
            id,
            uuid: randomUUID(),
            project_id: s.projectId,
            properties: {},
            distinct_ids: [`bulk-${id}`],
            created_at: '2024-01-01T00:00:00.000Z',
            is_identified: true,
            version: 1,
          }),
        ),
      ),
    );
    const res = await s.c.post(`${s.base}bulk_delete/`, { ids, delete_events: true });
    expect(res.status).toBe(202);
    expect(res.body.not_found).toEqual([]);
    expect([...res.body.deleted, ...res.body.queued].sort()).toEqual([...ids].sort());
    // Those queued go within seconds, through the bulk-delete worker.
    await eventually(
      async () =>
        expect((await s.c.get(`${s.base}?limit=100`)).body.results.map((p: { id: number }) => p.id).sort()).toEqual(
          [s.a.id, s.b.id].sort(),
        ),
      90_000,
    );
    // This file alone uses the run's deletion queue (other files that may queue deletions take their own:
    // ownDeletionQueues in test/support/isolation.ts), so the drain processes exactly these 1,000.
    const summary = await drain();
    expect(summary).toMatchObject({ processed: 1000, failed: 0 });
  }, 180_000);
});
