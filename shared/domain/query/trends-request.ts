/**
 * TrendsQuery -> the legacy trend request (the object `parseTrendRequest` reads): one engine answers
 * both request shapes. Pure. Fields that only change how PostHog draws the answer are ignored; a
 * field that would change the numbers and that the engine cannot honour is a 400 naming it, never
 * dropped. The engine's errors name legacy fields (`events__0__math`); `queryAttr` maps them back
 * to the query (`query__series__0__math`).
 */
import { ValidationError } from '../../errors.ts';
import type { TrendsQuery, TrendsSeriesNode } from '../../schemas/query/trends.ts';
import { COUNT_PER_ACTOR_MATHS, PROPERTY_MATHS } from '../../trends/types.ts';

export interface TrendsTranslation {
  /** The legacy trend request body. */
  request: Record<string, unknown>;
  /** The label of the formula row: `custom_name` of the formula node, else PostHog's `Formula (<formula>)`. */
  formulaLabel: string | null;
  /** Where each legacy field came from in the query. */
  origins: Origins;
}

interface Origins {
  /** Query series index of each legacy `events` / `actions` entry, and how many of its filters were `properties` (the rest are `fixedProperties`). */
  events: SeriesOrigin[];
  actions: SeriesOrigin[];
  formula: string;
  breakdown: string;
  breakdown_type: string;
}

interface SeriesOrigin {
  series: number;
  properties: number;
}

const Q = 'query';
/** Displays PostHog answers with other computations (box plot statistics, a 2-D heatmap), not with trend series. */
const UNSUPPORTED_DISPLAYS: Record<string, string> = {
  BoxPlot: 'The BoxPlot display is not supported.',
  TwoDimensionalHeatmap: 'The TwoDimensionalHeatmap display is not supported.',
};
/** Maths that count actors: with `math_group_type_index` PostHog counts groups instead of persons. */
const ACTOR_MATHS = new Set<string>(['dau', 'weekly_active', 'monthly_active', ...COUNT_PER_ACTOR_MATHS]);
const PROPERTY_MATH_SET = new Set<string>(PROPERTY_MATHS);

const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

/** Drops absent fields, so the legacy parser applies its own defaults. */
function compact(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => present(value)));
}

export function trendRequestOf(query: TrendsQuery): TrendsTranslation {
  refuseUnsupported(query);
  const events: Record<string, unknown>[] = [];
  const actions: Record<string, unknown>[] = [];
  const origins: Origins = {
    events: [],
    actions: [],
    formula: `${Q}__trendsFilter__formula`,
    breakdown: `${Q}__breakdownFilter__breakdown`,
    breakdown_type: `${Q}__breakdownFilter__breakdown_type`,
  };
  query.series.forEach((node, index) => {
    const entity = seriesEntity(node, index);
    const origin = { series: index, properties: node.properties?.length ?? 0 };
    if (node.kind === 'EventsNode') {
      events.push(entity);
      origins.events.push(origin);
    } else {
      actions.push(entity);
      origins.actions.push(origin);
    }
  });
  const formula = formulaOf(query, origins);
  const compare = query.compareFilter?.compare === true;
  const request = compact({
    events,
    actions,
    date_from: query.dateRange?.date_from,
    date_to: query.dateRange?.date_to,
    explicit_date: query.dateRange?.explicitDate,
    interval: query.interval,
    properties: query.properties,
    filter_test_accounts: query.filterTestAccounts,
    display: query.trendsFilter?.display,
    formula: formula?.formula,
    ...breakdownOf(query, origins),
    compare,
    // PostHog compares only when `compare` is true; the legacy engine reads `compare_to` alone as a comparison.
    compare_to: compare ? query.compareFilter?.compare_to : undefined,
    aggregation_group_type_index: query.aggregation_group_type_index,
  });
  return { request, formulaLabel: formula ? (formula.custom_name ?? `Formula (${formula.formula})`) : null, origins };
}

function seriesEntity(node: TrendsSeriesNode, index: number): Record<string, unknown> {
  const properties = [...(node.properties ?? []), ...(node.fixedProperties ?? [])];
  return {
    // `null` is "all events": kept, not left out.
    id: node.kind === 'EventsNode' ? (node.event ?? null) : node.id,
    ...compact({
      type: node.kind === 'EventsNode' ? 'events' : 'actions',
      order: index,
      custom_name: node.custom_name,
      math: node.math,
      math_property: node.math_property,
      math_property_type: node.math_property_type,
      properties: properties.length ? properties : undefined,
    }),
  };
}

/** PostHog reads `formulaNodes`, else `formulas`, else `formula` (TrendsQueryRunner); the engine computes one. */
function formulaOf(query: TrendsQuery, origins: Origins): { formula: string; custom_name: string | null } | null {
  const filter = query.trendsFilter;
  const [field, nodes] = filter?.formulaNodes?.length
    ? ['formulaNodes', filter.formulaNodes.map((n) => ({ formula: n.formula, custom_name: n.custom_name ?? null }))]
    : filter?.formulas?.length
      ? ['formulas', filter.formulas.map((formula) => ({ formula, custom_name: null }))]
      : present(filter?.formula) && filter.formula.trim() !== ''
        ? ['formula', [{ formula: filter.formula, custom_name: null }]]
        : [null, []];
  if (field === null) return null;
  if (nodes.length > 1)
    throw new ValidationError(
      `This service computes one formula per query; this query has ${nodes.length}. Send one formula per query.`,
      `${Q}__trendsFilter__${field}`,
    );
  origins.formula =
    field === 'formulaNodes'
      ? `${Q}__trendsFilter__formulaNodes__0__formula`
      : field === 'formulas'
        ? `${Q}__trendsFilter__formulas__0`
        : `${Q}__trendsFilter__formula`;
  return nodes[0]!;
}

/** `breakdowns` (PostHog's multiple breakdowns) with one entry is that breakdown; it wins over `breakdown`, as in PostHog. */
function breakdownOf(query: TrendsQuery, origins: Origins): Record<string, unknown> {
  const filter = query.breakdownFilter;
  if (!filter) return {};
  const common = {
    breakdown_limit: filter.breakdown_limit,
    breakdown_hide_other_aggregation: filter.breakdown_hide_other_aggregation,
  };
  const entries = filter.breakdowns ?? [];
  if (entries.length > 1)
    throw new ValidationError(
      `Breaking down by more than one property is not supported: breakdowns has ${entries.length} entries, at most 1 is allowed.`,
      `${Q}__breakdownFilter__breakdowns`,
    );
  const [entry] = entries;
  if (!entry) return { ...common, breakdown: filter.breakdown, breakdown_type: filter.breakdown_type };
  origins.breakdown = `${Q}__breakdownFilter__breakdowns__0__property`;
  origins.breakdown_type = `${Q}__breakdownFilter__breakdowns__0__type`;
  return { ...common, breakdown: entry.property, breakdown_type: entry.type };
}

/** Fields that would change the numbers and that the engine cannot honour. */
function refuseUnsupported(query: TrendsQuery): void {
  const refuse = (detail: string, attr: string) => {
    throw new ValidationError(detail, `${Q}__${attr}`);
  };
  if (query.interval === 'minute')
    refuse('Minute intervals are not supported; the shortest interval is hour.', 'interval');
  if (present(query.samplingFactor) && query.samplingFactor !== 1)
    refuse('Sampling is not supported: every event is counted (samplingFactor 1 or absent).', 'samplingFactor');
  if (present(query.conversionGoal)) refuse('Conversion goals are not supported.', 'conversionGoal');
  query.series.forEach((node, i) => {
    if (present(node.math_multiplier) && node.math_multiplier !== 1)
      refuse('math_multiplier is not supported.', `series__${i}__math_multiplier`);
    if (present(node.math_property_revenue_currency) && PROPERTY_MATH_SET.has(node.math ?? ''))
      refuse('Revenue currency conversion is not supported.', `series__${i}__math_property_revenue_currency`);
    if (present(node.math_group_type_index) && ACTOR_MATHS.has(node.math ?? ''))
      refuse(
        `Counting groups is not supported yet: math "${node.math}" with math_group_type_index would count groups instead of persons.`,
        `series__${i}__math_group_type_index`,
      );
  });
  const breakdown = query.breakdownFilter;
  if (breakdown?.breakdown_normalize_url)
    refuse('breakdown_normalize_url is not supported.', 'breakdownFilter__breakdown_normalize_url');
  if (present(breakdown?.breakdown_histogram_bin_count))
    refuse('Histogram breakdowns are not supported.', 'breakdownFilter__breakdown_histogram_bin_count');
  breakdown?.breakdowns?.forEach((entry, i) => {
    if (entry.normalize_url)
      refuse('normalize_url is not supported.', `breakdownFilter__breakdowns__${i}__normalize_url`);
    if (present(entry.histogram_bin_count))
      refuse('Histogram breakdowns are not supported.', `breakdownFilter__breakdowns__${i}__histogram_bin_count`);
  });
  const trends = query.trendsFilter;
  if (present(trends?.smoothingIntervals) && trends.smoothingIntervals > 1)
    refuse('Smoothing (a moving average over intervals) is not supported.', 'trendsFilter__smoothingIntervals');
  if (present(trends?.breakdown_histogram_bin_count))
    refuse('Histogram breakdowns are not supported.', 'trendsFilter__breakdown_histogram_bin_count');
  const display = trends?.display;
  if (display && Object.hasOwn(UNSUPPORTED_DISPLAYS, display))
    refuse(UNSUPPORTED_DISPLAYS[display]!, 'trendsFilter__display');
}

const TOP_LEVEL: Record<string, string> = {
  date_from: `${Q}__dateRange__date_from`,
  date_to: `${Q}__dateRange__date_to`,
  explicit_date: `${Q}__dateRange__explicitDate`,
  interval: `${Q}__interval`,
  display: `${Q}__trendsFilter__display`,
  breakdown_limit: `${Q}__breakdownFilter__breakdown_limit`,
  breakdown_hide_other_aggregation: `${Q}__breakdownFilter__breakdown_hide_other_aggregation`,
  compare: `${Q}__compareFilter__compare`,
  compare_to: `${Q}__compareFilter__compare_to`,
  aggregation_group_type_index: `${Q}__aggregation_group_type_index`,
  // The series count cap and "at least one series".
  events: `${Q}__series`,
  actions: `${Q}__series`,
  // Test-account filters are the project's, not the query's: the query's switch is what to change.
  filter_test_accounts: `${Q}__filterTestAccounts`,
};

/** The query path of a legacy error attr; null for errors that are not about a field of the query. */
export function queryAttr(attr: string | null, origins: Origins): string | null {
  if (attr === null) return null;
  const series = /^(events|actions)__(\d+)(?:__(.*))?$/.exec(attr);
  if (series) {
    const origin = origins[series[1] as 'events' | 'actions'][Number(series[2])];
    if (!origin) return `${Q}__series`;
    return `${Q}__series__${origin.series}${seriesField(series[3], series[1] === 'events', origin)}`;
  }
  const [head] = attr.split('__', 1) as [string];
  if (head === 'properties') return `${Q}__${attr}`;
  if (head === 'formula') return origins.formula;
  if (head === 'breakdown') return origins.breakdown;
  if (head === 'breakdown_type') return origins.breakdown_type;
  return TOP_LEVEL[head] ?? null;
}

function seriesField(rest: string | undefined, isEvent: boolean, origin: SeriesOrigin): string {
  if (rest === undefined) return '';
  if (rest === 'id') return isEvent ? '__event' : '__id';
  const filter = /^properties__(\d+)(.*)$/.exec(rest);
  if (filter) {
    const i = Number(filter[1]);
    return i < origin.properties
      ? `__properties__${i}${filter[2]}`
      : `__fixedProperties__${i - origin.properties}${filter[2]}`;
  }
  return `__${rest}`;
}
