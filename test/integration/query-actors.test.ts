import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '#shared/config.ts';
import { batchPut } from '#shared/db/batch.ts';
import { personItems } from '#shared/db/persons.ts';
import { eventually, expectErrorShape, newProject, useApi, type Client } from '../support/api.ts';

// Read once by this process's first request (config is built once): each request of this file reads at
// most 1,000 persons besides its rows, so the caps are reached with a few thousand persons.
process.env[ENV.personScanLimit] = '1000';

const api = useApi();

interface Ctx {
  c: Client;
  projectId: number;
  token: string;
  path: string;
}

async function project(): Promise<Ctx> {
  const p = await newProject(api.as);
  return { c: api.as(p.key), projectId: p.projectId, token: p.token, path: `/api/environments/${p.projectId}/query/` };
}

const START = Date.parse('2024-01-01T00:00:00Z');
const seededAt = (i: number) => new Date(START + i * 60_000).toISOString();

/**
 * Persons written straight into the table (BatchWriteItem): what is tested is the query, not ingestion.
 * `claims: false` leaves out their distinct-id items (lookups the query never reads), to seed thousands faster.
 */
async function seed(
  ctx: Ctx,
  count: number,
  properties: (i: number) => Record<string, unknown>,
  { claims = true, firstId = 1_000_000 } = {},
) {
  await batchPut(
    Array.from({ length: count }, (_, i) =>
      personItems({
        id: firstId + i,
        uuid: `00000000-0000-7000-8000-${String(firstId + i).padStart(12, '0')}`,
        project_id: ctx.projectId,
        properties: properties(i),
        distinct_ids: [`seed-${i}`, `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`],
        created_at: seededAt(i),
        is_identified: i % 2 === 0,
        version: 1,
      }).slice(0, claims ? undefined : 1),
    ).flat(),
  );
}

const actors = (ctx: Ctx, query: Record<string, unknown>) =>
  ctx.c.post(ctx.path, { query: { kind: 'ActorsQuery', ...query } });

async function ok(ctx: Ctx, query: Record<string, unknown>) {
  const res = await actors(ctx, query);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function refused(ctx: Ctx, query: Record<string, unknown>, attr: string) {
  const res = await actors(ctx, query);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expectErrorShape(res.body);
  expect(res.body).toMatchObject({ type: 'validation_error', attr });
  return res.body.detail as string;
}

/** Every page from offset 0 by `limit` until hasMore is false; `between` runs after each page. */
async function walk(ctx: Ctx, query: Record<string, unknown>, limit: number, between?: () => Promise<void>) {
  const pages: any[] = [];
  for (let offset = 0; pages.length < 500; offset += limit) {
    const body = await ok(ctx, { ...query, limit, offset });
    pages.push(body);
    if (!body.hasMore) break;
    await between?.();
  }
  return pages;
}

const plan = (i: number) => (i % 10 === 0 ? 'pro' : 'free');

describe('ActorsQuery over persons', () => {
  let ctx: Ctx;
  // 12 persons: person i created i minutes after START; n = i except that persons 3 and 7 have none.
  beforeAll(async () => {
    ctx = await project();
    await seed(ctx, 12, (i) => ({
      email: `Person${i}@Example.com`,
      plan: plan(i),
      ...(i === 3 || i === 7 ? {} : { n: i }),
      ...(i === 5 ? { name: 'Ada Lovelace', address: { city: 'London' } } : {}),
    }));
  });

  it('answers PostHog default columns, newest first, with the person as PostHog shapes it', async () => {
    const body = await ok(ctx, {});
    expect(body).toMatchObject({
      columns: ['person', 'id', 'person.$delete'],
      types: ['Int64', 'Int64', 'UInt8'],
      hasMore: false,
      limit: 100,
      offset: 0,
      missing_actors_count: 0,
    });
    expect(body.hogql).toContain('FROM persons');
    expect(body.results.map((r: any) => r[1])).toEqual(Array.from({ length: 12 }, (_, i) => 1_000_011 - i));
    expect(body.results[0]).toEqual([
      {
        id: 1_000_011,
        uuid: '00000000-0000-7000-8000-000001000011',
        distinct_ids: ['seed-11', '00000000-0000-4000-8000-000000000011'],
        properties: { email: 'Person11@Example.com', plan: 'free', n: 11 },
        is_identified: false,
        created_at: seededAt(11),
      },
      1_000_011,
      1,
    ]);
  });

  it('selects scalar columns, properties with or without person., nested keys and labelled columns', async () => {
    const columns = [
      'id',
      'created_at',
      'distinct_ids',
      'is_identified',
      'properties.email',
      'person.properties.plan',
      'properties.address.city',
      'properties.`no such key`',
      'person_display_name -- Person',
    ];
    const body = await ok(ctx, { select: columns, search: 'ada' });
    expect(body.columns).toEqual(columns);
    expect(body.types).toHaveLength(9);
    expect(body.missing_actors_count).toBeNull();
    expect(body.results).toEqual([
      [
        1_000_005,
        seededAt(5),
        ['seed-5', '00000000-0000-4000-8000-000000000005'],
        false,
        'Person5@Example.com',
        'free',
        'London',
        null,
        { display_name: 'Person5@Example.com', id: '1000005' },
      ],
    ]);
  });

  it('searches e-mail, name and distinct ids case-insensitively, by substring', async () => {
    const ids = async (search: string) => (await ok(ctx, { select: ['id'], search })).results.map((r: any) => r[0]);
    expect(await ids('person1')).toEqual([1_000_011, 1_000_010, 1_000_001]);
    expect(await ids('LOVELACE')).toEqual([1_000_005]);
    expect(await ids('seed-7')).toEqual([1_000_007]);
    expect(await ids('nobody')).toEqual([]);
  });

  it('filters by person properties (PostHog filters, RE2 regexes), with fixedProperties and search ANDed', async () => {
    const ids = async (q: Record<string, unknown>) =>
      (await ok(ctx, { select: ['id'], ...q })).results.map((r: any) => r[0]);
    expect(await ids({ properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }] })).toEqual([
      1_000_010, 1_000_000,
    ]);
    expect(await ids({ properties: [{ key: 'email', value: '^Person1[01]@', operator: 'regex' }] })).toEqual([
      1_000_011, 1_000_010,
    ]);
    expect(
      await ids({
        properties: { type: 'AND', values: [{ key: 'n', value: 8, operator: 'gt', type: 'person' }] },
        fixedProperties: [{ key: 'plan', value: 'free', operator: 'exact', type: 'person' }],
        search: 'person1',
      }),
    ).toEqual([1_000_011]);
  });

  it('orders by created_at and by a property, ascending or descending (missing values last)', async () => {
    const ids = async (orderBy: string[]) =>
      (await ok(ctx, { select: ['id'], orderBy })).results.map((r: any) => r[0] - 1_000_000);
    const all = Array.from({ length: 12 }, (_, i) => i);
    expect(await ids(['created_at ASC'])).toEqual(all);
    expect(await ids(['person.created_at DESC'])).toEqual([...all].reverse());
    expect(await ids(['created_at'])).toEqual(all);
    expect(await ids(['properties.n ASC'])).toEqual([0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 3, 7]);
    expect(await ids(['person.properties.n DESC'])).toEqual([11, 10, 9, 8, 6, 5, 4, 2, 1, 0, 7, 3]);
    // Strings sort as text (Person10 before Person2, Person1@ after Person11@); `person` sorts by its e-mail, as PostHog's does.
    expect(await ids(['person DESC'])).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 11, 10, 0]);
  });

  it('pages by limit and offset in every order: each person once, no short page before the last', async () => {
    for (const orderBy of [
      undefined,
      ['created_at ASC'],
      ['properties.n DESC'],
      ['properties.email ASC'],
      ['properties.plan', 'toFloat(properties.n) * -1 DESC', 'id DESC'],
    ]) {
      const pages = await walk(ctx, { select: ['id'], ...(orderBy ? { orderBy } : {}) }, 5);
      expect(pages.map((p) => p.results.length)).toEqual([5, 5, 2]);
      expect(pages.map((p) => [p.limit, p.offset, p.hasMore])).toEqual([
        [5, 0, true],
        [5, 5, true],
        [5, 10, false],
      ]);
      const seen = pages.flatMap((p) => p.results.map((r: any) => r[0]));
      expect(new Set(seen).size).toBe(12);
      expect(seen).toEqual(
        (await ok(ctx, { select: ['id'], ...(orderBy ? { orderBy } : {}) })).results.map((r: any) => r[0]),
      );
    }
    // An offset no page ended at is skipped to; a page past the end is empty.
    expect((await ok(ctx, { select: ['id'], offset: 7, limit: 2 })).results).toEqual([[1_000_004], [1_000_003]]);
    expect(await ok(ctx, { select: ['id'], offset: 50 })).toMatchObject({ results: [], hasMore: false });
  });

  it('walks oldest first and by a property exactly while persons are created before and after the position', async () => {
    let created = 0;
    const capture = async (timestamp: string, n: number) => {
      const distinctId = `walker-${created++}-x`;
      const batch = [{ event: 'signed up', distinct_id: distinctId, timestamp, properties: { $set: { n } } }];
      expect((await api.as().post('/batch', { api_key: ctx.token, batch })).status).toBe(200);
      const found = async () => (await ok(ctx, { select: ['id'], search: distinctId })).results;
      await eventually(async () => expect(await found()).toHaveLength(1), 30_000);
    };
    for (const orderBy of [['created_at ASC'], ['properties.n DESC']]) {
      const before = (await ok(ctx, { select: ['id'], orderBy })).results.map((r: any) => r[0]);
      // Between pages: one person first in both orders (behind the walk's position), one last.
      const pages = await walk(ctx, { select: ['id'], orderBy }, 4, async () => {
        await capture(seededAt(-1), 100);
        await capture(new Date().toISOString(), -1);
      });
      expect(pages.slice(0, -1).every((p) => p.results.length === 4 && p.hasMore)).toBe(true);
      const seen = pages.flatMap((p) => p.results.map((r: any) => r[0]));
      expect(new Set(seen).size).toBe(seen.length);
      // Every person of the walk's start exactly once, in its order; those created at the end are seen too.
      expect(seen.filter((id: number) => before.includes(id))).toEqual(before);
      expect(seen.length).toBeGreaterThan(before.length);
    }
  }, 120_000);

  it('walks on from where the last page ended when persons are deleted meanwhile, that one included', async () => {
    const everyone = (await ok(ctx, { select: ['id'] })).results.map((r: any) => r[0]);
    const gone: number[] = [];
    const pages = await walk(ctx, { select: ['id'] }, 3, async () => {
      if (gone.length) return;
      // After the first page: its last person (where the walk stands) and the next one.
      gone.push(everyone[2], everyone[3]);
      for (const id of gone)
        expect((await ctx.c.delete(`/api/environments/${ctx.projectId}/persons/${id}/`)).status).toBe(204);
    });
    const seen = pages.flatMap((p) => p.results.map((r: any) => r[0]));
    expect(seen).toEqual(everyone.filter((id: number) => id !== everyone[3]));
  });

  it('refuses what it cannot answer with a 400 pointing into the query', async () => {
    await refused(ctx, { select: ['constructor'] }, 'query__select__0');
    await refused(ctx, { select: ['id', 'person.__proto__'] }, 'query__select__1');
    await refused(ctx, { orderBy: ['toString DESC'] }, 'query__orderBy__0');
    expect(await refused(ctx, { select: ['id', 'count()'] }, 'query__select__1')).toMatch(/aggregate/);
    await refused(ctx, { orderBy: ['properties.n SIDEWAYS'] }, 'query__orderBy__0');
    expect(await refused(ctx, { orderBy: ['event ASC'] }, 'query__orderBy__0')).toMatch(/is not a field/);
    expect(await refused(ctx, { orderBy: Array.from({ length: 11 }, () => 'id') }, 'query__orderBy')).toMatch(
      /At most 10/,
    );
    await refused(ctx, { select: ['id', 'uuid', 'nosuchfunction(id)'] }, 'query__select__2');
    await refused(ctx, { orderBy: ['created_at', 'lower('] }, 'query__orderBy__1');
    expect(await refused(ctx, { select: ['sum(properties.n)'] }, 'query__select__0')).toMatch(/row per person/);
    expect(await refused(ctx, { limit: 1001 }, 'query__limit')).toMatch(/less than or equal to 1000/);
    await refused(ctx, { limit: 0 }, 'query__limit');
    await refused(ctx, { limit: 'ten' }, 'query__limit');
    await refused(ctx, { offset: -1 }, 'query__offset');
    await refused(ctx, { search: 5 }, 'query__search');
    expect(await refused(ctx, { source: { kind: 'HogQLQuery', query: 'select 1' } }, 'query__source__kind')).toMatch(
      /InsightActorsQuery/,
    );
    await refused(
      ctx,
      { properties: [{ key: 'n', value: 1, operator: 'sideways' }] },
      'query__properties__0__operator',
    );
    await refused(ctx, { fixedProperties: 'not json' }, 'query__fixedProperties');
  });
});

describe('ActorsQuery HogQL expressions', () => {
  let ctx: Ctx;
  // The same 12 persons as above, in a project of their own (the walks above add persons to theirs).
  beforeAll(async () => {
    ctx = await project();
    await seed(ctx, 12, (i) => ({
      email: `Person${i}@Example.com`,
      plan: plan(i),
      ...(i === 3 || i === 7 ? {} : { n: i }),
      ...(i === 5 ? { name: 'Ada Lovelace', address: { city: 'London' } } : {}),
    }));
  });

  it('selects HogQL expressions over the person, typed by their values', async () => {
    const columns = [
      'id',
      "concat(properties.plan, '-', toString(properties.n))",
      'lower(properties.email) AS email',
      'person.properties.n * 10',
      'toStartOfDay(created_at) -- Day',
      'properties.address.city IS NULL',
    ];
    const body = await ok(ctx, { select: columns, orderBy: ['created_at ASC'], limit: 6 });
    expect(body.columns).toEqual(columns);
    expect(body.results[5]).toEqual([
      1_000_005,
      'free-5',
      'person5@example.com',
      50,
      '2024-01-01T00:00:00+00:00',
      false,
    ]);
    expect(body.results[3]).toEqual([
      1_000_003,
      'free-',
      'person3@example.com',
      null,
      '2024-01-01T00:00:00+00:00',
      true,
    ]);
    expect(body.types).toEqual(['Int64', 'String', 'String', 'Nullable(Int64)', "DateTime64(6, 'UTC')", 'Bool']);
  });

  it('orders by expressions, several orders, each its own direction (nulls last either way)', async () => {
    const ids = async (orderBy: string[]) =>
      (await ok(ctx, { select: ['id'], orderBy })).results.map((r: any) => r[0] - 1_000_000);
    // pro (0, 10) before free; within a plan, n descending; persons 3 and 7 (no n) last in their plan.
    expect(await ids(['properties.plan DESC', 'toFloat(properties.n) DESC'])).toEqual([
      10, 0, 11, 9, 8, 6, 5, 4, 2, 1, 7, 3,
    ]);
    // n modulo 3, then newest first.
    expect(await ids(['properties.n % 3', 'created_at DESC'])).toEqual([9, 6, 0, 10, 4, 1, 11, 8, 5, 2, 7, 3]);
    expect(await ids(['length(properties.email) DESC', 'id ASC'])).toEqual([10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // As PostHog's UI sends a labelled column's order: the direction after the label.
    expect(await ids(['person_display_name -- Person DESC'])).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 11, 10, 0]);
  });
});

describe('ActorsQuery paging at depth', () => {
  let ctx: Ctx;
  const SEEDED = 5000;
  beforeAll(async () => {
    ctx = await project();
    await seed(ctx, SEEDED, (i) => ({ email: `p${i}@example.com`, plan: plan(i), n: i }), { claims: false });
  }, 180_000);

  async function personCount() {
    const res = await ctx.c.get(`/api/environments/${ctx.projectId}/persons/?limit=1`);
    return res.body.count as number; // the kept counter: seeded persons are not in it, captured ones are
  }

  it('a walk over 5,000 persons while 500 more are captured sees every person once, with no short page before the last', async () => {
    const LIMIT = 100;
    const PER_PAGE = 10;
    const now = Date.now();
    // Half the new persons are created now (first in newest-first order, where they would shift every
    // later offset), half back-dated into the middle of the walk's range.
    const events = Array.from({ length: 500 }, (_, i) => ({
      event: 'signed up',
      distinct_id: `new-${i}`,
      timestamp: new Date(i % 2 ? now - i * 1000 : START + ((i * 7919) % SEEDED) * 60_000 + 30_000).toISOString(),
    }));
    let sent = 0;
    const before = await personCount();
    const pages = await walk(ctx, { select: ['id', 'created_at'] }, LIMIT, async () => {
      if (sent >= events.length) return;
      const batch = events.slice(sent, sent + PER_PAGE);
      sent += batch.length;
      expect((await api.as().post('/batch', { api_key: ctx.token, batch })).status).toBe(200);
      // Persons are created while the next pages are read; every 10 pages the walk waits until all
      // those sent so far exist, so creation provably interleaves with the walk.
      if (sent % (10 * PER_PAGE) === 0)
        await eventually(async () => expect(await personCount()).toBe(before + sent), 60_000);
    });
    expect(sent).toBe(500);
    expect(pages.at(-1).hasMore).toBe(false);
    for (const page of pages.slice(0, -1)) {
      expect(page.hasMore).toBe(true);
      expect(page.results).toHaveLength(LIMIT);
    }
    const seen = pages.flatMap((p) => p.results.map((r: any) => r[0] as number));
    const counts = new Map<number, number>();
    for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
    const seeded = seen.filter((id) => id >= 1_000_000);
    expect(seeded).toHaveLength(SEEDED);
    // Newest first throughout, and the back-dated persons created behind the walk's position were seen.
    const times = pages.flatMap((p) => p.results.map((r: any) => r[1] as string));
    expect([...times].sort().reverse()).toEqual(times);
    expect(seen.length).toBeGreaterThan(SEEDED);
  }, 180_000);

  it('caps work per request: a cold deep offset, a sparse filter and a property order over too many persons', async () => {
    expect(await refused(ctx, { select: ['id'], offset: 2500, orderBy: ['created_at ASC'] }, 'query__offset')).toMatch(
      /1,000 persons/,
    );
    expect(
      await refused(ctx, { select: ['id'], search: 'p4999@', orderBy: ['created_at ASC'] }, 'query__search'),
    ).toMatch(/1,000 persons/);
    expect(
      await refused(
        ctx,
        { select: ['id'], properties: [{ key: 'n', value: 3, operator: 'exact' }], orderBy: ['created_at ASC'] },
        'query__properties',
      ),
    ).toMatch(/1,000 persons/);
    expect(await refused(ctx, { select: ['id'], orderBy: ['properties.n ASC'] }, 'query__orderBy__0')).toMatch(
      /1,000 persons/,
    );
    // Within the cap a filter scans on; a walk's later pages start where the last ended, at any depth.
    const pro = await ok(ctx, {
      select: ['id'],
      properties: [{ key: 'plan', value: 'pro', operator: 'exact' }],
      limit: 50,
    });
    expect(pro.results).toHaveLength(50);
    expect(pro.hasMore).toBe(true);
  });
});
