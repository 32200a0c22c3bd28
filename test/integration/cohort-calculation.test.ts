import { describe, expect, it } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { type CohortRecord, getCohort, membersPage, putCohort } from '#shared/db/cohorts.ts';
import { personItems } from '#shared/db/persons.ts';
import type { Caller } from '#shared/domain/access.ts';
import { CALCULATION_PAGE, calculateCohortStep } from '#shared/domain/cohort-calculation.ts';
import { createCohort, MAX_COHORTS_PER_PROJECT } from '#shared/domain/cohorts.ts';
import type { QueuedCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { expectErrorShape, newProject, useApi } from '../support/api.ts';

const api = useApi();

/** Persons written straight into the table, `n` = 0, 1, 2, … in creation order. */
async function seed(projectId: number, count: number, first: number) {
  const base = Date.parse('2024-01-01T00:00:00Z');
  await batchPut(
    Array.from({ length: count }, (_, i) =>
      personItems({
        id: first + i,
        uuid: `00000000-0000-7000-8000-${String(first + i).padStart(12, '0')}`,
        project_id: projectId,
        properties: { n: i },
        distinct_ids: [`calc-${i}`],
        created_at: new Date(base + i * 1000).toISOString(),
        is_identified: true,
        version: 1,
      }),
    ).flat(),
  );
}

describe('cohort calculation in pages that resume', () => {
  it('a step that runs out of time queues its continuation; the next resumes where it stopped', async () => {
    const p = await newProject(api.as);
    const persons = CALCULATION_PAGE + 100;
    await seed(p.projectId, persons, 7_000_000);
    const queued: QueuedCohortCalculation[] = [];
    const queue = async (m: QueuedCohortCalculation) => {
      queued.push(m);
    };
    const caller = { user: { email: 'calc@test.example', first_name: 'Calc' } } as unknown as Caller;
    const created = await createCohort(
      caller,
      p.projectId,
      {
        name: 'Upper half',
        filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'n', value: 300, operator: 'gte' }] } },
      },
      queue,
    );
    expect(queued).toHaveLength(1);

    // Each step gets a budget shorter than a page: it does at most one, saves its position and queues itself.
    const steps: { finished: boolean; examined: number; after?: string }[] = [];
    while (queued.length) {
      const message = queued.shift()!;
      const step = await calculateCohortStep(message, queue, Date.now() + 50);
      const cohort = (await getCohort(p.projectId, created.id)) as CohortRecord;
      steps.push({ ...step, after: cohort.calculation?.after });
      expect(steps.length).toBeLessThan(60);
    }
    const unfinished = steps.filter((s) => !s.finished);
    expect(unfinished.length).toBeGreaterThanOrEqual(2);
    // Resumed, never restarted: every person was examined exactly once over all the steps.
    expect(steps.reduce((n, s) => n + s.examined, 0)).toBe(persons);
    const positions = steps.flatMap((s) => (s.after ? [s.after] : []));
    expect([...positions].sort()).toEqual(positions);

    const cohort = (await getCohort(p.projectId, created.id)) as CohortRecord;
    expect(cohort).toMatchObject({ is_calculating: false, count: persons - 300 });
    expect(cohort.last_calculation).not.toBeNull();
    const page = await membersPage(p.projectId, created.id, { limit: 2_000 });
    expect(page.members).toHaveLength(persons - 300);
    expect(page.members[0]!.personId).toBe(7_000_000 + 300);
  }, 240_000);
});

describe('cohorts per project', () => {
  it(`a project has at most ${MAX_COHORTS_PER_PROJECT} live cohorts: the next is a 400 naming the cap; deleted ones do not count`, async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const at = new Date().toISOString();
    const record = (id: number, deleted: boolean): CohortRecord => ({
      id,
      project_id: p.projectId,
      name: `c${id}`,
      description: '',
      filters: { properties: {} },
      is_static: true,
      deleted,
      created_at: at,
      created_by: { email: 'seed@test.example', first_name: 'Seed' },
      count: 0,
      is_calculating: false,
      last_calculation: at,
      errors_calculating: 0,
      behavioural: false,
      references: [],
      version: 1,
    });
    // Ids far from the counter's: the API's own cohorts take 1, 2, ...
    for (let i = 0; i < MAX_COHORTS_PER_PROJECT; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, MAX_COHORTS_PER_PROJECT - i) }, (_, k) =>
          putCohort(record(100_000 + i + k, i + k === 0)),
        ),
      );
    const base = `/api/environments/${p.projectId}/cohorts/`;
    const last = await c.post(base, { name: 'the last one', is_static: true });
    expect(last.status).toBe(201);
    const over = await c.post(base, { name: 'one too many', is_static: true });
    expect(over.status).toBe(400);
    expectErrorShape(over.body);
    expect(over.body.detail).toContain(`at most ${MAX_COHORTS_PER_PROJECT} cohorts`);
  }, 240_000);
});
