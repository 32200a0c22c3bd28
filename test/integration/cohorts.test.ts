import { describe, expect, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { personItems } from '#shared/db/persons.ts';
import { MAX_COHORT_DEPTH, MAX_COHORT_LEAVES } from '#shared/domain/cohort-definitions.ts';
import { MAX_STATIC_ROWS } from '#shared/domain/cohorts.ts';
import { eventually, expectErrorShape, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();

interface Ctx {
  c: Client;
  projectId: number;
  token: string;
  base: string;
}

async function project(): Promise<Ctx> {
  const p = await newProject(api.as);
  return {
    c: api.as(p.key),
    projectId: p.projectId,
    token: p.token,
    base: `/api/environments/${p.projectId}/cohorts/`,
  };
}

/** Persons written straight into the table: ids from `first`, `seed-<i>` distinct ids. */
async function seed(ctx: Ctx, count: number, properties: (i: number) => Record<string, unknown>, first = 5_000_000) {
  const base = Date.parse('2024-01-01T00:00:00Z');
  const ids = Array.from({ length: count }, (_, i) => first + i);
  await batchPut(
    ids.flatMap((id, i) =>
      personItems({
        id,
        uuid: `00000000-0000-7000-8000-${String(id).padStart(12, '0')}`,
        project_id: ctx.projectId,
        properties: properties(i),
        distinct_ids: [`seed-${i}`],
        created_at: new Date(base + i * 1000).toISOString(),
        is_identified: true,
        version: 1,
      }),
    ),
  );
  return ids;
}

const personLeaf = (key: string, value: unknown, operator = 'exact') => ({ key, value, operator, type: 'person' });
const filters = (...values: unknown[]) => ({ properties: { type: 'AND', values } });

async function calculated(ctx: Ctx, id: number, timeoutMs = 30_000) {
  return eventually(async () => {
    const res = await ctx.c.get(`${ctx.base}${id}/`);
    expect(res.body.is_calculating).toBe(false);
    expect(res.body.last_calculation).not.toBeNull();
    return res.body;
  }, timeoutMs);
}

async function memberIds(ctx: Ctx, id: number): Promise<number[]> {
  const ids: number[] = [];
  let next: string | null = `${ctx.base}${id}/persons/?limit=100`;
  while (next) {
    const res: { status: number; body: { next: string | null; results: { id: number }[] } } = await ctx.c.get(
      next.replace(/^https?:\/\/[^/]+/, ''),
    );
    expect(res.status).toBe(200);
    ids.push(...res.body.results.map((p) => p.id));
    next = res.body.next;
  }
  return ids.sort((a, b) => a - b);
}

function multipart(fields: Record<string, string>, file?: { name: string; content: string }) {
  const boundary = '----cohortboundary42';
  const parts = Object.entries(fields).map(
    ([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`,
  );
  if (file)
    parts.push(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="people.csv"\r\nContent-Type: text/csv\r\n\r\n${file.content}\r\n`,
    );
  return {
    raw: `${parts.join('')}--${boundary}--\r\n`,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

describe('cohorts: the resource', () => {
  it('creates, lists (search, type, paged), retrieves, renames and soft-deletes; DELETE is 405; both path prefixes', async () => {
    const ctx = await project();
    const a = await ctx.c.post(ctx.base, { name: 'Paying', filters: filters(personLeaf('plan', 'paid')) });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ name: 'Paying', is_static: false, is_calculating: true, deleted: false });
    expect(a.body.cohort_type).toBe('person_property');
    const b = await ctx.c.post(ctx.base, { name: 'Beta list', is_static: true });
    expect(b.status).toBe(201);
    expect(b.body).toMatchObject({ is_static: true, count: 0, cohort_type: 'static' });

    const all = await ctx.c.get(ctx.base);
    expect(all.body.count).toBe(2);
    expect(all.body.results.map((c: { id: number }) => c.id)).toEqual([b.body.id, a.body.id]);
    expect((await ctx.c.get(`${ctx.base}?type=static`)).body.results.map((c: { id: number }) => c.id)).toEqual([
      b.body.id,
    ]);
    expect((await ctx.c.get(`${ctx.base}?type=dynamic`)).body.results.map((c: { id: number }) => c.id)).toEqual([
      a.body.id,
    ]);
    expect((await ctx.c.get(`${ctx.base}?search=bet`)).body.results.map((c: { id: number }) => c.id)).toEqual([
      b.body.id,
    ]);
    const paged = await ctx.c.get(`${ctx.base}?limit=1`);
    expect(paged.body.results).toHaveLength(1);
    expect(paged.body.next).toContain('offset=1');

    const projectLevel = await ctx.c.get(`/api/projects/${ctx.projectId}/cohorts/${a.body.id}/`);
    expect(projectLevel.status).toBe(200);
    expect(projectLevel.body.name).toBe('Paying');

    const renamed = await ctx.c.patch(`${ctx.base}${a.body.id}/`, { name: 'Paid plans' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Paid plans');

    const del = await ctx.c.delete(`${ctx.base}${a.body.id}/`);
    expect(del.status).toBe(405);
    expectErrorShape(del.body);

    const soft = await ctx.c.patch(`${ctx.base}${a.body.id}/`, { deleted: true });
    expect(soft.status).toBe(200);
    expect(soft.body.deleted).toBe(true);
    expect((await ctx.c.get(ctx.base)).body.results.map((c: { id: number }) => c.id)).toEqual([b.body.id]);
    expect((await ctx.c.get(`${ctx.base}${a.body.id}/`)).body.deleted).toBe(true);
  });

  it('refuses bad definitions with 400s naming the field: unsupported behaviours, loops, unknown cohorts, caps', async () => {
    const ctx = await project();
    const refused = async (body: unknown, detail: RegExp) => {
      const res = await ctx.c.post(ctx.base, body);
      expect(res.status).toBe(400);
      expectErrorShape(res.body);
      expect(res.body.detail).toMatch(detail);
      return res.body;
    };
    await refused(
      {
        name: 'x',
        filters: filters({
          type: 'behavioral',
          value: 'performed_event_first_time',
          key: '$pageview',
          event_type: 'events',
          time_value: 30,
          time_interval: 'day',
        }),
      },
      /performed_event_first_time/,
    );
    await refused(
      { name: 'x', filters: filters({ type: 'cohort', key: 'id', value: 999_999 }) },
      /999999 does not exist/,
    );
    await refused({ name: 'x', filters: filters(personLeaf('email', '(unclosed', 'regex')) }, /./);
    const leaves = Array.from({ length: MAX_COHORT_LEAVES + 1 }, (_, i) => personLeaf(`k${i}`, 'v'));
    await refused({ name: 'x', filters: filters(...leaves) }, new RegExp(`at most ${MAX_COHORT_LEAVES} filters`));
    let deep: unknown = personLeaf('k', 'v');
    for (let i = 0; i <= MAX_COHORT_DEPTH; i++) deep = { type: 'AND', values: [deep] };
    await refused({ name: 'x', filters: { properties: deep } }, new RegExp(`at most ${MAX_COHORT_DEPTH} groups deep`));

    // A loop: A references B, then B is changed to reference A.
    const b = await ctx.c.post(ctx.base, { name: 'B', filters: filters(personLeaf('k', 'v')) });
    const a = await ctx.c.post(ctx.base, {
      name: 'A',
      filters: filters({ type: 'cohort', key: 'id', value: b.body.id }),
    });
    expect(a.status).toBe(201);
    expect(a.body.cohort_type).toBe('analytical');
    const loop = await ctx.c.patch(`${ctx.base}${b.body.id}/`, {
      filters: filters({ type: 'cohort', key: 'id', value: a.body.id }),
    });
    expect(loop.status).toBe(400);
    expect(loop.body.detail).toMatch(/loop/);
    const self = await ctx.c.patch(`${ctx.base}${b.body.id}/`, {
      filters: filters({ type: 'cohort', key: 'id', value: b.body.id }),
    });
    expect(self.status).toBe(400);
  });
});

describe('cohorts: materialised membership', () => {
  it('a dynamic cohort is calculated by the worker: count, persons (JSON and CSV), persons/cohorts, nested cohorts', async () => {
    const ctx = await project();
    const ids = await seed(ctx, 30, (i) => ({ plan: i % 3 === 0 ? 'paid' : 'free', email: `=u${i}@x.com`, n: i }));
    const paid = ids.filter((_, i) => i % 3 === 0);
    const created = await ctx.c.post(ctx.base, { name: 'Paid', filters: filters(personLeaf('plan', 'paid')) });
    const done = await calculated(ctx, created.body.id);
    expect(done.count).toBe(paid.length);
    expect(await memberIds(ctx, created.body.id)).toEqual(paid);

    const csv = await ctx.c.get(`${ctx.base}${created.body.id}/persons/?format=csv&limit=3`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/text\/csv/);
    // Injection-safe: a cell that starts with "=" is prefixed.
    expect(csv.text).toContain("'=u");

    // A cohort over another: paid AND n >= 15 (OR-free nesting through a cohort leaf).
    const nested = await ctx.c.post(ctx.base, {
      name: 'Paid, late',
      filters: filters({ type: 'cohort', key: 'id', value: created.body.id }, personLeaf('n', 15, 'gte')),
    });
    const nestedDone = await calculated(ctx, nested.body.id);
    const expected = ids.filter((_, i) => i % 3 === 0 && i >= 15);
    expect(nestedDone.count).toBe(expected.length);
    expect(await memberIds(ctx, nested.body.id)).toEqual(expected);

    const ofPerson = await ctx.c.get(`/api/environments/${ctx.projectId}/persons/cohorts/?person_id=${expected[0]}`);
    expect(ofPerson.status).toBe(200);
    expect(ofPerson.body.results.map((c: { id: number }) => c.id).sort()).toEqual(
      [created.body.id, nested.body.id].sort(),
    );
    const none = await ctx.c.get(`/api/environments/${ctx.projectId}/persons/cohorts/?person_id=${ids[1]}`);
    expect(none.body.results).toEqual([]);
  });

  it('a new definition recalculates: members that no longer match leave and the count follows', async () => {
    const ctx = await project();
    const ids = await seed(ctx, 12, (i) => ({ n: i }), 5_100_000);
    const created = await ctx.c.post(ctx.base, { name: 'Low', filters: filters(personLeaf('n', 6, 'lt')) });
    expect((await calculated(ctx, created.body.id)).count).toBe(6);
    const changed = await ctx.c.patch(`${ctx.base}${created.body.id}/`, {
      filters: filters(personLeaf('n', 9, 'gte')),
    });
    expect(changed.status).toBe(200);
    expect(changed.body.is_calculating).toBe(true);
    const done = await eventually(async () => {
      const res = await ctx.c.get(`${ctx.base}${created.body.id}/`);
      expect(res.body.is_calculating).toBe(false);
      expect(res.body.count).toBe(3);
      return res.body;
    }, 30_000);
    expect(done.count).toBe(3);
    expect(await memberIds(ctx, created.body.id)).toEqual(ids.slice(9));
  });

  it('ingest keeps person-property cohorts current; deleting a person removes it from every cohort', async () => {
    const ctx = await project();
    const created = await ctx.c.post(ctx.base, { name: 'Pro', filters: filters(personLeaf('plan', 'pro')) });
    await calculated(ctx, created.body.id);
    const capture = (batch: unknown[]) => api.as().post('/batch', { api_key: ctx.token, batch });
    expect(
      (await capture([{ event: '$set', distinct_id: 'ing-1', properties: { $set: { plan: 'pro' } } }])).status,
    ).toBe(200);
    const person = await eventually(async () => {
      const res = await ctx.c.get(`${ctx.base}${created.body.id}/persons/`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0];
    }, 20_000);
    expect((await ctx.c.get(`${ctx.base}${created.body.id}/`)).body.count).toBe(1);

    await capture([{ event: '$set', distinct_id: 'ing-1', properties: { $set: { plan: 'free' } } }]);
    await eventually(async () => {
      expect((await ctx.c.get(`${ctx.base}${created.body.id}/persons/`)).body.results).toHaveLength(0);
      expect((await ctx.c.get(`${ctx.base}${created.body.id}/`)).body.count).toBe(0);
    }, 20_000);

    await capture([{ event: '$set', distinct_id: 'ing-1', properties: { $set: { plan: 'pro' } } }]);
    await eventually(async () => {
      expect((await ctx.c.get(`${ctx.base}${created.body.id}/persons/`)).body.results).toHaveLength(1);
    }, 20_000);
    const del = await ctx.c.delete(`/api/environments/${ctx.projectId}/persons/${person.id}/`);
    expect(del.status).toBe(204);
    expect((await ctx.c.get(`${ctx.base}${created.body.id}/persons/`)).body.results).toHaveLength(0);
    expect((await ctx.c.get(`${ctx.base}${created.body.id}/`)).body.count).toBe(0);
  });

  it('behavioural leaves: performed_event in the last 30 days and performed_event_multiple with a count', async () => {
    const ctx = await project();
    const capture = (batch: unknown[]) => api.as().post('/batch', { api_key: ctx.token, batch });
    const at = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString();
    const ev = (distinct_id: string, daysAgo: number) => ({ event: 'bought', distinct_id, timestamp: at(daysAgo) });
    // b-1: twice recently; b-2: once recently; b-3: only 60 days ago; b-4: never (another event).
    await capture([
      ev('b-1', 1),
      ev('b-1', 2),
      ev('b-2', 3),
      ev('b-3', 60),
      { event: 'viewed', distinct_id: 'b-4', timestamp: at(1) },
    ]);
    const personsOf = async () =>
      eventually(async () => {
        const res = await ctx.c.get(`/api/environments/${ctx.projectId}/persons/`);
        expect(res.body.results).toHaveLength(4);
        return new Map<string, number>(
          res.body.results.map((p: { id: number; distinct_ids: string[] }) => [p.distinct_ids[0], p.id]),
        );
      }, 20_000);
    const byDistinct = await personsOf();
    const once = await ctx.c.post(ctx.base, {
      name: 'Bought lately',
      filters: filters({
        type: 'behavioral',
        value: 'performed_event',
        key: 'bought',
        event_type: 'events',
        time_value: 30,
        time_interval: 'day',
      }),
    });
    expect(once.body.cohort_type).toBe('behavioral');
    const twice = await ctx.c.post(ctx.base, {
      name: 'Bought twice',
      filters: filters({
        type: 'behavioral',
        value: 'performed_event_multiple',
        key: 'bought',
        event_type: 'events',
        operator: 'gte',
        operator_value: 2,
        explicit_datetime: '-30d',
      }),
    });
    const never = await ctx.c.post(ctx.base, {
      name: 'Not bought',
      filters: filters({
        type: 'behavioral',
        value: 'performed_event',
        key: 'bought',
        event_type: 'events',
        time_value: 30,
        time_interval: 'day',
        negation: true,
      }),
    });
    expect((await calculated(ctx, once.body.id)).count).toBe(2);
    expect(await memberIds(ctx, once.body.id)).toEqual([byDistinct.get('b-1'), byDistinct.get('b-2')].sort());
    expect((await calculated(ctx, twice.body.id)).count).toBe(1);
    expect(await memberIds(ctx, twice.body.id)).toEqual([byDistinct.get('b-1')]);
    await calculated(ctx, never.body.id);
    expect(await memberIds(ctx, never.body.id)).toEqual([byDistinct.get('b-3'), byDistinct.get('b-4')].sort());
  });
});

describe('cohorts: static', () => {
  it('a malformed CSV upload is a 400 on csv naming the line, and creates nothing; a BOM and CRLF read as text', async () => {
    const ctx = await project();
    const ids = await seed(ctx, 3, (i) => ({ n: i }), 5_300_000);
    const upload = (name: string, content: string) =>
      ctx.c.request('POST', ctx.base, multipart({ name, is_static: 'true' }, { name: 'csv', content }));

    // The reader used to take everything after the open quote as one cell and store the rest silently.
    const unclosed = await upload('Unclosed', 'distinct_id\nseed-0\n"seed-1\nseed-2\n');
    expect(unclosed.status).toBe(400);
    expect(unclosed.body).toMatchObject({ type: 'validation_error', attr: 'csv' });
    expect(unclosed.body.detail).toContain('opened on line 3 is never closed');

    const ragged = await upload('Ragged', 'distinct_id,x\r\nseed-0,a\r\nseed-1\r\n');
    expect(ragged.status).toBe(400);
    expect(ragged.body.attr).toBe('csv');
    expect(ragged.body.detail).toContain('on line 3: 1 cell where its first row has 2');

    const strayQuote = await upload('Stray', 'distinct_id\nseed-0\n"seed-1"x\n');
    expect(strayQuote.status).toBe(400);
    expect(strayQuote.body.detail).toMatch(/^The CSV is malformed on line 3: /);

    const listed = await ctx.c.get(ctx.base);
    expect(listed.body.results.map((c: { name: string }) => c.name)).toEqual([]);

    const bom = await upload('Bom', '\uFEFFdistinct_id\r\nseed-0\r\n\r\nseed-2\r\n');
    expect(bom.status).toBe(201);
    expect(await memberIds(ctx, bom.body.id)).toEqual([ids[0], ids[2]]);
  });

  it('CSV upload (distinct_id header, one bare column, email), add and remove persons, duplicate_as_static_cohort', async () => {
    const ctx = await project();
    const ids = await seed(ctx, 6, (i) => ({ email: `p${i}@example.com`, n: i }), 5_200_000);

    const headed = multipart(
      { name: 'Uploaded', is_static: 'true' },
      { name: 'csv', content: 'Distinct_ID,x\nseed-0,a\nseed-2,b\nnobody,c\n' },
    );
    const a = await ctx.c.request('POST', ctx.base, headed);
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ is_static: true, count: 2, is_calculating: false });
    expect(await memberIds(ctx, a.body.id)).toEqual([ids[0], ids[2]]);

    const bare = await ctx.c.request(
      'POST',
      ctx.base,
      multipart({ name: 'Bare' }, { name: 'csv', content: 'seed-4\r\nseed-5\r\n' }),
    );
    expect(bare.status).toBe(201);
    expect(bare.body.count).toBe(2);

    const byEmail = await ctx.c.request(
      'POST',
      ctx.base,
      multipart({ name: 'Emails', is_static: 'true' }, { name: 'csv', content: 'email\nP1@example.com\n' }),
    );
    expect(byEmail.body.count).toBe(1);
    expect(await memberIds(ctx, byEmail.body.id)).toEqual([ids[1]]);

    const ambiguous = await ctx.c.request(
      'POST',
      ctx.base,
      multipart({ name: 'Bad' }, { name: 'csv', content: 'a,b\n1,2\n' }),
    );
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.attr).toBe('csv');

    const tooMany = Array.from({ length: MAX_STATIC_ROWS + 1 }, (_, i) => `d${i}`).join('\n');
    const capped = await ctx.c.request('POST', ctx.base, multipart({ name: 'Big' }, { name: 'csv', content: tooMany }));
    expect(capped.status).toBe(400);
    expect(capped.body.detail).toMatch(new RegExp(`at most ${MAX_STATIC_ROWS} rows`));

    const added = await ctx.c.patch(`${ctx.base}${a.body.id}/add_persons_to_static_cohort/`, {
      person_ids: [ids[3], ids[0], 99_999_999],
    });
    expect(added.status).toBe(200);
    expect(added.body.count).toBe(3);
    const removed = await ctx.c.patch(`${ctx.base}${a.body.id}/remove_person_from_static_cohort/`, {
      person_id: ids[0],
    });
    expect(removed.status).toBe(200);
    expect(removed.body.count).toBe(2);
    expect(await memberIds(ctx, a.body.id)).toEqual([ids[2], ids[3]]);

    const withIds = await ctx.c.post(ctx.base, {
      name: 'By ids',
      is_static: true,
      _create_static_person_ids: [ids[5]],
    });
    expect(withIds.body.count).toBe(1);

    const dynamic = await ctx.c.post(ctx.base, { name: 'Low n', filters: filters(personLeaf('n', 2, 'lt')) });
    await calculated(ctx, dynamic.body.id);
    const copy = await ctx.c.post(`${ctx.base}${dynamic.body.id}/duplicate_as_static_cohort/`, {});
    expect(copy.status).toBe(200);
    expect(copy.body).toMatchObject({ is_static: true, count: 2 });
    expect(await memberIds(ctx, copy.body.id)).toEqual([ids[0], ids[1]]);

    const notStatic = await ctx.c.patch(`${ctx.base}${dynamic.body.id}/add_persons_to_static_cohort/`, {
      person_ids: [ids[3]],
    });
    expect(notStatic.status).toBe(400);
  });

  it('the persons list filters by cohort (in / not_in, with person properties), a missing cohort is a 400', async () => {
    const ctx = await project();
    const ids = await seed(ctx, 4, (i) => ({ n: i }));
    const members = await ctx.c.post(ctx.base, {
      name: 'Picked',
      is_static: true,
      _create_static_person_ids: [ids[1], ids[2]],
    });
    expect(members.body.count).toBe(2);
    const persons = `/api/environments/${ctx.projectId}/persons/`;
    const listed = async (properties: unknown[]) => {
      const res = await ctx.c.get(`${persons}?properties=${encodeURIComponent(JSON.stringify(properties))}`);
      expect(res.status).toBe(200);
      return res.body.results.map((p: { id: number }) => p.id).sort((a: number, b: number) => a - b);
    };
    const cohort = (operator: string) => ({ type: 'cohort', key: 'id', value: members.body.id, operator });
    expect(await listed([cohort('in')])).toEqual([ids[1], ids[2]]);
    expect(await listed([cohort('not_in')])).toEqual([ids[0], ids[3]]);
    expect(await listed([cohort('in'), { key: 'n', value: 2, operator: 'gte', type: 'person' }])).toEqual([ids[2]]);
    const missing = await ctx.c.get(
      `${persons}?properties=${encodeURIComponent(JSON.stringify([{ type: 'cohort', key: 'id', value: 999_999 }]))}`,
    );
    expect(missing.status).toBe(400);
    expectErrorShape(missing.body);
    expect(missing.body.detail).toContain('Cohort 999999 does not exist');
  });
});
