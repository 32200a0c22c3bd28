import * as v from 'valibot';
import { pageQuery, queryInteger } from './query-string.ts';
import { awareTimestamp } from './timestamps.ts';

const NOT_A_PERSON_ID =
  'The ID provided does not look like a personID. If you are using a distinctId, please use /persons?distinct_id=X instead.';

/** Person ids are integers (the spec's rule, not PostHog's list UUIDs). */
export const personIdParams = v.object({
  id: v.pipe(v.string(), v.regex(/^\d{1,15}$/, NOT_A_PERSON_ID), v.transform(Number)),
});

const queryBoolean = v.pipe(
  v.string(),
  v.picklist(['true', 'false', '1', '0', 'True', 'False'], 'Must be a valid boolean.'),
  v.transform((s) => s === 'true' || s === '1' || s === 'True'),
);

export const personListQuery = v.object({
  ...pageQuery,
  cursor: v.optional(v.pipe(v.string(), v.maxLength(4096))),
  distinct_id: v.optional(v.pipe(v.string(), v.maxLength(400))),
  email: v.optional(v.pipe(v.string(), v.maxLength(400))),
  search: v.optional(v.pipe(v.string(), v.maxLength(400))),
  properties: v.optional(v.string()),
});

export const personUpdateBody = v.object({
  // v.record would turn a list into an object keyed by index: accept only a real dictionary.
  properties: v.custom<Record<string, unknown>>(
    (p) => typeof p === 'object' && p !== null && !Array.isArray(p),
    'Expected a dictionary of properties.',
  ),
});

export const personDeleteQuery = v.object({
  delete_events: v.optional(queryBoolean, 'false'),
});

export const deletePropertyQuery = v.object({
  $unset: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(400))),
});
export const deletePropertyBody = v.object({
  $unset: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(400))),
});

export const splitBody = v.object({ main_distinct_id: v.optional(v.pipe(v.string(), v.minLength(1))) });

export const activityQuery = v.object({
  limit: v.optional(queryInteger(1, 100), '10'),
  page: v.optional(queryInteger(1), '1'),
});

/** Compared with the stored UTC timestamps as text, so it is made one of them first. */
const isoTime = v.pipe(
  awareTimestamp('Must be an ISO 8601 timestamp with a time zone.'),
  v.transform((s) => new Date(s).toISOString()),
);
export const timelineQuery = v.object({ from: v.optional(isoTime), to: v.optional(isoTime) });

export const bulkDeleteBody = v.pipe(
  v.object({
    ids: v.optional(
      v.pipe(
        v.array(v.union([v.pipe(v.number(), v.integer(), v.minValue(0)), v.pipe(v.string(), v.minLength(1))])),
        v.minLength(1),
        v.maxLength(1000, 'At most 1000 ids per request.'),
      ),
    ),
    distinct_ids: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.minLength(1))),
        v.minLength(1),
        v.maxLength(1000, 'At most 1000 distinct ids per request.'),
      ),
    ),
    delete_events: v.optional(v.boolean(), false),
  }),
  v.check((b) => (b.ids === undefined) !== (b.distinct_ids === undefined), 'Provide either ids or distinct_ids.'),
);

/** A property key as the persons endpoints take it (the same bound as `$unset`). */
const propertyKey = v.pipe(v.string(), v.minLength(1), v.maxLength(400));

/** PostHog answers an absent or empty `key` with no values rather than a 400. */
export const propertyValuesQuery = v.object({
  key: v.optional(v.pipe(v.string(), v.maxLength(400))),
  value: v.optional(v.pipe(v.string(), v.maxLength(400))),
});

/** `value` may be any JSON, null included (it is `$set` as given); only its absence is refused. */
export const updatePropertyBody = v.object({
  key: v.optional(v.nullable(propertyKey)),
  value: v.optional(v.unknown()),
});

export const resetDistinctIdBody = v.object({ distinct_id: v.optional(v.unknown()) });
