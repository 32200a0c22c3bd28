import { beforeAll, describe, expect, it, vi } from 'vitest';
import { loadCohortMembers, MAX_TREND_COHORT_MEMBERS } from '#shared/domain/trend-cohorts.ts';
import { ValidationError } from '#shared/errors.ts';
import { eventually, expectErrorShape, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();
// Cohort calculations and several trends per test: generous on a shared machine.
vi.setConfig({ testTimeout: 120_000 });

/** `hour`:00 UTC, `n` days before today (the cohort worker's "last 30 days" reads the real clock, so the events follow it). */
const daysAgo = (n: number, hour: number) => {
  const today = new Date();
  today.setUTCHours(0, 0, 0, 0);
  return new Date(today.getTime() - n * 86_400_000 + hour * 3_600_000).toISOString();
};

const ev = (event: string, distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp,
  properties,
});

// Five persons. $pageviews: u1 2, u2 1, u3 3, u4 1, u5 2 (9). `bought` (in the last 30 days): u1, u3, u4.
// plan: u1 pro, u2 pro, u3 free, u4 pro, u5 free.
const BATCH = [
  ev('$pageview', 'u1', daysAgo(4, 9), { $set: { plan: 'pro' } }),
  ev('$pageview', 'u1', daysAgo(3, 9)),
  ev('$pageview', 'u2', daysAgo(4, 10), { $set: { plan: 'pro' } }),
  ev('$pageview', 'u3', daysAgo(3, 10), { $set: { plan: 'free' } }),
  ev('$pageview', 'u3', daysAgo(2, 10)),
  ev('$pageview', 'u3', daysAgo(1, 10)),
  ev('$pageview', 'u4', daysAgo(2, 11), { $set: { plan: 'pro' } }),
  ev('$pageview', 'u5', daysAgo(2, 12), { $set: { plan: 'free' } }),
  ev('$pageview', 'u5', daysAgo(1, 12)),
  ev('bought', 'u1', daysAgo(1, 8)),
  ev('bought', 'u3', daysAgo(2, 8)),
  ev('bought', 'u4', daysAgo(11, 8)),
];

let c: Client;
let projectId: number;
let token: string;
let cohorts: string;
let persons: Map<string, number>;
/** Dynamic: plan = pro AND bought in the last 30 days → u1, u4. */
let proBuyers: number;
/** Static, uploaded as CSV (distinct_id column) → u2, u3, u4. */
let uploaded: number;

function multipart(fields: Record<string, string>, csv: string) {
  const boundary = '----cohorttrends7';
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

async function calculated(id: number) {
  return eventually(async () => {
    const res = await c.get(`${cohorts}${id}/`);
    expect(res.body.is_calculating).toBe(false);
    expect(res.body.last_calculation).not.toBeNull();
    return res.body;
  }, 30_000);
}

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  projectId = p.projectId;
  token = p.token;
  cohorts = `/api/environments/${projectId}/cohorts/`;
  expect((await api.as().post('/batch', { api_key: token, batch: BATCH })).body.accepted).toBe(BATCH.length);
  persons = await eventually(async () => {
    const res = await c.get(`/api/environments/${projectId}/persons/`);
    expect(res.body.results).toHaveLength(5);
    for (const person of res.body.results) expect(person.properties.plan).toBeDefined();
    return new Map<string, number>(
      res.body.results.map((person: { id: number; distinct_ids: string[] }) => [person.distinct_ids[0], person.id]),
    );
  }, 30_000);
  const dynamic = await c.post(cohorts, {
    name: 'Pro buyers',
    filters: {
      properties: {
        type: 'AND',
        values: [
          { type: 'person', key: 'plan', value: 'pro', operator: 'exact' },
          {
            type: 'behavioral',
            value: 'performed_event',
            key: 'bought',
            event_type: 'events',
            time_value: 30,
            time_interval: 'day',
          },
        ],
      },
    },
  });
  expect(dynamic.status).toBe(201);
  proBuyers = dynamic.body.id;
  const upload = await c.request(
    'POST',
    cohorts,
    multipart({ name: 'Uploaded list', is_static: 'true' }, 'distinct_id\nu2\nu3\nu4\n'),
  );
  expect(upload.status).toBe(201);
  expect(upload.body.count).toBe(3);
  uploaded = upload.body.id;
  expect((await calculated(proBuyers)).count).toBe(2);
}, 90_000);

const legacyPath = () => `/api/environments/${projectId}/insights/trend/`;
const legacy = (body: Record<string, unknown>, refresh = true) =>
  c.post(`${legacyPath()}${refresh ? '?refresh=true' : ''}`, { date_from: '-7d', ...body });
/** A query's answer; one that ran past its blocking budget (a busy machine) is awaited through its status. */
async function answered(body: Record<string, unknown>) {
  const path = `/api/environments/${projectId}/query/`;
  const res = await c.post(path, body);
  if (res.status !== 202) return res;
  const done = await eventually(async () => {
    const status = await c.get(`${path}${res.body.query_status.id}/`);
    expect(status.body.query_status.complete).toBe(true);
    return status.body.query_status;
  }, 60_000);
  return { status: done.error ? 400 : 200, body: done.results };
}
const query = (q: Record<string, unknown>, refresh = 'blocking') =>
  answered({ refresh, query: { kind: 'TrendsQuery', dateRange: { date_from: '-7d' }, ...q } });
const cohortFilter = (id: number, operator?: string) => ({
  type: 'cohort',
  key: 'id',
  value: id,
  ...(operator ? { operator } : {}),
});
const pageviews = { kind: 'EventsNode', event: '$pageview' };
const counts = (rows: any[]) => rows.map((r) => [r.label, r.breakdown_value, r.count]);

describe('cohorts in trends, both front ends', () => {
  it('a dynamic (person property + performed event) and a CSV-uploaded static cohort filter a trend', async () => {
    // Hand-computed: pro buyers u1 (2) + u4 (1) = 3; uploaded u2 (1) + u3 (3) + u4 (1) = 5; both: u4 = 1.
    const cases: [unknown[], number][] = [
      [[cohortFilter(proBuyers)], 3],
      [[cohortFilter(proBuyers, 'in')], 3],
      [[cohortFilter(proBuyers, 'not_in')], 6],
      [[cohortFilter(uploaded)], 5],
      [[{ ...cohortFilter(uploaded), type: 'static-cohort' }], 5],
      [[cohortFilter(uploaded), cohortFilter(proBuyers)], 1],
    ];
    for (const [properties, expected] of cases) {
      const old = await legacy({ events: [{ id: '$pageview' }], properties });
      expect(old.status, JSON.stringify(old.body)).toBe(200);
      expect(old.body.result[0].count, JSON.stringify(properties)).toBe(expected);
      const current = await query({ series: [pageviews], properties });
      expect(current.status, JSON.stringify(current.body)).toBe(200);
      expect(current.body.results[0].count, JSON.stringify(properties)).toBe(expected);
    }
    // In a series' filters, unique users per day (7 days ago .. today): u2 4 days ago, u3 3, 2 and 1 days ago, u4 2 days ago.
    const series = await query({ series: [{ ...pageviews, math: 'dau', properties: [cohortFilter(uploaded)] }] });
    expect(series.body.results[0].data).toEqual([0, 0, 0, 1, 1, 2, 1, 0]);
    const legacySeries = await legacy({
      events: [{ id: '$pageview', math: 'dau', properties: [cohortFilter(uploaded)] }],
    });
    expect(legacySeries.body.result[0].data).toEqual([0, 0, 0, 1, 1, 2, 1, 0]);
  });

  it('breaks a trend down by cohorts: each its own row (overlapping), labelled by name, "all" is all users', async () => {
    const breakdown = [proBuyers, uploaded, 'all'];
    const expected = [
      ['Pro buyers', proBuyers, 3],
      ['Uploaded list', uploaded, 5],
      ['all users', 'all', 9],
    ];
    const old = await legacy({ events: [{ id: '$pageview' }], breakdown_type: 'cohort', breakdown });
    expect(old.status, JSON.stringify(old.body)).toBe(200);
    expect(counts(old.body.result)).toEqual(expected);
    expect(old.body.result[0].filter).toMatchObject({ breakdown_type: 'cohort', breakdown });
    // GET sends the list as JSON text.
    const get = await c.get(
      `${legacyPath()}?refresh=true&date_from=-7d&events=${encodeURIComponent(JSON.stringify([{ id: '$pageview' }]))}&breakdown_type=cohort&breakdown=${encodeURIComponent(JSON.stringify(breakdown))}`,
    );
    expect(counts(get.body.result)).toEqual(expected);
    const current = await query({ series: [pageviews], breakdownFilter: { breakdown_type: 'cohort', breakdown } });
    expect(current.status, JSON.stringify(current.body)).toBe(200);
    expect(counts(current.body.results)).toEqual(expected);

    // Two series: cohort by cohort, the series in order, labelled "series - cohort"; filtered too.
    const two = await query({
      series: [pageviews, { kind: 'EventsNode', event: 'bought' }],
      properties: [cohortFilter(uploaded)],
      breakdownFilter: { breakdown_type: 'cohort', breakdown: [proBuyers] },
    });
    expect(counts(two.body.results)).toEqual([
      ['$pageview - Pro buyers', proBuyers, 1],
      ['bought - Pro buyers', proBuyers, 0], // u4 bought 11 days ago, before -7d
    ]);
  });

  it('an unknown, deleted or other project’s cohort is a 400 naming the field', async () => {
    // Cohort ids count per project: the other project's fifth cohort is an id this project has not used.
    const other = await newProject(api.as);
    let foreign = { body: { id: 0 } };
    for (let i = 0; i < 5; i += 1)
      foreign = await api.as(other.key).post(`/api/environments/${other.projectId}/cohorts/`, {
        name: 'Theirs',
        is_static: true,
      });
    expect(foreign.body.id).toBe(5);
    const gone = await c.post(cohorts, { name: 'Soon deleted', is_static: true });
    expect((await c.patch(`${cohorts}${gone.body.id}/`, { deleted: true })).status).toBe(200);
    for (const id of [99_999, foreign.body.id, gone.body.id]) {
      const old = await legacy({ events: [{ id: '$pageview', properties: [cohortFilter(id)] }] });
      expect(old.status).toBe(400);
      expectErrorShape(old.body);
      expect(old.body.attr).toBe('events__0__properties__0__value');
      expect(old.body.detail).toContain(`Cohort ${id}`);
      const current = await query({ series: [pageviews], properties: [cohortFilter(id)] });
      expect(current.status).toBe(400);
      expect(current.body.attr).toBe('query__properties__0__value');
      const broken = await query({
        series: [pageviews],
        breakdownFilter: { breakdown_type: 'cohort', breakdown: [id] },
      });
      expect(broken.status).toBe(400);
      expect(broken.body.attr).toBe('query__breakdownFilter__breakdown');
    }
  });
});

describe('members loaded per query', () => {
  it(`are capped (${MAX_TREND_COHORT_MEMBERS.toLocaleString('en-US')} in all): past the cap a 400 names the cap and the field`, async () => {
    const named = (attr: string) => ({ id: uploaded, attr, name: 'Uploaded list' });
    const sets = await loadCohortMembers(projectId, [named('properties__0__value')]);
    expect([...sets.get(uploaded)!.members].sort()).toEqual(
      [persons.get('u2'), persons.get('u3'), persons.get('u4')].sort(),
    );
    // Three members over a cap of two; and two cohorts sharing one cap.
    const over = await loadCohortMembers(projectId, [named('breakdown')], 2).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(ValidationError);
    expect((over as ValidationError).attr).toBe('breakdown');
    expect((over as ValidationError).detail).toContain('more than 2 members');
    const shared = await loadCohortMembers(
      projectId,
      [named('a'), { id: proBuyers, attr: 'b', name: 'Pro buyers' }],
      4,
    ).catch((e: unknown) => e);
    expect((shared as ValidationError).attr).toBe('b');
  });
});

describe('cohort filters in EventsQuery and ActorsQuery', () => {
  const run = (q: Record<string, unknown>) => answered({ query: q });

  it('EventsQuery keeps the events of the cohort’s persons (in / not_in), person columns unchanged', async () => {
    const events = await run({
      kind: 'EventsQuery',
      select: ['event', 'distinct_id', 'person'],
      event: '$pageview',
      after: '-30d',
      properties: [cohortFilter(uploaded)],
    });
    expect(events.status, JSON.stringify(events.body)).toBe(200);
    // u2 1 + u3 3 + u4 1
    expect(events.body.results.map((r: unknown[]) => r[1]).sort()).toEqual(['u2', 'u3', 'u3', 'u3', 'u4']);
    expect(Object.keys(events.body.results[0][2]).sort()).toEqual(['created_at', 'distinct_id', 'properties', 'uuid']);
    const outside = await run({
      kind: 'EventsQuery',
      select: ['distinct_id'],
      event: '$pageview',
      after: '-30d',
      properties: [cohortFilter(proBuyers, 'not_in')],
    });
    expect(outside.body.results.map((r: unknown[]) => r[0]).sort()).toEqual(['u2', 'u3', 'u3', 'u3', 'u5', 'u5']);
    const unknown = await run({ kind: 'EventsQuery', select: ['event'], properties: [cohortFilter(99_998)] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.attr).toBe('query__properties__0__value');
  });

  it('ActorsQuery lists the cohort’s persons; an unknown cohort is a 400 naming the field', async () => {
    const actors = await run({ kind: 'ActorsQuery', select: ['id'], properties: [cohortFilter(proBuyers)] });
    expect(actors.status, JSON.stringify(actors.body)).toBe(200);
    expect(actors.body.results.map((r: unknown[]) => r[0]).sort()).toEqual(
      [persons.get('u1'), persons.get('u4')].sort(),
    );
    const both = await run({
      kind: 'ActorsQuery',
      select: ['id'],
      properties: [cohortFilter(uploaded), { type: 'person', key: 'plan', value: 'free' }],
    });
    expect(both.body.results.map((r: unknown[]) => r[0])).toEqual([persons.get('u3')]);
    const unknown = await run({ kind: 'ActorsQuery', fixedProperties: [cohortFilter(99_998)] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.attr).toBe('query__fixedProperties__0__value');
  });
});

describe('cohort changes make cached trends stale at once', () => {
  it('a static remove, an ingest-time membership change and a person deletion each change the next cached answer', async () => {
    const list = await c.post(cohorts, { name: 'Cache list', is_static: true });
    expect(
      (
        await c.patch(`${cohorts}${list.body.id}/add_persons_to_static_cohort/`, {
          person_ids: [persons.get('u1'), persons.get('u3')],
        })
      ).status,
    ).toBe(200);
    const body = { events: [{ id: '$pageview' }], properties: [cohortFilter(list.body.id)] };
    const first = await legacy(body, false);
    expect(first.body.result[0].count).toBe(5); // u1 2 + u3 3
    const again = await legacy(body, false);
    expect(again.body.is_cached).toBe(true);
    const q = { series: [pageviews], properties: [cohortFilter(list.body.id)] };
    expect((await query(q, 'blocking')).body.results[0].count).toBe(5);
    expect((await query(q, 'blocking')).body.is_cached).toBe(true);

    await c.patch(`${cohorts}${list.body.id}/remove_person_from_static_cohort/`, { person_id: persons.get('u1') });
    const afterRemove = await legacy(body, false);
    expect(afterRemove.body.is_cached).toBe(false);
    expect(afterRemove.body.result[0].count).toBe(3);
    expect((await query(q, 'blocking')).body.results[0].count).toBe(3);

    // A person-property cohort the ingest worker keeps current: u5 turns pro.
    const pro = await c.post(cohorts, {
      name: 'Pro plan',
      filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', value: 'pro' }] } },
    });
    await calculated(pro.body.id);
    const proBody = { events: [{ id: '$pageview' }], properties: [cohortFilter(pro.body.id)] };
    expect((await legacy(proBody, false)).body.result[0].count).toBe(4); // u1 2 + u2 1 + u4 1
    expect((await legacy(proBody, false)).body.is_cached).toBe(true);
    await api.as().post('/batch', {
      api_key: token,
      batch: [ev('$set', 'u5', new Date(Date.now() - 60_000).toISOString(), { $set: { plan: 'pro' } })],
    });
    await eventually(async () => {
      expect((await c.get(`${cohorts}${pro.body.id}/`)).body.count).toBe(4);
    }, 20_000);
    // The worker writes the membership, then retires the cached answers: the count can be read between
    // the two (a loaded full run did), so the first fresh answer is awaited; without the retirement the
    // cached count of 4 would be served until it expires.
    const afterIngest = await eventually(async () => {
      const answer = await legacy(proBody, false);
      expect(answer.body.is_cached).toBe(false);
      return answer;
    }, 20_000);
    expect(afterIngest.body.result[0].count).toBe(6);

    // Deleting a person removes it from every cohort: u3 leaves the list (its events stay, no longer a member's).
    const del = await c.delete(`/api/environments/${projectId}/persons/${persons.get('u3')}/`);
    expect(del.status).toBe(204);
    expect((await c.get(`${cohorts}${list.body.id}/`)).body.count).toBe(0);
    const afterDelete = await legacy(body, false);
    expect(afterDelete.body.is_cached).toBe(false);
    expect(afterDelete.body.result[0].count).toBe(0);
  });
});
