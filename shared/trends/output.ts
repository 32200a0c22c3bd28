/**
 * Turns per-period row values into the legacy response (posthog/queries/trends/trends.py,
 * formula.py, util.py parse_response): labels, formula, compare, cumulative and aggregated displays.
 * Both engines (raw events and hourly rollups) end here, so their responses cannot drift apart.
 */
import { breakdownLabel } from './breakdown.ts';
import { bucketDay, bucketLabel, type Period } from './dates.ts';
import { evaluateFormula } from './formula.ts';
import type { RowValues } from './math.ts';
import { type SeriesModel, seriesId, type TrendsModel } from './model.ts';
import { echoGroup } from './properties.ts';
import { isoLocal } from './tz.ts';
import {
  AGGREGATED_DISPLAYS,
  BREAKDOWN_NULL_VALUE,
  BREAKDOWN_OTHER_VALUE,
  type ActionDefinition,
  type FormulaNode,
  type SeriesAction,
  type TrendFilterEcho,
  type TrendResponse,
  type TrendSeries,
} from './types.ts';

export interface SeriesRows {
  entity: SeriesModel;
  rows: RowValues[];
}

export interface PeriodResult {
  period: Period;
  /** One entry per query series, in series order. */
  series: SeriesRows[];
}

export interface OutputContext {
  query: TrendsModel;
  timezone: string;
  actions: ReadonlyMap<number, ActionDefinition>;
}

/** The name PostHog gives a series: its event name, "All events" for `id: null`, or the action's name. */
function entityName(entity: SeriesModel, actions: ReadonlyMap<number, ActionDefinition>): string {
  if (entity.name) return entity.name;
  if (entity.kind === 'ActionsNode') return actions.get(entity.id)?.name ?? `Action ${entity.id}`;
  return entity.event === null ? 'All events' : entity.event;
}

/** The label: `custom_name` overrides the name (newer PostHog; legacy ignored it). */
function entityLabel(entity: SeriesModel, actions: ReadonlyMap<number, ActionDefinition>): string {
  return entity.custom_name || entityName(entity, actions);
}

/** The series as the legacy answer echoes it (`action`, `filter.events`/`filter.actions`); `order` is its position. */
function actionEcho(entity: SeriesModel, order: number, actions: ReadonlyMap<number, ActionDefinition>): SeriesAction {
  return {
    id: seriesId(entity),
    type: entity.echo.list,
    order,
    name: entityName(entity, actions),
    custom_name: entity.custom_name,
    math: entity.math,
    math_property: entity.math_property,
    math_property_type: entity.math_property ? entity.math_property_type : null,
    ...(entity.math_group_type_index === null ? {} : { math_group_type_index: entity.math_group_type_index }),
    properties: entity.echo.properties,
  };
}

/** The effective filter echoed on every series; dates are the period's resolved bounds (Python isoformat). */
function filterEcho(ctx: OutputContext, period: Period): TrendFilterEcho {
  const { query } = ctx;
  const listed = (list: 'events' | 'actions') =>
    query.series
      .map((e, order) => ({ e, order }))
      .filter(({ e }) => e.echo.list === list)
      .sort((a, b) => a.e.echo.index - b.e.echo.index)
      .map(({ e, order }) => actionEcho(e, order, ctx.actions));
  const { compare, compare_to } = query.compareFilter;
  const { display, formula } = query.trendsFilter;
  const echo: TrendFilterEcho = {
    insight: 'TRENDS',
    events: listed('events'),
    actions: listed('actions'),
    properties: echoGroup(query.properties),
    filter_test_accounts: query.filterTestAccounts,
    date_from: isoLocal(period.from, ctx.timezone),
    date_to: isoLocal(period.to, ctx.timezone),
    interval: query.interval,
    display,
    compare,
  };
  const breakdown = query.breakdownFilter;
  if (breakdown) {
    echo.breakdown = breakdown.breakdown;
    echo.breakdown_type = breakdown.breakdown_type;
    echo.breakdown_limit = breakdown.breakdown_limit;
    if (breakdown.group_type_index !== undefined) echo.breakdown_group_type_index = breakdown.group_type_index;
  }
  if (query.aggregation_group_type_index !== null)
    echo.aggregation_group_type_index = query.aggregation_group_type_index;
  if (compare_to) echo.compare_to = compare_to;
  if (formula) echo.formula = formula;
  return echo;
}

/** A row ready to print: its values plus what identifies it. */
interface LabelledRow extends RowValues {
  action: SeriesAction | null;
  label: string;
}

function seriesRowsOf(ctx: OutputContext, series: SeriesRows, order: number): LabelledRow[] {
  const name = entityLabel(series.entity, ctx.actions);
  const single = ctx.query.series.length === 1;
  const action = actionEcho(series.entity, order, ctx.actions);
  return series.rows.map((row) => {
    if (row.breakdown_value === undefined) return { ...row, action, label: name };
    const value = breakdownLabel(row.breakdown_value);
    return { ...row, action, label: single ? value : `${name} - ${value}` };
  });
}

/**
 * Formula rows. Without breakdown: one row, also when a series has no row (no data counts as 0).
 * With breakdown: one row per value found in any series; a value a series lacks counts as 0 there.
 * Legacy formula.py labels breakdown rows by their value alone, the raw one: the no-value row is
 * labelled `$$_posthog_breakdown_null_$$`, not with its display label. Order: values by their formula
 * total (the whole-range aggregate for aggregated displays), largest first, ties in first-seen order
 * (series A's ranking first); then the None row, then Other.
 */
function formulaRowsOf(ctx: OutputContext, ast: FormulaNode, series: SeriesRows[], buckets: number): LabelledRow[] {
  const zero: RowValues = { values: new Array(buckets).fill(0), aggregated: 0 };
  const evaluate = (operands: RowValues[], breakdownValue: string | undefined): LabelledRow => ({
    action: null,
    label:
      breakdownValue === undefined
        ? `Formula (${ctx.query.trendsFilter.formula})`
        : breakdownValue === BREAKDOWN_NULL_VALUE
          ? breakdownValue
          : breakdownLabel(breakdownValue),
    ...(breakdownValue === undefined ? {} : { breakdown_value: breakdownValue }),
    values: Array.from({ length: buckets }, (_, i) => evaluateFormula(ast, (s) => operands[s]!.values[i] ?? 0)),
    aggregated: evaluateFormula(ast, (s) => operands[s]!.aggregated),
  });
  if (!ctx.query.breakdownFilter)
    return [
      evaluate(
        series.map((s) => s.rows[0] ?? zero),
        undefined,
      ),
    ];
  const keys = [...new Set(series.flatMap((s) => s.rows.map((r) => r.breakdown_value!)))];
  const rows = keys.map((key) =>
    evaluate(
      series.map((s) => s.rows.find((r) => r.breakdown_value === key) ?? zero),
      key,
    ),
  );
  const total = AGGREGATED_DISPLAYS.has(ctx.query.trendsFilter.display)
    ? (r: LabelledRow) => r.aggregated
    : (r: LabelledRow) => r.values.reduce((a, b) => a + b, 0);
  const place = (r: LabelledRow) =>
    r.breakdown_value === BREAKDOWN_NULL_VALUE ? 1 : r.breakdown_value === BREAKDOWN_OTHER_VALUE ? 2 : 0;
  return rows.sort((a, b) => place(a) - place(b) || total(b) - total(a));
}

const running = (values: number[]) => {
  let total = 0;
  return values.map((v) => (total += v));
};

/**
 * `count` is the sum of the per-bucket values; for the cumulative display that equals the last
 * data point (HogQL's count), not the sum of the running totals.
 */
function toSeries(ctx: OutputContext, row: LabelledRow, period: Period, filter: TrendFilterEcho): TrendSeries {
  const { query } = ctx;
  const { display } = query.trendsFilter;
  const { compare } = query.compareFilter;
  const aggregated = AGGREGATED_DISPLAYS.has(display);
  const out: TrendSeries = {
    action: row.action,
    label: row.label,
    count: aggregated ? 0 : row.values.reduce((a, b) => a + b, 0),
    data: aggregated ? [] : display === 'ActionsLineGraphCumulative' ? running(row.values) : row.values,
    labels: aggregated
      ? []
      : period.buckets.map((b, i) =>
          compare ? `${query.interval} ${i}` : bucketLabel(b, query.interval, ctx.timezone),
        ),
    days: aggregated ? [] : period.buckets.map((b) => bucketDay(b, query.interval, ctx.timezone)),
    filter,
  };
  if (row.breakdown_value !== undefined) out.breakdown_value = row.breakdown_value;
  if (aggregated) out.aggregated_value = row.aggregated;
  if (compare) {
    out.compare = true;
    out.compare_label = period.kind;
  }
  return out;
}

/**
 * The response. With compare, each series (or the formula) is followed by its previous-period
 * rows, as legacy handle_compare did per entity.
 */
export function buildResponse(ctx: OutputContext, periods: PeriodResult[]): TrendResponse {
  const ast = ctx.query.formula;
  const perPeriod = periods.map(({ period, series }) => ({
    period,
    filter: filterEcho(ctx, period),
    groups: ast
      ? [formulaRowsOf(ctx, ast, series, period.buckets.length)]
      : series.map((s, order) => seriesRowsOf(ctx, s, order)),
  }));
  const groupCount = perPeriod[0]?.groups.length ?? 0;
  const result: TrendSeries[] = [];
  for (let g = 0; g < groupCount; g++) {
    for (const { period, filter, groups } of perPeriod) {
      for (const row of groups[g] ?? []) result.push(toSeries(ctx, row, period, filter));
    }
  }
  return { result, timezone: ctx.timezone };
}
