/**
 * TrendsQuery -> the engine's model (shared/trends/model.ts), the query path's front end: the legacy
 * `insights/trend` request is converted into the same model (shared/trends/parse.ts), so one engine
 * answers both. Pure. Fields that only change how PostHog draws the answer are ignored; a field that
 * would change the numbers and that the engine cannot honour is a 400 naming it, never dropped. Every
 * error, here or in the engine later, names the query's own field (`query__series__0__math`).
 */
import { ValidationError } from '../../errors.ts';
import type { TrendsQuery, TrendsSeriesNode } from '../../schemas/query/trends.ts';
import { parseFormula } from '../../trends/formula.ts';
import type { ModelAttrs, SeriesModel, TrendsModel } from '../../trends/model.ts';
import {
  breakdownModel,
  parseCompareTo,
  parseDate,
  parseDisplay,
  parseInterval,
  seriesModel,
} from '../../trends/parse.ts';
import { groupTypeIndexOf } from '../../trends/groups.ts';
import { HOGQL } from '../../trends/hogql.ts';
import { parseProperties } from '../../trends/properties.ts';
import { type Display, PROPERTY_MATHS } from '../../trends/types.ts';

const Q = 'query';
/** Displays PostHog answers with other computations (box plot statistics, a 2-D heatmap), not with trend series. */
const UNSUPPORTED_DISPLAYS: Record<string, string> = {
  BoxPlot: 'The BoxPlot display is not supported.',
  TwoDimensionalHeatmap: 'The TwoDimensionalHeatmap display is not supported.',
};
const PROPERTY_MATH_SET = new Set<string>(PROPERTY_MATHS);

const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

const QUERY_ATTRS: ModelAttrs = {
  series: `${Q}__series`,
  date_from: `${Q}__dateRange__date_from`,
  date_to: `${Q}__dateRange__date_to`,
  interval: `${Q}__interval`,
  breakdown_limit: `${Q}__breakdownFilter__breakdown_limit`,
  compare: `${Q}__compareFilter__compare`,
  compare_to: `${Q}__compareFilter__compare_to`,
  // The project's time zone is no field of the query.
  timezone: null,
  // Test-account filters are the project's, not the query's: the query's switch is what to change.
  testAccounts: { attr: `${Q}__filterTestAccounts`, each: false },
};

export function trendsModelOf(query: TrendsQuery): TrendsModel {
  refuseUnsupported(query);
  const aggregationGroup = groupTypeIndexOf(query.aggregation_group_type_index, `${Q}__aggregation_group_type_index`);
  const lists = { events: 0, actions: 0 };
  const series = query.series.map((node, i) => seriesOf(node, i, lists));
  const trends = query.trendsFilter;
  const display = parseDisplay(trends?.display, `${Q}__trendsFilter__display`);
  const formula = formulaOf(query);
  const formulaText = formula?.formula.trim() || null;
  const compare = query.compareFilter?.compare === true;
  const dateRange = query.dateRange;
  return {
    series,
    dateRange: {
      date_from: parseDate(dateRange?.date_from, `${Q}__dateRange__date_from`, true),
      date_to: parseDate(dateRange?.date_to, `${Q}__dateRange__date_to`, false),
      explicitDate: dateRange?.explicitDate === true,
    },
    interval: parseInterval(query.interval, `${Q}__interval`),
    properties: parseProperties(query.properties, `${Q}__properties`, HOGQL).group,
    filterTestAccounts: query.filterTestAccounts === true,
    aggregation_group_type_index: aggregationGroup,
    breakdownFilter: breakdownOf(query, display),
    // PostHog compares only when `compare` is true: `compare_to` alone is no comparison.
    compareFilter: {
      compare,
      compare_to: compare ? parseCompareTo(query.compareFilter?.compare_to, `${Q}__compareFilter__compare_to`) : null,
    },
    trendsFilter: { display, formula: formulaText },
    formula: formula && formulaText !== null ? parseFormula(formulaText, series.length, formula.attr) : null,
    attrs: QUERY_ATTRS,
  };
}

/**
 * An EventsNode or ActionsNode. Its `properties` and `fixedProperties` are ANDed (each parsed under
 * its own name). `name` is left out: PostHog labels a series by its event or action.
 */
function seriesOf(node: TrendsSeriesNode, index: number, lists: { events: number; actions: number }): SeriesModel {
  const attr = `${Q}__series__${index}`;
  const list = node.kind === 'EventsNode' ? 'events' : 'actions';
  const where = {
    attr,
    idAttr: `${attr}__${node.kind === 'EventsNode' ? 'event' : 'id'}`,
    list,
    index: lists[list]++,
  } as const;
  const filters = () => {
    const own = parseProperties(node.properties ?? [], `${attr}__properties`, HOGQL);
    const fixed = parseProperties(node.fixedProperties ?? [], `${attr}__fixedProperties`, HOGQL);
    return {
      group: { type: 'AND' as const, values: [...own.group.values, ...fixed.group.values] },
      echo: [...own.echo, ...fixed.echo],
    };
  };
  const { name: _, ...fields } = node;
  return seriesModel(
    fields,
    filters,
    () => (node.kind === 'EventsNode' ? { event: node.event ?? null } : { id: node.id }),
    where,
  );
}

/** The formula's text, its name (the label of its rows) and where the query holds it. */
interface QueryFormula {
  formula: string;
  custom_name: string | null;
  attr: string;
}

/** The label of the formula's rows: the formula node's `custom_name`, else PostHog's `Formula (<formula>)`. */
export function formulaLabelOf(query: TrendsQuery): string | null {
  const formula = formulaOf(query);
  return formula ? (formula.custom_name ?? `Formula (${formula.formula})`) : null;
}

/** PostHog reads `formulaNodes`, else `formulas`, else `formula` (TrendsQueryRunner); the engine computes one. */
function formulaOf(query: TrendsQuery): QueryFormula | null {
  const filter = query.trendsFilter;
  const at = `${Q}__trendsFilter`;
  const [field, nodes] = filter?.formulaNodes?.length
    ? [
        'formulaNodes',
        filter.formulaNodes.map((n, i) => ({
          formula: n.formula,
          custom_name: n.custom_name ?? null,
          attr: `${at}__formulaNodes__${i}__formula`,
        })),
      ]
    : filter?.formulas?.length
      ? [
          'formulas',
          filter.formulas.map((formula, i) => ({ formula, custom_name: null, attr: `${at}__formulas__${i}` })),
        ]
      : present(filter?.formula) && filter.formula.trim() !== ''
        ? ['formula', [{ formula: filter.formula, custom_name: null, attr: `${at}__formula` }]]
        : [null, []];
  if (field === null) return null;
  if (nodes.length > 1)
    throw new ValidationError(
      `This service computes one formula per query; this query has ${nodes.length}. Send one formula per query.`,
      `${at}__${field}`,
    );
  return nodes[0]!;
}

/** `breakdowns` (PostHog's multiple breakdowns) with one entry is that breakdown; it wins over `breakdown`, as in PostHog. */
function breakdownOf(query: TrendsQuery, display: Display): TrendsModel['breakdownFilter'] {
  const filter = query.breakdownFilter;
  const at = `${Q}__breakdownFilter`;
  const entries = filter?.breakdowns ?? [];
  if (entries.length > 1)
    throw new ValidationError(
      `Breaking down by more than one property is not supported: breakdowns has ${entries.length} entries, at most 1 is allowed.`,
      `${at}__breakdowns`,
    );
  const [entry] = entries;
  const common = {
    limit: filter?.breakdown_limit,
    hideOther: filter?.breakdown_hide_other_aggregation,
  };
  const names = {
    breakdown_limit: `${at}__breakdown_limit`,
    breakdown_hide_other_aggregation: `${at}__breakdown_hide_other_aggregation`,
  };
  return entry
    ? breakdownModel(
        { ...common, type: entry.type, breakdown: entry.property, groupTypeIndex: entry.group_type_index },
        display,
        {
          ...names,
          breakdown: `${at}__breakdowns__0__property`,
          breakdown_type: `${at}__breakdowns__0__type`,
          breakdown_group_type_index: `${at}__breakdowns__0__group_type_index`,
        },
      )
    : breakdownModel(
        {
          ...common,
          type: filter?.breakdown_type,
          breakdown: filter?.breakdown,
          groupTypeIndex: filter?.breakdown_group_type_index,
        },
        display,
        {
          ...names,
          breakdown: `${at}__breakdown`,
          breakdown_type: `${at}__breakdown_type`,
          breakdown_group_type_index: `${at}__breakdown_group_type_index`,
        },
      );
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
