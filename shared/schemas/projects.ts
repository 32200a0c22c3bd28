import * as v from 'valibot';
import { pageQuery } from './query-string.ts';

export const projectUpdateBody = v.object({
  name: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(200))),
  timezone: v.optional(v.pipe(v.string(), v.maxLength(64))),
  week_start_day: v.optional(v.picklist([0, 1], 'Must be 0 (Sunday) or 1 (Monday).')),
  test_account_filters: v.optional(v.array(v.unknown())),
  autocapture_opt_out: v.optional(v.boolean()),
});

const step = v.object({
  event: v.optional(v.nullable(v.pipe(v.string(), v.minLength(1), v.maxLength(400)))),
  properties: v.optional(v.array(v.unknown())),
});

const actionFields = {
  name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(400)),
  description: v.optional(v.pipe(v.string(), v.maxLength(4000))),
  steps: v.pipe(v.array(step), v.minLength(1, 'An action needs at least one step.'), v.maxLength(50)),
};

export const actionCreateBody = v.object(actionFields);
export const actionUpdateBody = v.object({
  ...actionFields,
  name: v.optional(actionFields.name),
  steps: v.optional(actionFields.steps),
});
export const actionIdParams = v.object({
  id: v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'A valid integer is required.'), v.transform(Number)),
});
export const actionListQuery = v.object(pageQuery);
