import * as v from 'valibot';
import { MAX_SERIES } from '../../trends/limits.ts';

/**
 * PostHog's TrendsQuery (posthog/schema.py), typed for the fields this service reads; every object is
 * loose because PostHog's clients send many presentation fields. Values are checked for their type
 * here (issues come out as `query__series__0__math`); what they mean is checked by the translator
 * (shared/domain/query/trends-request.ts) and the trend engine.
 */

const SERIES_KINDS = ['EventsNode', 'ActionsNode'] as const;

const optionalString = v.nullish(v.string());
const optionalBoolean = v.nullish(v.boolean());
const optionalNumber = v.nullish(v.number());
const optionalInteger = v.nullish(v.pipe(v.number(), v.integer()));
/** Property filters: their contents are validated by the trend engine (its errors are mapped back into the query). */
const filterList = v.nullish(v.array(v.unknown(), 'Must be a list of property filters.'));

/** What EventsNode and ActionsNode share: the series' maths and filters. */
const seriesFields = {
  custom_name: optionalString,
  name: optionalString,
  math: optionalString,
  math_property: optionalString,
  math_property_type: optionalString,
  math_group_type_index: optionalInteger,
  math_hogql: optionalString,
  math_multiplier: optionalNumber,
  math_property_revenue_currency: v.nullish(v.unknown()),
  properties: filterList,
  fixedProperties: filterList,
};

const eventsNode = v.looseObject({ kind: v.literal('EventsNode'), event: optionalString, ...seriesFields });
/** An action's id: an integer, or its digits as a string (PostHog's model coerces those too). */
const actionId = v.union(
  [v.pipe(v.number(), v.integer()), v.pipe(v.string(), v.regex(/^\d{1,15}$/), v.transform(Number))],
  'A valid integer is required.',
);
const actionsNode = v.looseObject({
  kind: v.literal('ActionsNode'),
  id: actionId,
  ...seriesFields,
});

const seriesNode = v.variant('kind', [eventsNode, actionsNode], (issue) =>
  issue.path?.at(-1)?.key === 'kind'
    ? `Unsupported series kind ${typeof issue.input === 'string' ? `"${issue.input.slice(0, 100)}"` : '(none)'}: a TrendsQuery series is one of ${SERIES_KINDS.join(', ')}.`
    : `Invalid data. Expected a dictionary, but got ${issue.received}.`,
);

const propertyGroup = v.looseObject({ type: optionalString, values: v.array(v.unknown()) });

const breakdownEntry = v.looseObject({
  property: v.union([v.string(), v.number()], 'Not a valid string.'),
  type: optionalString,
  normalize_url: optionalBoolean,
  histogram_bin_count: optionalNumber,
  group_type_index: optionalInteger,
});

/** A formula's name is repeated on each of its rows: bounded like the formula itself (shared/trends/formula.ts). */
export const MAX_FORMULA_NAME_LENGTH = 1_000;
const formulaNode = v.looseObject({
  formula: v.string(),
  custom_name: v.nullish(
    v.pipe(
      v.string(),
      v.maxLength(MAX_FORMULA_NAME_LENGTH, `Ensure this field has no more than ${MAX_FORMULA_NAME_LENGTH} characters.`),
    ),
  ),
});

export const trendsQuery = v.looseObject({
  kind: v.literal('TrendsQuery'),
  series: v.pipe(
    v.array(seriesNode),
    v.minLength(1, 'A TrendsQuery needs at least one series.'),
    v.maxLength(
      MAX_SERIES,
      `A trend may have at most ${MAX_SERIES} series (events and actions together); remove some series.`,
    ),
  ),
  dateRange: v.nullish(
    v.looseObject({ date_from: optionalString, date_to: optionalString, explicitDate: optionalBoolean }),
  ),
  interval: optionalString,
  properties: v.nullish(
    v.union(
      [v.array(v.unknown()), propertyGroup],
      'Must be a list of property filters or a property group {"type": "AND" | "OR", "values": [...]}.',
    ),
  ),
  filterTestAccounts: optionalBoolean,
  breakdownFilter: v.nullish(
    v.looseObject({
      breakdown: v.nullish(
        v.union([v.string(), v.number(), v.array(v.union([v.string(), v.number()]))], 'Not a valid string.'),
      ),
      breakdown_type: optionalString,
      breakdown_limit: optionalInteger,
      breakdown_hide_other_aggregation: optionalBoolean,
      breakdown_normalize_url: optionalBoolean,
      breakdown_histogram_bin_count: optionalNumber,
      breakdown_group_type_index: optionalInteger,
      breakdowns: v.nullish(v.array(breakdownEntry)),
    }),
  ),
  compareFilter: v.nullish(v.looseObject({ compare: optionalBoolean, compare_to: optionalString })),
  trendsFilter: v.nullish(
    v.looseObject({
      display: optionalString,
      formula: optionalString,
      formulas: v.nullish(v.array(v.string())),
      formulaNodes: v.nullish(v.array(formulaNode)),
      smoothingIntervals: optionalNumber,
      breakdown_histogram_bin_count: optionalNumber,
    }),
  ),
  aggregation_group_type_index: optionalInteger,
  samplingFactor: optionalNumber,
  conversionGoal: v.nullish(v.unknown()),
});
export type TrendsQuery = v.InferOutput<typeof trendsQuery>;
export type TrendsSeriesNode = TrendsQuery['series'][number];
