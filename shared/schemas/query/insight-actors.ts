import * as v from 'valibot';
import { integerIn, text } from './fields.ts';
import { trendsQuery } from './trends.ts';

/**
 * PostHog's InsightActorsQuery, the `source` of an ActorsQuery that lists the actors behind one point
 * of an insight: the insight (`source`, a TrendsQuery here), the point's `day`, its `series` (index),
 * `breakdown` value and `compare` side. Read by shared/domain/query/insight-actors.ts; `status`,
 * `interval`, `includeRecordings` and other keys are ignored.
 */
export const insightActorsQuery = v.looseObject({
  kind: v.literal(
    'InsightActorsQuery',
    'The source of an ActorsQuery may be an InsightActorsQuery (over a TrendsQuery).',
  ),
  source: v.looseObject({
    kind: v.literal('TrendsQuery', 'Only a TrendsQuery source is supported: the actors behind a trend point.'),
  }),
  day: v.nullish(v.union([text(40), v.number()])),
  series: v.nullish(integerIn(0, 99, 'series is the index of one of the trend’s series.')),
  breakdown: v.nullish(v.union([text(4000), v.number(), v.array(v.union([text(4000), v.number()]))])),
  compare: v.nullish(v.picklist(['current', 'previous'], 'compare is current or previous.')),
});

/** The source's TrendsQuery, validated as /query validates one. */
export { trendsQuery as insightActorsSource };
