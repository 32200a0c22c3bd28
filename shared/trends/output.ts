/**
 * Turns per-period row values into the legacy response (posthog/queries/trends/trends.py,
 * formula.py, util.py parse_response): labels, formula, compare, cumulative and aggregated displays.
 * Both engines (raw events and hourly rollups) end here, so their responses cannot drift apart.
 */
import { breakdownLabel } from './breakdown.ts';
import { bucketDay, bucketLabel, type Period } from './dates.ts';
import { evaluateFormula } from './formula.ts';
import type { RowValues } from './math.ts';
import { isoLocal } from './tz.ts';
import {
  AGGREGATED_DISPLAYS,
  BREAKDOWN_NULL_VALUE,
  BREAKDOWN_OTHER_VALUE,
  type ActionDefinition,
  type FormulaNode,
  type SeriesAction,
  type TrendEntity,
  type TrendFilterEcho,
  type TrendQuery,
  type TrendResponse,
  type TrendSeries,
} from './types.ts';

export interface SeriesRows {
  entity: TrendEntity;
  rows: RowValues[];
}

export interface PeriodResult {
  period: Period;
  /** One entry per query series, in series order. */
  series: SeriesRows[];
}

export interface OutputContext {
  query: TrendQuery;
  timezone: string;
  actions: ReadonlyMap<number, ActionDefinition>;
}

/** The name PostHog gives a series: its event name, "All events" for `id: null`, or the action's name. */
export function entityName(entity: TrendEntity, actions: ReadonlyMap<number, ActionDefinition>): string {
  if (entity.name) return entity.name;
  if (entity.type === 'actions') return actions.get(entity.id as number)?.name ?? `Action ${entity.id}`;
  return entity.id === null ? 'All events' : String(entity.id);
}

/** The label: `custom_name` overrides the name (newer PostHog; legacy ignored it). */
export function entityLabel(entity: TrendEntity, actions: ReadonlyMap<number, ActionDefinition>): string {
  return entity.custom_name || entityName(entity, actions);
}

export function actionEcho(entity: TrendEntity, actions: ReadonlyMap<number, ActionDefinition>): SeriesAction {
  return {
    id: entity.id,
    type: entity.type,
    order: entity.order,
    name: entityName(entity, actions),
    custom_name: entity.custom_name,
    math: entity.math,
    math_property: entity.math_property,
    math_property_type: entity.math_property ? entity.math_property_type : null,
    properties: entity.properties_echo,
  };
}

/** The effective filter echoed on every series; dates are the period's resolved bounds (Python isoformat). */
function filterEcho(ctx: OutputContext, period: Period): TrendFilterEcho {
  const { query } = ctx;
  const listed = (type: 'events' | 'actions') =>
    query.series
      .filter((e) => e.type === type)
      .sort((a, b) => a.index - b.index)
      .map((e) => actionEcho(e, ctx.actions));
  const echo: TrendFilterEcho = {
    insight: 'TRENDS',
    events: listed('events'),
    actions: listed('actions'),
    properties: query.properties,
    filter_test_accounts: query.filter_test_accounts,
    date_from: isoLocal(period.from, ctx.timezone),
    date_to: isoLocal(period.to, ctx.timezone),
    interval: query.interval,
    display: query.display,
    compare: query.compare,
  };
  if (query.breakdown) {
    echo.breakdown = query.breakdown.breakdown;
    echo.breakdown_type = query.breakdown.breakdown_type;
    echo.breakdown_limit = query.breakdown.limit;
  }
  if (query.compare_to) echo.compare_to = query.compare_to;
  if (query.formula) echo.formula = query.formula;
  return echo;
}

/** A row ready to print: its values plus what identifies it. */
interface LabelledRow extends RowValues {
  action: SeriesAction | null;
  label: string;
}

function seriesRowsOf(ctx: OutputContext, series: SeriesRows): LabelledRow[] {
  const name = entityLabel(series.entity, ctx.actions);
  const single = ctx.query.series.length === 1;
  const action = actionEcho(series.entity, ctx.actions);
  return series.rows.map((row) => {
    if (row.breakdown_value === undefined) return { ...row, action, label: name };
    const value = breakdownLabel(row.breakdown_value);
    return { ...row, action, label: single ? value : `${name} - ${value}` };
  });
}

/**
 * Formula rows. Without breakdown: one row. With breakdown: one row per value found in any series;
 * a value a series lacks counts as 0 there. Legacy formula.py labels breakdown rows by their value
 * alone. Order: values by their formula total (the whole-range aggregate for aggregated displays),
 * largest first, ties in first-seen order (series A's ranking first); then the None row, then Other.
 */
function formulaRowsOf(ctx: OutputContext, ast: FormulaNode, series: SeriesRows[], buckets: number): LabelledRow[] {
  const zero: RowValues = { values: new Array(buckets).fill(0), aggregated: 0 };
  const evaluate = (operands: RowValues[], breakdownValue: string | undefined): LabelledRow => ({
    action: null,
    label: breakdownValue === undefined ? `Formula (${ctx.query.formula})` : breakdownLabel(breakdownValue),
    ...(breakdownValue === undefined ? {} : { breakdown_value: breakdownValue }),
    values: Array.from({ length: buckets }, (_, i) => evaluateFormula(ast, (s) => operands[s]!.values[i] ?? 0)),
    aggregated: evaluateFormula(ast, (s) => operands[s]!.aggregated),
  });
  if (!ctx.query.breakdown)
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
  const total = AGGREGATED_DISPLAYS.has(ctx.query.display)
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
  const aggregated = AGGREGATED_DISPLAYS.has(query.display);
  const out: TrendSeries = {
    action: row.action,
    label: row.label,
    count: aggregated ? 0 : row.values.reduce((a, b) => a + b, 0),
    data: aggregated ? [] : query.display === 'ActionsLineGraphCumulative' ? running(row.values) : row.values,
    labels: aggregated
      ? []
      : period.buckets.map((b, i) =>
          query.compare ? `${query.interval} ${i}` : bucketLabel(b, query.interval, ctx.timezone),
        ),
    days: aggregated ? [] : period.buckets.map((b) => bucketDay(b, query.interval, ctx.timezone)),
    filter,
  };
  if (row.breakdown_value !== undefined) out.breakdown_value = row.breakdown_value;
  if (aggregated) out.aggregated_value = row.aggregated;
  if (query.compare) {
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
  const ast = ctx.query.formula_ast;
  const perPeriod = periods.map(({ period, series }) => ({
    period,
    filter: filterEcho(ctx, period),
    groups: ast ? [formulaRowsOf(ctx, ast, series, period.buckets.length)] : series.map((s) => seriesRowsOf(ctx, s)),
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
