/**
 * A dynamic cohort's calculation, one worker step at a time (calculate_cohorts): pages of persons
 * matched against the definition, behavioural leaves counted once per step on the trend engine's
 * columns (cohort-events.ts). Apart from cohorts.ts so the API's cohort handlers do not bundle the
 * trend read path.
 */
import { now, nowIso } from '../clock.ts';
import {
  deleteMembers,
  getCohort,
  listCohorts as readCohorts,
  membersAmong,
  membersPage,
  putCohort,
  putMembers,
  type CohortCalculation,
  type CohortRecord,
} from '../db/cohorts.ts';
import { personsInCreationOrder, type PersonRecord } from '../db/persons.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import { ValidationError } from '../errors.ts';
import type { QueuedCohortCalculation } from '../queues/cohort-calculations.ts';
import { config } from '../config.ts';
import { logger } from '../observability.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { CohortWindowTooLarge, countLeafEvents, type LeafCounts } from './cohort-events.ts';
import { type CohortDefinition, type EventLeaf, matchesCohort, parseCohortFilters } from './cohort-definitions.ts';
import { type QueueCalculation, SAVE_ATTEMPTS, startCalculation } from './cohorts.ts';

/** Persons examined per page of a calculation. */
export const CALCULATION_PAGE = 500;

/** A person's matching events of a leaf's window: the sum over the person's distinct ids. */
function eventCounter(counts: LeafCounts) {
  return (leaf: EventLeaf, person: PersonRecord) => {
    const m = counts.get(leaf.index);
    return person.distinct_ids.reduce((n, d) => n + (m?.get(d) ?? 0), 0);
  };
}

/** The persons of a page that match the definition. */
async function matching(
  projectId: number,
  def: CohortDefinition,
  persons: PersonRecord[],
  countEvents: (leaf: EventLeaf, person: PersonRecord) => number,
): Promise<number[]> {
  const ids = persons.map((p) => p.id);
  const memberships = new Map<number, Set<number>>();
  for (const ref of def.references) memberships.set(ref, await membersAmong(projectId, ref, ids));
  return persons
    .filter((p) =>
      matchesCohort(def.root, {
        properties: p.properties,
        inCohort: (c) => memberships.get(c)?.has(p.id) ?? false,
        eventCount: (leaf) => countEvents(leaf, p),
      }),
    )
    .map((p) => p.id);
}

/**
 * One invocation's share of a calculation: pages of persons (in creation order, from where the last
 * step stopped) until `stopAt` (one page at least), then the sweep of members it did not write. Progress is saved on the
 * cohort after every page, so a step that dies is resumed by the next; a calculation replaced by a
 * newer one stops. Returns whether it finished; if not, it queued its own continuation.
 */
export async function calculateCohortStep(
  message: QueuedCohortCalculation,
  queue: QueueCalculation,
  stopAt: number,
  /** Tests lower these (the service uses CALCULATION_PAGE and config().cohortWindowEvents). */
  options: { pageSize?: number; maxWindowEvents?: number } = {},
): Promise<{ finished: boolean; examined: number }> {
  let cohort = await getCohort(message.project_id, message.cohort_id);
  const stale = () => !cohort || cohort.deleted || cohort.calculation?.id !== message.calculation_id;
  if (stale()) return { finished: true, examined: 0 };
  const projectId = message.project_id;
  let calc = cohort!.calculation!;
  // Every step evaluates the definition at the calculation's start: one window for all its pages.
  const at = calc.started_at === undefined ? now().getTime() : Date.parse(calc.started_at);
  let def: CohortDefinition;
  try {
    def = parseCohortFilters(cohort!.filters, at);
  } catch {
    await finish(cohort!, cohort!.count ?? 0, true);
    return { finished: true, examined: 0 };
  }
  let counts: LeafCounts;
  try {
    counts = await countLeafEvents(projectId, def.events, at, options.maxWindowEvents ?? config().cohortWindowEvents);
  } catch (error) {
    if (!(error instanceof CohortWindowTooLarge || error instanceof ValidationError)) throw error;
    // Retrying the step would fail the same way: the calculation ends failed, the count it had kept.
    logger.warn('cohort calculation ended failed (not retried)', {
      project_id: projectId,
      cohort_id: message.cohort_id,
      error: String(error),
    });
    await finish(cohort!, cohort!.count ?? 0, true);
    return { finished: true, examined: 0 };
  }
  const countEvents = eventCounter(counts);
  let examined = 0;
  // At least one page per step, even when counting the windows took the step's time: every step advances.
  for (let first = true; first || Date.now() < stopAt; first = false) {
    if (calc.phase === 'scan') {
      const page = await personsInCreationOrder(projectId, {
        ascending: true,
        limit: options.pageSize ?? CALCULATION_PAGE,
        after: calc.after,
      });
      const matched = await matching(
        projectId,
        def,
        page.persons.map((p) => p.person),
        countEvents,
      );
      await putMembers(projectId, message.cohort_id, matched, calc.id);
      examined += page.persons.length;
      calc = {
        ...calc,
        matched: calc.matched + matched.length,
        after: page.persons.at(-1)?.sortKey ?? calc.after,
        ...(page.more ? {} : { phase: 'sweep' as const, kept: 0 }),
      };
    } else {
      const page = await membersPage(projectId, message.cohort_id, {
        limit: options.pageSize ?? CALCULATION_PAGE,
        afterPersonId: calc.sweep_after,
      });
      const gone = page.members.filter((m) => m.calc !== calc.id).map((m) => m.personId);
      await deleteMembers(projectId, message.cohort_id, gone);
      const kept = (calc.kept ?? 0) + page.members.length - gone.length;
      if (!page.more) {
        cohort = await saveProgress(cohort!, calc);
        if (stale()) return { finished: true, examined };
        await finish(cohort!, kept, false);
        await recalculateDependents(projectId, message.cohort_id, queue);
        return { finished: true, examined };
      }
      calc = { ...calc, kept, sweep_after: page.members.at(-1)?.personId ?? calc.sweep_after };
    }
    cohort = await saveProgress(cohort!, calc);
    if (stale()) return { finished: true, examined };
  }
  await queue(message);
  return { finished: false, examined };
}

/** Saves a calculation's position on the cohort (re-read on a lost race: a PATCH of its name keeps the calculation). */
async function saveProgress(cohort: CohortRecord, calc: CohortCalculation): Promise<CohortRecord | undefined> {
  return retryTransient(
    `Cohort ${cohort.id}`,
    async (attempt) => {
      const current = attempt === 0 ? cohort : await getCohort(cohort.project_id, cohort.id);
      if (!current || current.calculation?.id !== calc.id || current.deleted) return current;
      const next = { ...current, calculation: { ...calc, touched_at: nowIso() }, version: current.version + 1 };
      return (await putCohort(next, current.version)) ? next : TRANSIENT;
    },
    { attempts: SAVE_ATTEMPTS },
  );
}

/** Ends a calculation: the count it found, when, and whether it failed (a replaced calculation is left alone). */
async function finish(cohort: CohortRecord, count: number, failed: boolean) {
  const calcId = cohort.calculation?.id;
  const done = await retryTransient(
    `Cohort ${cohort.id}`,
    async (attempt) => {
      const current = attempt === 0 ? cohort : await getCohort(cohort.project_id, cohort.id);
      if (!current || current.calculation?.id !== calcId) return false;
      const { calculation: _, ...rest } = current;
      const next: CohortRecord = {
        ...rest,
        is_calculating: false,
        last_calculation: nowIso(),
        count,
        errors_calculating: failed ? current.errors_calculating + 1 : 0,
        version: current.version + 1,
      };
      return (await putCohort(next, current.version)) ? true : TRANSIENT;
    },
    { attempts: SAVE_ATTEMPTS },
  );
  if (done) await bumpAnswersGeneration(cohort.project_id);
}

/** Cohorts that reference a recalculated one read its membership: they are recalculated after it. */
async function recalculateDependents(projectId: number, cohortId: number, queue: QueueCalculation) {
  const dependents = (await readCohorts(projectId)).filter(
    (c) => !c.deleted && !c.is_static && c.references?.includes(cohortId),
  );
  for (const d of dependents) await startCalculation(d, queue);
}
