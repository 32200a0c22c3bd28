import { now } from '../clock.ts';
import { inParallel } from '../db/batch.ts';
import {
  addMember,
  cohortIdsOfPerson,
  listCohorts,
  membersAmong,
  removeMember,
  type CohortRecord,
} from '../db/cohorts.ts';
import { getPersons, personIdsOf, type PersonRecord } from '../db/persons.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import { matchesCohort, parseCohortFilters } from './cohort-definitions.ts';

/**
 * Keeping materialised membership current as persons change: the ingest worker and person edits
 * re-evaluate the project's person-property cohorts for the persons they changed. Apart from
 * cohorts.ts so that persons.ts can call it (cohorts.ts reads persons).
 */

/** Live cohorts membership follows person by person: dynamic, without behavioural leaves (those wait for their schedule). */
const followsPersons = (c: CohortRecord) => !c.deleted && !c.is_static && !c.behavioural;

/**
 * Re-evaluates the person-property cohorts of the project for these persons (the ingest worker and
 * person edits call it): a person who now matches is added, one who no longer does removed, counts
 * kept. Behavioural cohorts wait for their schedule (their events are not re-read per person).
 */
export async function refreshPersonCohorts(
  projectId: number,
  persons: PersonRecord[],
  known?: CohortRecord[],
): Promise<void> {
  if (!persons.length) return;
  const cohorts = (known ?? (await listCohorts(projectId))).filter(followsPersons);
  if (!cohorts.length) return;
  const at = now().getTime();
  const defs = cohorts.flatMap((c) => {
    try {
      return [{ cohort: c, def: parseCohortFilters(c.filters, at) }];
    } catch {
      return [];
    }
  });
  const ids = persons.map((p) => p.id);
  const references = new Set(defs.flatMap((d) => d.def.references));
  const memberships = new Map<number, Set<number>>();
  for (const ref of references) memberships.set(ref, await membersAmong(projectId, ref, ids));
  let changed = false;
  await inParallel(persons, 4, async (p) => {
    const current = new Set(await cohortIdsOfPerson(projectId, p.id));
    for (const { cohort, def } of defs) {
      const matches = matchesCohort(def.root, {
        properties: p.properties,
        inCohort: (c) => memberships.get(c)?.has(p.id) ?? false,
        eventCount: () => 0,
      });
      if (matches && !current.has(cohort.id))
        changed = (await addMember(projectId, cohort.id, p.id, cohort.calculation?.id ?? 'ingest')) || changed;
      else if (!matches && current.has(cohort.id))
        changed = (await removeMember(projectId, cohort.id, p.id)) || changed;
    }
  });
  // Trends read membership: a changed cohort makes every cached answer stale at once (answers generation, #88).
  if (changed) await bumpAnswersGeneration(projectId);
}

/** The persons behind distinct ids, re-evaluated (the ingest worker's hook: one call per project per batch). */
export async function refreshCohortsOfDistinctIds(projectId: number, distinctIds: string[]): Promise<void> {
  const cohorts = (await listCohorts(projectId)).filter(followsPersons);
  if (!cohorts.length) return;
  const found = await personIdsOf([...new Set(distinctIds)].map((distinctId) => ({ projectId, distinctId })));
  await refreshPersonCohorts(projectId, await getPersons(projectId, [...new Set(found.values())]), cohorts);
}

/** The ingest worker's hook: the persons of a batch's new events, re-evaluated once per project. */
export async function refreshCohortsOfEvents(events: { project_id: number; distinct_id: string }[]): Promise<void> {
  const byProject = new Map<number, string[]>();
  for (const e of events) byProject.set(e.project_id, [...(byProject.get(e.project_id) ?? []), e.distinct_id]);
  for (const [projectId, distinctIds] of byProject) await refreshCohortsOfDistinctIds(projectId, distinctIds);
}
