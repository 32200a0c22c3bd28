import { beforeAll, describe, expect, it } from 'vitest';
import { UpdateCommand } from '#shared/aws/dynamodb.ts';
import { batchPut } from '#shared/db/batch.ts';
import { db, tableName } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { indexPersonUuids, personItems, type PersonRecord } from '#shared/db/persons.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { NO_VALID_PERSONS } from '#shared/domain/cohorts.ts';
import { eventually, expectErrorShape, newProject, useApi, type Client } from '../support/api.ts';

/**
 * Static cohorts take persons as PostHog's clients name them: by uuid (`person_ids`,
 * `_create_static_person_ids`, `person_id`, a CSV's person_id column), or by our integer ids. A
 * request that names no person of the project is a 400, never a 200 that added no one.
 */
const api = useApi();

// Page views: u1 3, u2 2, u3 1, u4 4.
const EVENTS: [string, string][] = [
  ['u1', '2024-05-01T08:00:00Z'],
  ['u1', '2024-05-02T08:00:00Z'],
  ['u1', '2024-05-03T08:00:00Z'],
  ['u2', '2024-05-01T09:00:00Z'],
  ['u2', '2024-05-02T09:00:00Z'],
  ['u3', '2024-05-01T10:00:00Z'],
  ['u4', '2024-05-01T11:00:00Z'],
  ['u4', '2024-05-02T11:00:00Z'],
  ['u4', '2024-05-02T12:00:00Z'],
  ['u4', '2024-05-03T12:00:00Z'],
];

interface Person {
  id: number;
  uuid: string;
}

let c: Client;
let projectId: number;
let cohorts: string;
let persons: Map<string, Person>;
/** A person of another project: its uuid names no one here (integer ids are counted per project: its id may). */
let foreign: Person;

async function seeded(token: string, batch: { event: string; distinct_id: string; timestamp: string }[]) {
  expect((await api.as().post('/batch', { api_key: token, batch })).status).toBe(200);
}

async function personsOf(client: Client, project: number, distinctIds: string[]): Promise<Map<string, Person>> {
  return eventually(async () => {
    const found = new Map<string, Person>();
    for (const d of distinctIds) {
      const res = await client.get(`/api/environments/${project}/persons/?distinct_id=${d}`);
      expect(res.body.results).toHaveLength(1);
      found.set(d, { id: res.body.results[0].id, uuid: res.body.results[0].uuid });
    }
    return found;
  }, 30_000);
}

/** Page views of the cohort's members on 1-3 May, through the legacy trend endpoint. */
async function cohortPageviews(cohortId: number): Promise<number> {
  const res = await c.post(`/api/environments/${projectId}/insights/trend/?refresh=true`, {
    events: [{ id: '$pageview' }],
    properties: [{ type: 'cohort', key: 'id', value: cohortId }],
    date_from: '2024-05-01',
    date_to: '2024-05-03',
  });
  expect(res.status).toBe(200);
  return res.body.result[0].count;
}

const staticCohort = async (name: string, body: Record<string, unknown> = {}) =>
  c.post(cohorts, { name, is_static: true, ...body });

function csvUpload(fields: Record<string, string>, csv: string) {
  const boundary = '----cohortpersonids';
  const parts = Object.entries(fields).map(
    ([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`,
  );
  parts.push(
    `--${boundary}\r\nContent-Disposition: form-data; name="csv"; filename="people.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n`,
  );
  return {
    raw: `${parts.join('')}--${boundary}--\r\n`,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  projectId = p.projectId;
  cohorts = `/api/environments/${projectId}/cohorts/`;
  await seeded(
    p.token,
    EVENTS.map(([distinct_id, timestamp]) => ({ event: '$pageview', distinct_id, timestamp })),
  );
  persons = await personsOf(c, projectId, ['u1', 'u2', 'u3', 'u4']);
  const other = await newProject(api.as);
  await seeded(other.token, [{ event: '$pageview', distinct_id: 'elsewhere', timestamp: '2024-05-01T08:00:00Z' }]);
  foreign = (await personsOf(api.as(other.key), other.projectId, ['elsewhere'])).get('elsewhere')!;
}, 60_000);

describe('add_persons_to_static_cohort', () => {
  it('adds persons named by uuid; a trend filtered by the cohort counts their events', async () => {
    const list = await staticCohort('By uuid');
    expect(list.status).toBe(201);
    expect(await cohortPageviews(list.body.id)).toBe(0);
    const added = await c.patch(`${cohorts}${list.body.id}/add_persons_to_static_cohort/`, {
      person_ids: [persons.get('u2')!.uuid, persons.get('u3')!.uuid.toUpperCase()],
    });
    expect(added.status).toBe(200);
    expect(added.body.count).toBe(2);
    // u2 2 + u3 1.
    expect(await cohortPageviews(list.body.id)).toBe(3);

    // Our integer ids still work, side by side with uuids; an unknown uuid among known ids is skipped (PostHog's rule).
    const more = await c.patch(`${cohorts}${list.body.id}/add_persons_to_static_cohort/`, {
      person_ids: [persons.get('u4')!.id, '0190f000-0000-7000-8000-00000000dead'],
    });
    expect(more.status).toBe(200);
    expect(more.body.count).toBe(3);
    // u2 2 + u3 1 + u4 4.
    expect(await cohortPageviews(list.body.id)).toBe(7);

    const removed = await c.patch(`${cohorts}${list.body.id}/remove_person_from_static_cohort/`, {
      person_id: persons.get('u2')!.uuid,
    });
    expect(removed.status).toBe(200);
    expect(removed.body.count).toBe(2);
    // u3 1 + u4 4.
    expect(await cohortPageviews(list.body.id)).toBe(5);
  });

  it('ids naming no person of the project are a 400 as PostHog words it, and the cohort stays as it was', async () => {
    const list = await staticCohort('Nobody', { _create_static_person_ids: [persons.get('u3')!.uuid] });
    expect(list.body.count).toBe(1);
    for (const person_ids of [
      ['0190f000-0000-7000-8000-00000000dead'],
      [foreign.uuid],
      [99_999_998, 99_999_999],
      ['not-a-person'],
    ]) {
      const refused = await c.patch(`${cohorts}${list.body.id}/add_persons_to_static_cohort/`, { person_ids });
      expect(refused.status).toBe(400);
      expectErrorShape(refused.body);
      expect(refused.body).toMatchObject({ type: 'validation_error', detail: NO_VALID_PERSONS });
    }
    const empty = await c.patch(`${cohorts}${list.body.id}/add_persons_to_static_cohort/`, { person_ids: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.detail).toMatch(/person_ids cannot be empty/);
    expect((await c.get(`${cohorts}${list.body.id}/`)).body.count).toBe(1);
    // u3 1.
    expect(await cohortPageviews(list.body.id)).toBe(1);
  });

  it('a person written before the personsByUuid index is found by uuid once `migrate -- person-uuids` ran', async () => {
    const list = await staticCohort('Older person');
    const older: PersonRecord = {
      id: 7_000_001,
      uuid: '0190f000-0000-7000-8000-0000000b0001',
      project_id: projectId,
      properties: {},
      distinct_ids: ['written-before'],
      created_at: '2024-01-01T00:00:00.000Z',
      is_identified: false,
      version: 1,
    };
    await batchPut(personItems(older));
    // As it was stored before the index: without the index's key.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.person(projectId, older.id),
        UpdateExpression: 'REMOVE #u',
        ExpressionAttributeNames: { '#u': TABLE_SCHEMA.indexes.personsByUuid.partitionKey },
      }),
    );
    const add = () => c.patch(`${cohorts}${list.body.id}/add_persons_to_static_cohort/`, { person_ids: [older.uuid] });
    expect((await add()).body).toMatchObject({ detail: NO_VALID_PERSONS, attr: 'person_ids' });
    expect(await indexPersonUuids()).toBeGreaterThanOrEqual(1);
    const added = await add();
    expect(added.status).toBe(200);
    expect(added.body.count).toBe(1);
    // A rerun finds nothing left to index.
    expect(await indexPersonUuids()).toBe(0);
  });
});

describe('the other ways persons enter or leave a static cohort', () => {
  it('_create_static_person_ids takes uuids; a list naming no one is a 400 and creates no cohort', async () => {
    const made = await staticCohort('Seeded', {
      _create_static_person_ids: [persons.get('u2')!.uuid, persons.get('u4')!.uuid],
    });
    expect(made.status).toBe(201);
    expect(made.body.count).toBe(2);
    // u2 2 + u4 4.
    expect(await cohortPageviews(made.body.id)).toBe(6);

    const before = (await c.get(`${cohorts}?limit=100`)).body.count;
    const refused = await staticCohort('Seeded with no one', { _create_static_person_ids: [foreign.uuid] });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ detail: NO_VALID_PERSONS, attr: '_create_static_person_ids' });
    expect((await c.get(`${cohorts}?limit=100`)).body.count).toBe(before);
    // An empty list asks for an empty cohort.
    expect((await staticCohort('Empty', { _create_static_person_ids: [] })).body.count).toBe(0);
  });

  it('a CSV person_id column takes uuids; a CSV naming no one is a 400, on create and on update', async () => {
    const upload = await c.request(
      'POST',
      cohorts,
      csvUpload({ name: 'CSV uuids', is_static: 'true' }, `person_id\n${persons.get('u3')!.uuid}\n${foreign.uuid}\n`),
    );
    expect(upload.status).toBe(201);
    expect(upload.body.count).toBe(1);
    // u3 1.
    expect(await cohortPageviews(upload.body.id)).toBe(1);

    const before = (await c.get(`${cohorts}?limit=100`)).body.count;
    for (const csv of [`person_id\n${foreign.uuid}\n`, 'distinct_id\nnobody\n', 'email\nnobody@test.example\n']) {
      const refused = await c.request('POST', cohorts, csvUpload({ name: 'CSV nobody', is_static: 'true' }, csv));
      expect(refused.status).toBe(400);
      expect(refused.body.attr).toBe('csv');
      expect(refused.body.detail).toMatch(new RegExp(`^${NO_VALID_PERSONS}`));
    }
    expect((await c.get(`${cohorts}?limit=100`)).body.count).toBe(before);

    const current = (await c.get(`${cohorts}${upload.body.id}/`)).body;
    const update = await c.request(
      'PATCH',
      `${cohorts}${upload.body.id}/`,
      csvUpload({ name: 'Renamed by a refused upload' }, 'distinct_id\nnobody\n'),
    );
    expect(update.status).toBe(400);
    const after = (await c.get(`${cohorts}${upload.body.id}/`)).body;
    expect([after.name, after.version, after.count]).toEqual([current.name, current.version, 1]);
  });

  it('remove_person_from_static_cohort: an id naming no person of the project is PostHog 404', async () => {
    const list = await staticCohort('Remove', { _create_static_person_ids: [persons.get('u4')!.uuid] });
    for (const person_id of [foreign.uuid, '0190f000-0000-7000-8000-00000000dead', 99_999_999]) {
      const res = await c.patch(`${cohorts}${list.body.id}/remove_person_from_static_cohort/`, { person_id });
      expect(res.status).toBe(404);
      expectErrorShape(res.body);
      expect(res.body.detail).toBe("Person with this UUID does not exist in the cohort's team");
    }
    // A person of the project who is not a member: nothing removed, said so.
    const notMember = await c.patch(`${cohorts}${list.body.id}/remove_person_from_static_cohort/`, {
      person_id: persons.get('u1')!.id,
    });
    expect(notMember.status).toBe(404);
    expect(notMember.body.detail).toBe('The person is not in this cohort.');
    // u4 4.
    expect(await cohortPageviews(list.body.id)).toBe(4);
  });

  it('persons/cohorts takes the person as PostHog names it (uuid) or by integer id; an unknown one is a 404', async () => {
    const list = await staticCohort('Of a person', { _create_static_person_ids: [persons.get('u2')!.uuid] });
    const of = (personId: string | number) =>
      c.get(`/api/environments/${projectId}/persons/cohorts/?person_id=${personId}`);
    for (const id of [persons.get('u2')!.uuid, persons.get('u2')!.uuid.toUpperCase(), persons.get('u2')!.id]) {
      const res = await of(id);
      expect(res.status).toBe(200);
      expect(res.body.results.map((r: { id: number }) => r.id)).toContain(list.body.id);
    }
    expect((await of(foreign.uuid)).status).toBe(404);
    const bad = await of('not-an-id');
    expect(bad.status).toBe(400);
    expect(bad.body.attr).toBe('person_id');
  });
});
