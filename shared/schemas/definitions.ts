import * as v from 'valibot';
import { pageQuery } from './query-string.ts';

/** PostHog's event_definitions list: `search` (a substring of the name) and limit/offset paging. */
export const eventDefinitionsQuery = v.object({
  ...pageQuery,
  search: v.optional(v.pipe(v.string(), v.maxLength(400))),
});

/** Names one `event_names` list may hold (a trend's series at most); each is one Query of its keys. */
export const MAX_PROPERTY_EVENT_NAMES = 50;
/** Names one `properties` or `excluded_properties` list may hold. */
export const MAX_PROPERTY_NAMES = 200;

const queryBoolean = v.pipe(
  v.picklist(['true', 'false', 'True', 'False', '1', '0'], 'Must be a valid boolean.'),
  v.transform((s) => s === 'true' || s === 'True' || s === '1'),
);

/**
 * A JSON list of strings in one query parameter (PostHog's `event_names`, `excluded_properties`): checked
 * whole in the transformation, so every refusal names the parameter itself.
 */
const jsonNameList = (max: number) =>
  v.pipe(
    v.string(),
    v.description(`A JSON list of at most ${max} strings.`),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(dataset.value);
      } catch {
        parsed = undefined;
      }
      if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string')) {
        addIssue({ message: 'Must be a JSON list of strings.' });
        return NEVER;
      }
      if (parsed.length > max) {
        addIssue({ message: `At most ${max} names.` });
        return NEVER;
      }
      return parsed as string[];
    }),
  );

/**
 * PostHog's property_definitions list: `type` event (default), person or group (with `group_type_index`);
 * `event_names` marks (and with `filter_by_event_names` keeps only) the keys seen on those events;
 * `properties` keeps the named keys (comma-separated), `excluded_properties` drops them; `is_numerical`;
 * `search` (a substring of the name); limit/offset paging.
 */
export const propertyDefinitionsQuery = v.object({
  ...pageQuery,
  type: v.optional(v.picklist(['event', 'person', 'group'], '"type" must be event, person or group.'), 'event'),
  group_type_index: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d+$/, 'A valid integer is required.'),
      v.transform(Number),
      v.minValue(0, 'Ensure this value is greater than or equal to 0.'),
      v.maxValue(4, 'Ensure this value is less than or equal to 4.'),
    ),
  ),
  search: v.optional(v.pipe(v.string(), v.maxLength(400, 'Ensure this field has no more than 400 characters.'))),
  event_names: v.optional(jsonNameList(MAX_PROPERTY_EVENT_NAMES)),
  filter_by_event_names: v.optional(queryBoolean),
  excluded_properties: v.optional(jsonNameList(MAX_PROPERTY_NAMES)),
  properties: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').filter((n) => n !== '')),
      v.array(v.string()),
      v.maxLength(MAX_PROPERTY_NAMES, `At most ${MAX_PROPERTY_NAMES} names.`),
    ),
  ),
  is_numerical: v.optional(queryBoolean),
});

export type PropertyDefinitionsQuery = v.InferOutput<typeof propertyDefinitionsQuery>;
