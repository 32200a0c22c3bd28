import * as v from 'valibot';
import { UUID_PATTERN } from '../ids.ts';
import { pageQuery } from './query-string.ts';

export const cohortIdParams = v.object({
  id: v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'A valid integer is required.'), v.transform(Number)),
});

export const cohortListQuery = v.object({
  ...pageQuery,
  search: v.optional(v.pipe(v.string(), v.maxLength(400))),
  type: v.optional(v.picklist(['static', 'dynamic'], '"type" must be static or dynamic.')),
});

/** JSON booleans, or the text a multipart form sends them as. */
const formBoolean = v.union(
  [
    v.boolean(),
    v.pipe(
      v.picklist(['true', 'false', 'True', 'False', '1', '0']),
      v.transform((s) => s === 'true' || s === 'True' || s === '1'),
    ),
  ],
  'Must be a valid boolean.',
);

/** `filters` arrives as an object (JSON) or its JSON text (a multipart form field). */
const filtersField = v.pipe(
  v.unknown(),
  v.transform((f) => {
    if (typeof f !== 'string') return f;
    try {
      return JSON.parse(f) as unknown;
    } catch {
      return f;
    }
  }),
);

/** Person ids in PostHog's form (person uuids) or ours (integer ids); shared/domain/cohorts.ts resolves both. */
const personIdList = v.pipe(
  v.array(
    v.union([v.pipe(v.number(), v.integer(), v.minValue(1)), v.pipe(v.string(), v.minLength(1), v.maxLength(64))]),
  ),
  v.maxLength(10_000, 'At most 10000 persons per request.'),
);

const cohortFields = {
  name: v.optional(v.pipe(v.string(), v.maxLength(400))),
  description: v.optional(v.pipe(v.string(), v.maxLength(1000))),
  filters: v.optional(filtersField),
  is_static: v.optional(formBoolean),
  deleted: v.optional(formBoolean),
  _create_static_person_ids: v.optional(personIdList),
  /** The multipart upload's file field, as text. */
  csv: v.optional(v.string()),
};

export const cohortCreateBody = v.object(cohortFields);
export const cohortUpdateBody = v.object(cohortFields);

export const addPersonsBody = v.object({
  person_ids: v.pipe(personIdList, v.minLength(1, 'person_ids cannot be empty')),
});
export const removePersonBody = v.object({
  person_id: v.union([
    v.pipe(v.number(), v.integer(), v.minValue(1)),
    v.pipe(v.string(), v.minLength(1), v.maxLength(64)),
  ]),
});

export const cohortPersonsQuery = v.object({
  limit: pageQuery.limit,
  cursor: v.optional(v.pipe(v.string(), v.maxLength(200))),
});

/** PostHog's "person ID or UUID": our integer id, or the person's uuid. */
export const personCohortsQuery = v.object({
  person_id: v.pipe(
    v.string('This field is required.'),
    v.check(
      (id) => /^\d{1,15}$/.test(id) || UUID_PATTERN.test(id),
      'A person id (an integer) or a person uuid is required.',
    ),
  ),
});
