import * as v from 'valibot';

/** Rows a page may hold: PostHog's default is 100; its ceiling (50,000) would not fit one function's answer. */
export const ACTORS_DEFAULT_LIMIT = 100;
export const ACTORS_MAX_LIMIT = 1000;
export const ACTORS_MAX_COLUMNS = 50;

const text = (max: number) => v.pipe(v.string(), v.maxLength(max));

/**
 * PostHog's ActorsQuery over persons. Columns, orders and filters are read by the runner
 * (shared/domain/query/actors.ts), which names an unsupported one in its 400; `source` (an actors
 * query over an insight) is refused here. `modifiers`, `tags`, `response` and other keys are ignored.
 */
export const actorsQuery = v.looseObject({
  kind: v.literal('ActorsQuery'),
  select: v.nullish(
    v.pipe(
      v.array(text(400)),
      v.maxLength(ACTORS_MAX_COLUMNS, `At most ${ACTORS_MAX_COLUMNS} columns may be selected.`),
    ),
  ),
  search: v.nullish(text(400)),
  properties: v.nullish(v.unknown()),
  fixedProperties: v.nullish(v.unknown()),
  orderBy: v.nullish(v.pipe(v.array(text(400)), v.maxLength(1, 'Order by at most one column.'))),
  limit: v.nullish(
    v.pipe(
      v.number('A valid integer is required.'),
      v.integer('A valid integer is required.'),
      v.minValue(1, 'Ensure this value is greater than or equal to 1.'),
      v.maxValue(
        ACTORS_MAX_LIMIT,
        `Ensure this value is less than or equal to ${ACTORS_MAX_LIMIT} (the most rows one page may hold).`,
      ),
    ),
  ),
  offset: v.nullish(
    v.pipe(
      v.number('A valid integer is required.'),
      v.integer('A valid integer is required.'),
      v.minValue(0, 'Ensure this value is greater than or equal to 0.'),
      v.maxValue(Number.MAX_SAFE_INTEGER, 'A valid integer is required.'),
    ),
  ),
  source: v.nullish(
    v.custom<never>(
      () => false,
      'ActorsQuery with a source (actors of an insight, e.g. InsightActorsQuery) is not supported: this service answers ActorsQuery over all persons of the project.',
    ),
  ),
});

export type ActorsQuery = v.InferOutput<typeof actorsQuery>;
