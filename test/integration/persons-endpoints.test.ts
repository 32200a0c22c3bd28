import { beforeAll, describe, expect, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { activityItem, personItems } from '#shared/db/persons.ts';
import { ACTIVITY_PAGED } from '#shared/domain/persons.ts';
import { expectErrorShape, eventually, newProject, useApi, type Client } from '../support/api.ts';

// The persons endpoints PostHog's users script against beyond list/retrieve/edit/delete: property
// values, update_property, reset_person_distinct_id and bulk_delete by PostHog uuid, at both path
// prefixes. (delete_events: test/integration/person-deletion.test.ts, which owns the deletion queue.)
const api = useApi();

interface Ctx {
  c: Client;
  projectId: number;
  token: string;
  prefixes: string[];
}

async function project(): Promise<Ctx> {
  const p = await newProject(api.as);
  return {
    c: api.as(p.key),
    projectId: p.projectId,
    token: p.token,
    prefixes: [`/api/environments/${p.projectId}/persons/`, `/api/projects/${p.projectId}/persons/`],
  };
}

let seq = 0;
/** Persons written straight into the table; each gets a fresh id and uuid. */
async function seed(ctx: Ctx, people: { properties: Record<string, unknown>; distinct_id?: string }[]) {
  const records = people.map((p) => {
    seq += 1;
    const id = 2_000_000 + seq;
    return {
      id,
      uuid: `00000000-0000-7000-9000-${String(id).padStart(12, '0')}`,
      project_id: ctx.projectId,
      properties: p.properties,
      distinct_ids: [p.distinct_id ?? `seed-${id}`],
      created_at: new Date(Date.parse('2024-01-01T00:00:00Z') + seq * 1000).toISOString(),
      is_identified: true,
      version: 1,
    };
  });
  await batchPut(records.flatMap(personItems));
  return records;
}

describe('GET persons/values', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await project();
    await seed(ctx, [
      ...Array.from({ length: 3 }, () => ({ properties: { plan: 'pro', seats: 5 } })),
      ...Array.from({ length: 2 }, () => ({ properties: { plan: 'Free', seats: 5, beta: true } })),
      { properties: { plan: 'enterprise', meta: { b: 1, a: [1, 'x'] } } },
      { properties: { plan: '' } },
      { properties: { plan: null } },
      { properties: {}, distinct_id: 'alice@example.com' },
      ...Array.from({ length: 25 }, (_, i) => ({ properties: { city: `city-${String(i).padStart(2, '0')}` } })),
    ]);
  });

  it('counts the persons holding each value, most common first, at both prefixes', async () => {
    for (const base of ctx.prefixes) {
      const res = await ctx.c.get(`${base}values/?key=plan`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        results: [
          { name: 'pro', count: 3 },
          { name: 'Free', count: 2 },
          { name: 'enterprise', count: 1 },
        ],
        refreshing: false,
      });
    }
  });

  it('filters by `value` as a case-insensitive substring', async () => {
    const res = await ctx.c.get(`${ctx.prefixes[0]}values/?key=plan&value=FR`);
    expect(res.body.results).toEqual([{ name: 'Free', count: 2 }]);
    expect((await ctx.c.get(`${ctx.prefixes[0]}values/?key=plan&value=zzz`)).body.results).toEqual([]);
  });

  it('names every value by a string, as PostHog does (numbers, booleans, objects as sorted JSON)', async () => {
    const base = ctx.prefixes[0];
    expect((await ctx.c.get(`${base}values/?key=seats`)).body.results).toEqual([{ name: '5', count: 5 }]);
    expect((await ctx.c.get(`${base}values/?key=beta`)).body.results).toEqual([{ name: 'true', count: 2 }]);
    expect((await ctx.c.get(`${base}values/?key=meta`)).body.results).toEqual([
      { name: '{"a": [1, "x"], "b": 1}', count: 1 },
    ]);
  });

  it('answers at most 20 values', async () => {
    const res = await ctx.c.get(`${ctx.prefixes[0]}values/?key=city`);
    expect(res.body.results).toHaveLength(20);
    expect(res.body.results.every((r: { count: number }) => r.count === 1)).toBe(true);
  });

  it('answers distinct ids from the persons’ distinct ids, and nothing for no key', async () => {
    const res = await ctx.c.get(`${ctx.prefixes[0]}values/?key=distinct_id&value=alice`);
    expect(res.body.results).toEqual([{ name: 'alice@example.com', count: 1 }]);
    expect((await ctx.c.get(`${ctx.prefixes[0]}values/`)).body).toEqual({ results: [], refreshing: false });
  });

  it('reads only this project’s persons', async () => {
    const other = await project();
    expect((await other.c.get(`${other.prefixes[0]}values/?key=plan`)).body.results).toEqual([]);
  });
});

describe('POST persons/:id/update_property', () => {
  it('sets one property to any JSON value and answers 202, at both prefixes', async () => {
    const ctx = await project();
    const [person] = await seed(ctx, [{ properties: { plan: 'free', keep: 1 } }]);
    for (const [i, base] of ctx.prefixes.entries()) {
      const value = i === 0 ? { tier: 'pro', seats: [1, 2] } : null;
      const res = await ctx.c.post(`${base}${person!.id}/update_property/`, { key: 'plan', value });
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
      const after = (await ctx.c.get(`${base}${person!.id}/`)).body;
      expect(after.properties).toEqual({ plan: value, keep: 1 });
    }
    const activity = (await ctx.c.get(`${ctx.prefixes[0]}${person!.id}/activity/`)).body;
    expect(activity.results[0].activity).toBe('updated');
  });

  it('pages only the newest 1,000 activity entries of a person whose history grew past them', async () => {
    const ctx = await project();
    const [person] = await seed(ctx, [{ properties: {} }]);
    const base = Date.parse('2026-01-01T00:00:00Z');
    await batchPut(
      Array.from({ length: ACTIVITY_PAGED + 5 }, (_, i) =>
        activityItem({
          id: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
          person_id: person!.id,
          project_id: ctx.projectId,
          activity: 'updated',
          user: { first_name: '', email: 'member@example.com' },
          created_at: new Date(base + i * 1000).toISOString(),
          changes: [{ type: 'Person', action: 'changed', field: 'n', before: i, after: i + 1 }],
        }),
      ),
    );
    const path = `${ctx.prefixes[0]}${person!.id}/activity/`;
    const first = (await ctx.c.get(`${path}?limit=100`)).body;
    expect(first).toMatchObject({ total_count: ACTIVITY_PAGED, total_count_capped: true });
    // Newest first: the last entry written leads.
    expect(first.results[0].detail.changes[0].before).toBe(ACTIVITY_PAGED + 4);
    const last = (await ctx.c.get(`${path}?limit=100&page=10`)).body;
    expect(last.results).toHaveLength(100);
    expect(last.next).toBeNull();
    const past = await ctx.c.get(`${path}?limit=100&page=11`);
    expect([past.status, past.body.attr]).toEqual([400, 'page']);
    expectErrorShape(past.body);
  }, 60_000);

  it("answers PostHog's 400s for a missing value or key, and 404 for a missing person", async () => {
    const ctx = await project();
    const [person] = await seed(ctx, [{ properties: {} }]);
    const base = `${ctx.prefixes[0]}${person!.id}/update_property/`;
    const noValue = await ctx.c.post(base, { key: 'plan' });
    expect(noValue.status).toBe(400);
    expectErrorShape(noValue.body);
    expect(noValue.body).toMatchObject({ type: 'validation_error', attr: 'value', code: 'required' });
    const noKey = await ctx.c.post(base, { value: 'x' });
    expect(noKey.status).toBe(400);
    expect(noKey.body).toMatchObject({ type: 'validation_error', attr: 'key', code: 'required' });
    const missing = await ctx.c.post(`${ctx.prefixes[0]}999999999/update_property/`, { key: 'a', value: 1 });
    expect(missing.status).toBe(404);
    expect((await ctx.c.get(`${ctx.prefixes[0]}${person!.id}/`)).body.properties).toEqual({});
  });
});

describe('POST persons/reset_person_distinct_id', () => {
  it('frees a distinct id still tied to a deleted person, so its next event makes a new person', async () => {
    const ctx = await project();
    // A distinct id whose person is gone (what a merge racing a delete can leave): ingestion could
    // neither find its person nor claim it for a new one.
    const [gone] = await seed(ctx, [{ properties: {}, distinct_id: 'orphan' }]);
    const [, ...distinctItems] = personItems(gone!);
    const [live] = await seed(ctx, [{ properties: { plan: 'pro' }, distinct_id: 'in-use' }]);
    const persons = ctx.prefixes[0]!;
    expect((await ctx.c.delete(`${persons}${gone!.id}/`)).status).toBe(204);
    await batchPut(distinctItems);

    for (const base of ctx.prefixes) {
      const res = await ctx.c.post(`${base}reset_person_distinct_id/`, { distinct_id: 'orphan' });
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
    }
    await api.as().post('/batch', {
      api_key: ctx.token,
      batch: [{ event: 'seen', distinct_id: 'orphan', properties: { $set: { back: true } } }],
    });
    const reborn = await eventually(async () => {
      const res = await ctx.c.get(`${persons}?distinct_id=orphan`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0];
    });
    expect(reborn.id).not.toBe(gone!.id);
    expect(reborn.properties).toEqual({ back: true });

    // An id in use by a live person stays with it.
    expect((await ctx.c.post(`${persons}reset_person_distinct_id/`, { distinct_id: 'in-use' })).status).toBe(202);
    expect((await ctx.c.get(`${persons}?distinct_id=in-use`)).body.results.map((p: { id: number }) => p.id)).toEqual([
      live!.id,
    ]);
  });

  it("answers PostHog's 400 without a distinct_id", async () => {
    const ctx = await project();
    for (const body of [{}, { distinct_id: '' }, { distinct_id: 42 }]) {
      const res = await ctx.c.post(`${ctx.prefixes[0]}reset_person_distinct_id/`, body);
      expect(res.status).toBe(400);
      expectErrorShape(res.body);
      expect(res.body).toMatchObject({ type: 'validation_error', detail: 'distinct_id is required', attr: null });
    }
  });
});

describe('POST persons/bulk_delete by PostHog uuid', () => {
  it('deletes the persons of the uuids given (any case) beside integer ids, and reports unknown uuids', async () => {
    const ctx = await project();
    const [a, b, c, kept] = await seed(ctx, [
      { properties: {} },
      { properties: {} },
      { properties: {} },
      { properties: {} },
    ]);
    const unknown = '00000000-0000-7000-9000-000000000000';
    const res = await ctx.c.post(`${ctx.prefixes[1]}bulk_delete/`, {
      ids: [a!.uuid, b!.uuid.toUpperCase(), c!.id, unknown],
    });
    expect(res.status).toBe(202);
    expect([...res.body.deleted].sort()).toEqual([a!.id, b!.id, c!.id].sort());
    expect(res.body.not_found).toEqual([unknown]);
    expect(res.body.scan_limited).toBeUndefined();
    for (const p of [a, b, c]) expect((await ctx.c.get(`${ctx.prefixes[0]}${p!.id}/`)).status).toBe(404);
    expect((await ctx.c.get(`${ctx.prefixes[0]}${kept!.id}/`)).status).toBe(200);
  });

  it('never deletes another project’s person by its uuid', async () => {
    const mine = await project();
    const theirs = await project();
    const [victim] = await seed(theirs, [{ properties: {} }]);
    const res = await mine.c.post(`${mine.prefixes[0]}bulk_delete/`, { ids: [victim!.uuid] });
    // Nothing found, and said so in PostHog's terms too.
    expect(res.body).toMatchObject({ deleted: [], not_found: [victim!.uuid], persons_found: 0, persons_deleted: 0 });
    expect((await theirs.c.get(`${theirs.prefixes[0]}${victim!.id}/`)).status).toBe(200);
  });
});
