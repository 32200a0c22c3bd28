import * as v from 'valibot';
import { INTERVALS } from '../exports/intervals.ts';
import { pageQuery } from './query-string.ts';
import { awareTimestamp as timestamp } from './timestamps.ts';

const awareTimestamp = timestamp('Enter a valid ISO 8601 date-time with a time zone, e.g. 2024-05-01T00:00:00Z.');

const fields = {
  name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(255)),
  model: v.optional(v.picklist(['events', 'persons'], '"model" must be events or persons.')),
  destination: v.object({ type: v.unknown(), config: v.optional(v.unknown()) }),
  interval: v.picklist(INTERVALS, `"interval" must be one of: ${INTERVALS.join(', ')}.`),
  paused: v.optional(v.boolean()),
  start_at: v.optional(v.nullable(awareTimestamp)),
  end_at: v.optional(v.nullable(awareTimestamp)),
  hogql_query: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(10_000)))),
  filters: v.optional(v.nullable(v.array(v.unknown()))),
  team_id: v.optional(v.pipe(v.number(), v.integer())),
};

export const exportCreateBody = v.object(fields);
export const exportUpdateBody = v.object({
  ...fields,
  name: v.optional(fields.name),
  destination: v.optional(fields.destination),
  interval: v.optional(fields.interval),
});
/** PostHog's run_test_step_new body: the destination to check, and optionally the one step to answer. */
export const destinationTestBody = v.object({
  destination: fields.destination,
  step: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(2, 'step is 0, 1 or 2.'))),
});
export const exportIdParams = v.object({ id: v.string() });
export const exportListQuery = v.object(pageQuery);
export const backfillBody = v.object({ start_at: awareTimestamp, end_at: awareTimestamp });
export const logsQuery = v.object({
  ...pageQuery,
  limit: v.optional(pageQuery.limit.wrapped, '50'),
  level: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').map((l) => l.trim().toUpperCase())),
      v.array(v.picklist(['DEBUG', 'LOG', 'INFO', 'WARNING', 'ERROR'], 'Levels are DEBUG, LOG, INFO, WARNING, ERROR.')),
    ),
  ),
  run_id: v.optional(v.string()),
  instance_id: v.optional(v.string()),
});
