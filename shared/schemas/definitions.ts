import * as v from 'valibot';
import { pageQuery } from './query-string.ts';

/** PostHog's event_definitions list: `search` (a substring of the name) and limit/offset paging. */
export const eventDefinitionsQuery = v.object({
  ...pageQuery,
  search: v.optional(v.pipe(v.string(), v.maxLength(400))),
});
