/**
 * TrendsQuery: mapped into the engine's model (trends-model.ts), answered by the same engine as
 * `insights/trend` without its cache, and shaped as PostHog's TrendsQueryResponse
 * (posthog/hogql_queries/insights/trends/trends_query_runner.py).
 */
import type { TrendsQuery } from '../../schemas/query/trends.ts';
import { breakdownLabel } from '../../trends/breakdown.ts';
import { checkResponseBytes } from '../../trends/limits.ts';
import { isoLocal } from '../../trends/tz.ts';
import { BREAKDOWN_OTHER_VALUE, type TrendSeries } from '../../trends/types.ts';
import { answerTrend, type ComputedTrend } from '../trends.ts';
import type { QueryRunner } from './runner.ts';
import { formulaLabelOf, trendsModelOf } from './trends-model.ts';

export const runTrendsQuery: QueryRunner<'TrendsQuery'> = async (context, query) => {
  const model = trendsModelOf(query);
  const breakdown = model.breakdownFilter;
  // Computed with the Other row, so `hasMore` can tell that values were left out; the row is dropped after.
  const computing = breakdown
    ? { ...model, breakdownFilter: { ...breakdown, breakdown_hide_other_aggregation: false } }
    : model;
  const computed = await answerTrend(context.project, computing, context.check);
  const body = trendsQueryResponse(query, computed);
  checkResponseBytes(computed.query, Buffer.byteLength(JSON.stringify(body)));
  return body;
};

const present = (value: unknown) => value !== undefined && value !== null;
const compact = (object: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(object).filter(([, value]) => present(value)));

/**
 * PostHog's TrendsQueryResponse body for the engine's answer: `results` in PostHog's order (with
 * compare, every series' current period first, then the previous ones), labelled as PostHog labels
 * them (the event or action name, not `custom_name`, which stays in `action`).
 */
export function trendsQueryResponse(query: TrendsQuery, computed: ComputedTrend): Record<string, unknown> {
  const { response, range } = computed;
  const timezone = response.timezone;
  const resolved = {
    date_from: isoLocal(range.from.getTime(), timezone),
    date_to: isoLocal(range.to.getTime(), timezone),
  };
  const isOther = (row: TrendSeries) => row.breakdown_value === BREAKDOWN_OTHER_VALUE;
  const hideOther = query.breakdownFilter?.breakdown_hide_other_aggregation === true;
  const rows = [
    ...response.result.filter((row) => row.compare_label !== 'previous'),
    ...response.result.filter((row) => row.compare_label === 'previous'),
  ].filter((row) => !(hideOther && isOther(row)));
  const filter = filterEcho(query, computed, resolved);
  const formulaLabel = formulaLabelOf(query);
  return {
    results: rows.map((row) => seriesOf(row, query, formulaLabel, filter)),
    timezone,
    hasMore: response.result.some(isOther),
    resolved_date_range: resolved,
    timings: computed.timings,
    // Which engines answered, where the lake did (a field PostHog's clients ignore).
    ...(computed.engine ? { query_engine: computed.engine } : {}),
  };
}

function seriesOf(
  row: TrendSeries,
  query: TrendsQuery,
  formulaLabel: string | null,
  filter: Record<string, unknown>,
): Record<string, unknown> {
  const aggregated = row.aggregated_value !== undefined;
  const node = row.action ? query.series[row.action.order] : undefined;
  const series: Record<string, unknown> = {
    data: row.data,
    ...(aggregated ? {} : { labels: row.labels }),
    days: row.days,
    count: row.count,
    label: labelOf(row, query.series.length, formulaLabel),
    filter,
    action: row.action && {
      ...row.action,
      math_group_type_index: node?.math_group_type_index ?? null,
      math_hogql: node?.math_hogql ?? null,
    },
    // PostHog's `order`: the series' position, or the formula's (one formula: 0).
    order: row.action?.order ?? 0,
  };
  if (row.breakdown_value !== undefined) series.breakdown_value = row.breakdown_value;
  if (aggregated) series.aggregated_value = row.aggregated_value;
  if (row.compare) {
    series.compare = true;
    series.compare_label = row.compare_label;
  }
  return series;
}

/** The series' name (event, `All events` or the action's name), with the breakdown value; formulas by their own label. */
function labelOf(row: TrendSeries, seriesCount: number, formulaLabel: string | null): string {
  if (!row.action) return formulaLabel ?? row.label;
  const name = row.action.name ?? row.label;
  if (row.breakdown_value === undefined) return name;
  // A cohort row's value is the cohort's id: the engine labelled it with the cohort's name (columnar/cohorts.ts).
  if (row.filter.breakdown_type === 'cohort') return row.label;
  const value = breakdownLabel(row.breakdown_value as string);
  return seriesCount > 1 ? `${name} - ${value}` : value;
}

/** PostHog's `filter` on every row (`_query_to_filter`): the query's filters in the legacy names, dates resolved. */
function filterEcho(
  query: TrendsQuery,
  computed: ComputedTrend,
  resolved: { date_from: string; date_to: string },
): Record<string, unknown> {
  const trends = query.trendsFilter;
  const breakdown = query.breakdownFilter;
  return compact({
    insight: 'TRENDS',
    properties: query.properties,
    filter_test_accounts: query.filterTestAccounts,
    date_from: resolved.date_from,
    date_to: resolved.date_to,
    entity_type: 'events',
    interval: computed.query.interval,
    display: trends?.display,
    formula: trends?.formula,
    formulas: trends?.formulas,
    formulaNodes: trends?.formulaNodes,
    breakdown: breakdown?.breakdown,
    breakdown_type: breakdown?.breakdown_type,
    breakdown_limit: breakdown?.breakdown_limit,
    breakdown_hide_other_aggregation: breakdown?.breakdown_hide_other_aggregation,
    breakdowns: breakdown?.breakdowns,
  });
}
