import { describe, expect, it } from 'vitest';
import { ENV } from '#shared/config.ts';
import { batchPut } from '#shared/db/batch.ts';
import { getPerson, personItems } from '#shared/db/persons.ts';
import { deleteQueuedPersons } from '#shared/domain/persons.ts';
import type { QueuedBulkDelete } from '#shared/queues/person-bulk-deletes.ts';
import { runWorker } from '../../infra/local/workers.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

// No time inline: every person a bulk delete finds goes to the queue, so the worker's path is what is tested.
// (Config is read once per process, on first use: before any request.)
process.env[ENV.bulkDeleteBudgetMs] = '0';

const api = useApi();

async function project() {
  const p = await newProject(api.as);
  return { ...p, c: api.as(p.key), base: `/api/environments/${p.projectId}/persons/` };
}

async function seed(projectId: number, ids: number[]) {
  await batchPut(
    ids.flatMap((id) =>
      personItems({
        id,
        uuid: `00000000-0000-7000-8000-${String(id).padStart(12, '0')}`,
        project_id: projectId,
        properties: { n: id },
        distinct_ids: [`q-${id}`],
        created_at: '2024-01-01T00:00:00.000Z',
        is_identified: true,
        version: 1,
      }),
    ),
  );
}

const sqsEvent = (bodies: string[]) => ({
  Records: bodies.map((body, i) => ({
    messageId: `m${i}`,
    receiptHandle: `r${i}`,
    body,
    attributes: {},
    messageAttributes: {},
    eventSource: 'aws:sqs',
    eventSourceARN: 'local',
    awsRegion: 'us-east-1',
  })),
});
const message = (projectId: number, personIds: number[]): QueuedBulkDelete => ({
  project_id: projectId,
  requested_by: { first_name: 'Ada', email: 'ada@test.example' },
  delete_events: false,
  person_ids: personIds,
});

describe('bulk delete through the queue', () => {
  it('answers 202 with every found person queued, as given, and the worker deletes them all within seconds', async () => {
    const p = await project();
    const ids = Array.from({ length: 300 }, (_, i) => 3_000_000 + i);
    await seed(p.projectId, ids);
    const asked = [...ids.slice(0, 299), String(ids[299]), 42];
    const res = await p.c.post(`${p.base}bulk_delete/`, { ids: asked });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      deleted: [],
      not_found: [42],
      queued: asked.slice(0, 300),
      persons_found: 300,
      persons_deleted: 0,
      events_queued_for_deletion: false,
      recordings_queued_for_deletion: false,
      deletion_errors: [],
    });
    await eventually(async () => expect((await p.c.get(p.base)).body.results).toEqual([]), 60_000);
    expect((await p.c.get(`${p.base}${ids[299]}`)).status).toBe(404);
    // The activity log names who asked, not the worker.
    const activity = await p.c.get(`${p.base}${ids[0]}/activity`);
    expect(activity.body.results[0]).toMatchObject({ activity: 'deleted', user: { email: p.email } });
  }, 90_000);

  it('queues by distinct id too, listing the distinct ids as given', async () => {
    const p = await project();
    await seed(p.projectId, [3_100_000, 3_100_001]);
    const res = await p.c.post(`${p.base}bulk_delete/`, { distinct_ids: ['q-3100001', 'nobody', 'q-3100000'] });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      deleted: [],
      not_found: ['nobody'],
      queued: ['q-3100001', 'q-3100000'],
      persons_found: 2,
      persons_deleted: 0,
    });
    await eventually(async () => expect((await p.c.get(p.base)).body.results).toEqual([]), 30_000);
  });

  it('deletes only persons of the project the message names: a person of another project is skipped', async () => {
    const a = await project();
    const b = await project();
    await seed(a.projectId, [3_200_000]);
    await seed(b.projectId, [3_200_000, 3_200_001]);
    // Project A's message names B's persons (one id A also has, one only B has).
    const result = await runWorker(
      'delete_queued_persons',
      sqsEvent([JSON.stringify(message(a.projectId, [3_200_000, 3_200_001]))]),
    );
    expect(result).toEqual({ batchItemFailures: [] });
    expect(await getPerson(a.projectId, 3_200_000)).toBeUndefined();
    expect(await getPerson(b.projectId, 3_200_000)).toBeDefined();
    expect(await getPerson(b.projectId, 3_200_001)).toBeDefined();
    expect((await b.c.get(b.base)).body.results).toHaveLength(2);
    // A message for A naming only B's person deletes nothing at all.
    expect(
      await deleteQueuedPersons(
        message(a.projectId, [3_200_001]),
        { deletion: async () => undefined, rest: async () => undefined },
        Date.now() + 60_000,
      ),
    ).toEqual({
      deleted: 0,
      skipped: 1,
      requeued: 0,
    });
    expect((await b.c.get(`${b.base}3200001`)).status).toBe(200);
  });

  it('re-queues the rest of a message it has no time for, instead of running past its invocation', async () => {
    const p = await project();
    await seed(p.projectId, [3_300_000, 3_300_001]);
    const rest: QueuedBulkDelete[] = [];
    const summary = await deleteQueuedPersons(
      message(p.projectId, [3_300_000, 3_300_001, 3_300_002]),
      { deletion: async () => undefined, rest: async (m) => void rest.push(m) },
      Date.now(),
    );
    expect(summary).toEqual({ deleted: 0, skipped: 1, requeued: 2 });
    // One message with the same project, caller and flag; the ids in any order (a batch read's order).
    expect(rest.map((m) => ({ ...m, person_ids: [...m.person_ids].sort() }))).toEqual([
      message(p.projectId, [3_300_000, 3_300_001]),
    ]);
    expect((await p.c.get(p.base)).body.results).toHaveLength(2);
  });

  it('reports only the malformed messages of a batch as failed, so SQS retries just those', async () => {
    const p = await project();
    await seed(p.projectId, [3_400_000]);
    const result = await runWorker(
      'delete_queued_persons',
      sqsEvent([
        '{"project_id": "x"',
        JSON.stringify(message(p.projectId, [3_400_000])),
        JSON.stringify({ ...message(p.projectId, [1]), project_id: 'x' }),
      ]),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }, { itemIdentifier: 'm2' }] });
    expect(await getPerson(p.projectId, 3_400_000)).toBeUndefined();
  });
});
