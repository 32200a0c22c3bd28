import * as v from 'valibot';
import { INTERVALS } from '../exports/intervals.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageQuery, queryInteger } from './query-string.ts';
import { awareTimestamp as timestamp } from './timestamps.ts';

const awareTimestamp = timestamp('Enter a valid ISO 8601 date-time with a time zone, e.g. 2024-05-01T00:00:00Z.');

const fields = {
  name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(255)),
  model: v.optional(v.picklist(['events', 'persons'], '"model" must be events or persons.')),
  destination: v.object({ type: v.unknown(), config: v.optional(v.unknown()) }),
  interval: v.picklist(INTERVALS, `"interval" must be one of: ${INTERVALS.join(', ')}.`),
  paused: v.optional(v.boolean()),
  timezone: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(64)))),
  offset_day: v.optional(
    v.nullable(
      v.pipe(
        v.number(),
        v.integer('offset_day is a whole day: 0 (Sunday) to 6.'),
        v.minValue(0, 'offset_day is 0 (Sunday) to 6 (Saturday).'),
        v.maxValue(6, 'offset_day is 0 (Sunday) to 6 (Saturday).'),
      ),
    ),
  ),
  offset_hour: v.optional(
    v.nullable(
      v.pipe(
        v.number(),
        v.integer('offset_hour is a whole hour: 0 to 23.'),
        v.minValue(0, 'offset_hour is 0 to 23.'),
        v.maxValue(23, 'offset_hour is 0 to 23.'),
      ),
    ),
  ),
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
/** PostHog's log entry filters (`posthog/api/log_entries.py`): limit 1-500, default 50. */
const logFilters = {
  ...pageQuery,
  limit: v.optional(queryInteger(1, 500), '50'),
  level: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').map((l) => l.trim().toUpperCase())),
      v.array(v.picklist(['DEBUG', 'LOG', 'INFO', 'WARNING', 'ERROR'], 'Levels are DEBUG, LOG, INFO, WARNING, ERROR.')),
    ),
  ),
  search: v.optional(v.pipe(v.string(), v.maxLength(200, 'search is limited to 200 characters.'))),
  after: v.optional(awareTimestamp),
  before: v.optional(awareTimestamp),
};
export const logsQuery = v.object({
  ...logFilters,
  run_id: v.optional(v.string()),
  instance_id: v.optional(v.string()),
});

// Backfills and runs as resources (PostHog's cursor-paginated viewsets).
const cursorPage = {
  limit: v.optional(queryInteger(1, MAX_PAGE_SIZE), String(DEFAULT_PAGE_SIZE)),
  cursor: v.optional(v.pipe(v.string(), v.maxLength(200))),
};
export const backfillCreateBody = v.object({
  start_at: v.optional(v.nullable(awareTimestamp)),
  end_at: awareTimestamp,
  allow_overlap: v.optional(v.boolean()),
});
export const backfillParams = v.object({ id: v.string(), backfill_id: v.string() });
export const backfillListQuery = v.object({
  ...cursorPage,
  ordering: v.optional(
    v.picklist(
      ['created_at', '-created_at', 'start_at', '-start_at'],
      'ordering is one of created_at, start_at (- for descending).',
    ),
    '-created_at',
  ),
});
export const runParams = v.object({ id: v.string(), run_id: v.string() });
const RUN_STATUSES = ['Starting', 'Running', 'Completed', 'Failed', 'FailedRetryable', 'Cancelled'] as const;
export const runListQuery = v.object({
  ...cursorPage,
  ordering: v.optional(
    v.picklist(
      ['created_at', '-created_at', 'data_interval_start', '-data_interval_start'],
      'ordering is one of created_at, data_interval_start (- for descending).',
    ),
    '-created_at',
  ),
  status: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').map((x) => x.trim())),
      v.array(v.picklist(RUN_STATUSES, `Statuses are ${RUN_STATUSES.join(', ')}.`)),
    ),
  ),
  after: v.optional(awareTimestamp),
  before: v.optional(awareTimestamp),
});
export const runLogsQuery = v.object(logFilters);
export const unpauseBody = v.object({ backfill: v.optional(v.boolean()) });
export const emptyBody = v.object({});
