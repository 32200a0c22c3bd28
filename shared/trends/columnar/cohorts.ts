/**
 * The cohort breakdown (PostHog's TrendsQueryRunner.setup_series): each listed cohort is its own
 * pass over the events, its series filtered to the cohort's members (`all`: unfiltered), so a
 * person in two cohorts counts in both rows. Rows come cohort by cohort, each with the series in
 * order (and their compared periods); labelled by the cohort's name (`all users`), prefixed with
 * the series' label when there are several series; `breakdown_value` is the cohort id or `"all"`.
 * The passes read the same source: storage is read once, the batches decoded once per cohort.
 */
import {
  type CohortBreakdownValue,
  type CohortRef,
  cohortRefsOf,
  type CohortSets,
  NO_COHORTS,
} from '../cohort-filters.ts';
import { testAccountFilters } from '../compute.ts';
import type { TrendsModel } from '../model.ts';
import { echoGroup } from '../properties.ts';
import type { ProjectSettings, TrendResponse, TrendSeries } from '../types.ts';

/** The label of `all` (PostHog: "all users"). */
export const ALL_USERS_LABEL = 'all users';

/** The query one cohort's pass answers: no breakdown, the cohort's filter ANDed to the request's. */
function cohortPass(query: TrendsModel, value: CohortBreakdownValue, attr: string): TrendsModel {
  const properties: TrendsModel['properties'] =
    value === 'all'
      ? query.properties
      : {
          type: 'AND',
          values: [
            query.properties,
            { type: 'cohort', key: 'id', value, operator: 'in', attr } as TrendsModel['properties']['values'][number],
          ],
        };
  return { ...query, properties, breakdownFilter: null };
}

export function computeCohortBreakdown(
  query: TrendsModel,
  cohorts: CohortSets | undefined,
  compute: (pass: TrendsModel) => TrendResponse,
): TrendResponse {
  const breakdown = query.breakdownFilter!;
  const values = breakdown.cohorts ?? [];
  const sets = cohorts ?? NO_COHORTS;
  const several = query.series.length > 1 && query.formula === null;
  const filterEcho = {
    properties: echoGroup(query.properties),
    breakdown: values,
    breakdown_type: 'cohort',
    breakdown_limit: breakdown.breakdown_limit,
  };
  const result: TrendSeries[] = [];
  let timezone = '';
  for (const value of values) {
    const name = value === 'all' ? ALL_USERS_LABEL : (sets.get(value)?.name ?? String(value));
    const answer = compute(cohortPass(query, value, breakdown.attr ?? 'breakdown'));
    timezone = answer.timezone;
    for (const row of answer.result)
      result.push({
        ...row,
        label: several ? `${row.label} - ${name}` : name,
        breakdown_value: value,
        filter: { ...row.filter, ...filterEcho },
      });
  }
  return { result, timezone };
}

/**
 * Every cohort a query names, in the order its fields are read: the request's filters, each
 * series' filters, the applied test-account filters, the breakdown's cohorts (`all` names none).
 */
export function cohortRefs(query: TrendsModel, project: ProjectSettings): CohortRef[] {
  const out = cohortRefsOf(query.properties);
  for (const s of query.series) cohortRefsOf(s.properties, out);
  if (query.filterTestAccounts) cohortRefsOf({ values: testAccountFilters(query, project) }, out);
  const breakdown = query.breakdownFilter;
  for (const v of breakdown?.cohorts ?? [])
    if (v !== 'all') out.push({ id: v, attr: breakdown?.attr ?? query.attrs.series });
  return out;
}
