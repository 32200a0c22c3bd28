import { describe, expect, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { type CohortRecord, getCohort } from '#shared/db/cohorts.ts';
import { eventItem, putEventItems, utcDays } from '#shared/db/events.ts';
import { personItems } from '#shared/db/persons.ts';
import { readDayCounters } from '#shared/db/segments.ts';
import type { Caller } from '#shared/domain/access.ts';
import { calculateCohortStep } from '#shared/domain/cohort-calculation.ts';
import { createCohort, startCalculation } from '#shared/domain/cohorts.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import type { QueuedCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { type Client, eventually, newProject, useApi } from '../support/api.ts';
import { withItemsRead } from '../support/items-read.ts';

const api = useApi();
const DAY_MS = 86_400_000;
const caller = { user: { email: 'count@test.example', first_name: 'Count' } } as unknown as Caller;

interface Ctx {
  c: Client;
  projectId: number;
  base: string;
  queued: QueuedCohortCalculation[];
  queue: (m: QueuedCohortCalculation) => Promise<void>;
}

async function project(): Promise<Ctx> {
  const p = await newProject(api.as);
  const queued: QueuedCohortCalculation[] = [];
  return {
    c: api.as(p.key),
    projectId: p.projectId,
    base: `/api/environments/${p.projectId}/cohorts/`,
    queued,
    queue: async (m) => {
      queued.push(m);
    },
  };
}

/** Persons `d-0` … `d-(count-1)` written straight into the table, ids from `first` in creation order. */
async function seedPersons(ctx: Ctx, count: number, first: number): Promise<number[]> {
  const base = Date.parse('2024-01-01T00:00:00Z');
  const ids = Array.from({ length: count }, (_, i) => first + i);
  await batchPut(
    ids.flatMap((id, i) =>
      personItems({
        id,
        uuid: `00000000-0000-7000-8000-${String(id).padStart(12, '0')}`,
        project_id: ctx.projectId,
        properties: { i },
        distinct_ids: [`d-${i}`],
        created_at: new Date(base + i * 1000).toISOString(),
        is_identified: true,
        version: 1,
      }),
    ),
  );
  return ids;
}

let serial = 0;
const event = (ctx: Ctx, name: string, distinctId: string, at: number, properties: Record<string, unknown> = {}) =>
  eventItem({
    uuid: `0190f000-0000-7000-a000-${String(++serial).padStart(12, '0')}`,
    event: name,
    distinct_id: distinctId,
    project_id: ctx.projectId,
    properties,
    timestamp: new Date(at).toISOString(),
    inserted_at: new Date().toISOString(),
  });

/** Events stored as capture stores them; resolves once the ingest worker has counted them all. */
async function store(ctx: Ctx, items: Record<string, unknown>[], total: number) {
  await putEventItems(items);
  const from = new Date(Date.now() - 60 * DAY_MS);
  await eventually(async () => {
    const counters = await readDayCounters(ctx.projectId, utcDays(from, new Date(Date.now() + DAY_MS)), null);
    let n = 0;
    for (const day of counters.values()) for (const c of day.values()) n += c.tally.count;
    expect(n).toBe(total);
  }, 60_000);
}

/** Runs the queued steps until none is left; returns how many ran. */
async function drain(ctx: Ctx, options: Parameters<typeof calculateCohortStep>[3], stopAt = () => Date.now() + 60_000) {
  let steps = 0;
  while (ctx.queued.length) {
    await calculateCohortStep(ctx.queued.shift()!, ctx.queue, stopAt(), options);
    steps += 1;
    expect(steps).toBeLessThan(40);
  }
  return steps;
}

async function members(ctx: Ctx, id: number): Promise<number[]> {
  const res = await ctx.c.get(`${ctx.base}${id}/persons/?limit=100`);
  expect(res.status).toBe(200);
  return res.body.results.map((p: { id: number }) => p.id).sort((a: number, b: number) => a - b);
}

/** Event items and segment chunks DynamoDB hands back while `run` runs. */
async function itemsRead(run: () => Promise<unknown>): Promise<{ events: number; chunks: number }> {
  let events = 0;
  let chunks = 0;
  await withItemsRead((item) => {
    if (item.entity === 'Event') events += 1;
    if (item.entity === 'EventSegment') chunks += 1;
  }, run);
  return { events, chunks };
}

const performed = (key: string | number, eventType: 'events' | 'actions', operator_value = 1) => ({
  properties: {
    type: 'AND',
    values: [
      {
        type: 'behavioral',
        value: 'performed_event_multiple',
        key,
        event_type: eventType,
        operator: 'gte',
        operator_value,
        time_value: 30,
        time_interval: 'day',
      },
    ],
  },
});

describe('behavioural cohorts counted on the trend engine columns', () => {
  it('counts a window whose closed days are compacted segments and whose today is raw, both exactly', async () => {
    const ctx = await project();
    const ids = await seedPersons(ctx, 5, 8_100_000);
    const now = Date.now();
    const today = new Date(now).toISOString().slice(0, 10);
    // Noon of 3 and 2 days ago: whole UTC days the compactor closes; today's events stay raw.
    const noon = (daysAgo: number) =>
      Date.parse(`${new Date(now - daysAgo * DAY_MS).toISOString().slice(0, 10)}T12:00:00Z`);
    const old = [3, 2].map((d) => new Date(noon(d)).toISOString().slice(0, 10));
    const items = [
      // d-0: 2 in segments + 1 raw = 3; d-1: 2 in segments (one "pro"); d-2: 1 raw; d-3: only 40 days ago; d-4: another event.
      event(ctx, 'bought', 'd-0', noon(3), { plan: 'pro' }),
      event(ctx, 'bought', 'd-0', noon(2), { plan: 'free' }),
      event(ctx, 'bought', 'd-1', noon(3), { plan: 'free' }),
      event(ctx, 'bought', 'd-1', noon(2) + 60_000, { plan: 'pro' }),
      event(ctx, 'bought', 'd-3', now - 40 * DAY_MS, { plan: 'pro' }),
      event(ctx, 'viewed', 'd-4', noon(2), { plan: 'pro' }),
      ...Array.from({ length: 20 }, (_, i) => event(ctx, 'viewed', 'd-4', noon(3) + i * 1000)),
    ];
    await store(ctx, items, items.length);
    for (const day of old) {
      const result = await compactDay(ctx.projectId, day, new Date(Date.now() + 70_000));
      expect(result.complete).toBe(true);
    }
    const tail = [
      event(ctx, 'bought', 'd-0', now - 60_000, { plan: 'pro' }),
      event(ctx, 'bought', 'd-2', now - 120_000, { plan: 'free' }),
    ];
    expect(tail.every((e) => String(e.timestamp).startsWith(today))).toBe(true);
    await store(ctx, tail, items.length + tail.length);

    const action = await ctx.c.post(`/api/environments/${ctx.projectId}/actions/`, {
      name: 'Bought pro',
      steps: [{ event: 'bought', properties: [{ key: 'plan', value: 'pro', type: 'event' }] }],
    });
    expect(action.status).toBe(201);
    const once = await createCohort(
      caller,
      ctx.projectId,
      { name: 'Bought', filters: performed('bought', 'events') },
      ctx.queue,
    );
    const thrice = await createCohort(
      caller,
      ctx.projectId,
      { name: 'Bought 3 times', filters: performed('bought', 'events', 3) },
      ctx.queue,
    );
    const pro = await createCohort(
      caller,
      ctx.projectId,
      { name: 'Bought pro', filters: performed(action.body.id, 'actions') },
      ctx.queue,
    );
    // The compacted days come from their segments (read once: this container keeps them for the next
    // leaves); only today's raw events are read as items, by each of the three leaves.
    const read = await itemsRead(() => drain(ctx, {}));
    expect(read.chunks).toBeGreaterThanOrEqual(old.length);
    expect(read.events).toBe(tail.length * 3);

    const [once_, thrice_, pro_] = await Promise.all(
      [once, thrice, pro].map(async (c) => (await ctx.c.get(`${ctx.base}${c.id}/`)).body),
    );
    expect(once_).toMatchObject({ is_calculating: false, errors_calculating: 0, count: 3 });
    expect(await members(ctx, once.id)).toEqual([ids[0], ids[1], ids[2]]);
    expect(thrice_).toMatchObject({ count: 1 });
    expect(await members(ctx, thrice.id)).toEqual([ids[0]]);
    // The action's property filter is evaluated on the segments' `plan` column and on the raw rows.
    expect(pro_).toMatchObject({ count: 2 });
    expect(await members(ctx, pro.id)).toEqual([ids[0], ids[1]]);
  }, 240_000);

  it('a calculation in several steps evaluates one window, the one at its start', async () => {
    const ctx = await project();
    const ids = await seedPersons(ctx, 4, 8_200_000);
    const items = [event(ctx, 'clicked', 'd-0', Date.now() - 3_600_000)];
    await store(ctx, items, 1);
    const created = await createCohort(
      caller,
      ctx.projectId,
      { name: 'Clicked', filters: performed('clicked', 'events') },
      ctx.queue,
    );
    const startedAt = ((await getCohort(ctx.projectId, created.id)) as CohortRecord).calculation!.started_at!;
    expect(startedAt).toBeDefined();
    // A budget already spent: each step does one page of two persons, then queues the next.
    const options = { pageSize: 2 };
    await calculateCohortStep(ctx.queued.shift()!, ctx.queue, 0, options);
    expect(((await getCohort(ctx.projectId, created.id)) as CohortRecord).calculation?.after).toBeDefined();
    // d-3 (on a later page) clicks after the calculation started: outside its window, whichever step reads it.
    await new Promise((r) => setTimeout(r, 5));
    const late = [event(ctx, 'clicked', 'd-3', Date.now())];
    expect(Date.parse(String(late[0]!.timestamp))).toBeGreaterThan(Date.parse(startedAt));
    await store(ctx, late, 2);
    const steps = await drain(ctx, options, () => 0);
    expect(steps).toBeGreaterThanOrEqual(2);
    const cohort = (await ctx.c.get(`${ctx.base}${created.id}/`)).body;
    expect(cohort).toMatchObject({ is_calculating: false, count: 1 });
    expect(await members(ctx, created.id)).toEqual([ids[0]]);
    // The next calculation starts later: its window has d-3's click.
    await startCalculation((await getCohort(ctx.projectId, created.id)) as CohortRecord, ctx.queue);
    await drain(ctx, {});
    expect(await members(ctx, created.id)).toEqual([ids[0], ids[3]]);
  }, 240_000);

  it('a window holding more events than the cap fails the calculation: errors_calculating, count kept, no retry', async () => {
    const ctx = await project();
    const ids = await seedPersons(ctx, 3, 8_300_000);
    const now = Date.now();
    const items = [
      ...Array.from({ length: 4 }, (_, i) => event(ctx, 'paid', 'd-0', now - (i + 1) * 3_600_000)),
      ...Array.from({ length: 3 }, (_, i) => event(ctx, 'paid', 'd-1', now - (i + 1) * 60_000)),
    ];
    await store(ctx, items, items.length);
    const created = await createCohort(
      caller,
      ctx.projectId,
      { name: 'Paid', filters: performed('paid', 'events') },
      ctx.queue,
    );
    await drain(ctx, { maxWindowEvents: 7 });
    expect((await ctx.c.get(`${ctx.base}${created.id}/`)).body).toMatchObject({ count: 2, errors_calculating: 0 });

    for (const attempt of [1, 2]) {
      await startCalculation((await getCohort(ctx.projectId, created.id)) as CohortRecord, ctx.queue);
      const steps = await drain(ctx, { maxWindowEvents: 6 });
      // One step that ends it: nothing queued again.
      expect(steps).toBe(1);
      const body = (await ctx.c.get(`${ctx.base}${created.id}/`)).body;
      expect(body).toMatchObject({ is_calculating: false, count: 2, errors_calculating: attempt });
      expect(body.last_calculation).not.toBeNull();
      expect(await members(ctx, created.id)).toEqual([ids[0], ids[1]]);
    }
  }, 240_000);
});
