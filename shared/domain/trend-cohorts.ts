/**
 * The cohorts a trend names (filters, breakdown), checked against the project and their materialised
 * members loaded once per query, for the columnar engine to test rows against (a set of person ids
 * joined through each batch's distinct-id dictionary: no lookup per event).
 *
 * A cohort still calculating is answered with its members as they stand: the last calculation's,
 * plus those the running one has written so far (PostHog answers from its cohortpeople table the
 * same way while a recalculation runs).
 */
import { getCohorts, membersPage } from '../db/cohorts.ts';
import { ValidationError } from '../errors.ts';
import type { CohortRef, CohortSets } from '../trends/cohort-filters.ts';
import { cohortRefs } from '../trends/columnar/cohorts.ts';
import type { ProjectSettings, TrendsModel } from '../trends/index.ts';

/**
 * Members one trend may load, over all the cohorts it names: a Set of 1M person ids is ~60 MB of
 * the function's memory, and ~100 paged reads. A bigger cohort is a 400 on the field naming it.
 */
export const MAX_TREND_COHORT_MEMBERS = 1_000_000;
/** Members per read: DynamoDB stops a page at 1 MB (about 10,000 membership items). */
const MEMBERS_PAGE = 10_000;

/** The cohorts a trend names, checked: unknown, deleted or another project's is a 400 naming the field. */
export async function checkTrendCohorts(
  projectId: number,
  query: TrendsModel,
  settings: ProjectSettings,
): Promise<NamedCohortRef[]> {
  return checkCohortRefs(projectId, cohortRefs(query, settings));
}

/** A cohort a request names, found live in the project. */
export interface NamedCohortRef extends CohortRef {
  name: string;
}

/** Cohorts named anywhere (trends, EventsQuery, ActorsQuery): each must be a live cohort of the project. */
export async function checkCohortRefs(projectId: number, refs: CohortRef[]): Promise<NamedCohortRef[]> {
  if (!refs.length) return [];
  const ids = [...new Set(refs.map((r) => r.id))];
  const found = new Map((await getCohorts(projectId, ids)).map((c) => [c.id, c]));
  return refs.map((ref) => {
    const cohort = found.get(ref.id);
    if (!cohort || cohort.deleted) throw new ValidationError(`Cohort ${ref.id} does not exist.`, ref.attr);
    return { ...ref, name: cohort.name };
  });
}

/** Each named cohort's name and members (person ids as the engine's actors carry them). */
export async function loadCohortMembers(
  projectId: number,
  refs: NamedCohortRef[],
  cap = MAX_TREND_COHORT_MEMBERS,
): Promise<CohortSets> {
  const sets = new Map<number, { name: string; members: Set<number> }>();
  let loaded = 0;
  for (const ref of refs) {
    if (sets.has(ref.id)) continue;
    const members = new Set<number>();
    let after: number | undefined;
    for (;;) {
      const page = await membersPage(projectId, ref.id, {
        limit: Math.min(MEMBERS_PAGE, cap + 1),
        afterPersonId: after,
      });
      loaded += page.members.length;
      if (loaded > cap)
        throw new ValidationError(
          `The cohorts of this query have more than ${cap.toLocaleString('en-US')} members together (cohort ${ref.id} passes it); a query loads at most that many.`,
          ref.attr,
        );
      for (const m of page.members) members.add(m.personId);
      if (!page.more || !page.members.length) break;
      after = page.members[page.members.length - 1]?.personId;
    }
    sets.set(ref.id, { name: ref.name, members });
  }
  return sets;
}
