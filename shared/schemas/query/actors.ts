import * as v from 'valibot';
import { integerIn, text } from './fields.ts';

/** Rows a page may hold: PostHog's default is 100; its ceiling (50,000) would not fit one function's answer. */
export const ACTORS_DEFAULT_LIMIT = 100;
export const ACTORS_MAX_LIMIT = 1000;
export const ACTORS_MAX_COLUMNS = 50;
export const ACTORS_MAX_ORDERS = 10;
/** The longest `select` or `orderBy` entry (HogQL's own expression cap, shared/hogql). */
const EXPRESSION_CHARS = 10_000;

/**
 * PostHog's ActorsQuery over persons. Columns, orders and filters are read by the runner
 * (shared/domain/query/actors.ts), which names an unsupported one in its 400. With `source` (an
 * InsightActorsQuery over a TrendsQuery that counts groups) it lists the groups behind a number
 * (shared/domain/query/group-actors.ts). `modifiers`, `tags`, `response` and other keys are ignored.
 */
export const actorsQuery = v.looseObject({
  kind: v.literal('ActorsQuery'),
  select: v.nullish(
    v.pipe(
      v.array(text(EXPRESSION_CHARS)),
      v.maxLength(ACTORS_MAX_COLUMNS, `At most ${ACTORS_MAX_COLUMNS} columns may be selected.`),
    ),
  ),
  search: v.nullish(text(400)),
  properties: v.nullish(v.unknown()),
  fixedProperties: v.nullish(v.unknown()),
  orderBy: v.nullish(
    v.pipe(v.array(text(EXPRESSION_CHARS)), v.maxLength(ACTORS_MAX_ORDERS, `At most ${ACTORS_MAX_ORDERS} orders.`)),
  ),
  limit: v.nullish(
    integerIn(
      1,
      ACTORS_MAX_LIMIT,
      `Ensure this value is less than or equal to ${ACTORS_MAX_LIMIT} (the most rows one page may hold).`,
    ),
  ),
  offset: v.nullish(integerIn(0, Number.MAX_SAFE_INTEGER, 'A valid integer is required.')),
  /** An actors query over another query: an InsightActorsQuery over a TrendsQuery (persons: shared/domain/query/insight-actors.ts; groups, when the series counts them: group-actors.ts). */
  source: v.nullish(v.unknown()),
});

export type ActorsQuery = v.InferOutput<typeof actorsQuery>;
