import * as v from 'valibot';
import { timelineQuery } from './persons.ts';

const GROUP_TYPE_INDEX_REQUIRED =
  'You must pass ?group_type_index= in this URL. To get a list of valid group types, call /api/:project_id/groups_types/.';

/** PostHog's indexes run 0-4; the message of a missing one is PostHog's. */
const groupTypeIndex = v.pipe(
  v.string(GROUP_TYPE_INDEX_REQUIRED),
  v.regex(/^\d+$/, 'A valid integer is required.'),
  v.transform(Number),
  v.minValue(0, 'Ensure this value is greater than or equal to 0.'),
  v.maxValue(4, 'Ensure this value is less than or equal to 4.'),
);

export const groupListQuery = v.object({
  group_type_index: groupTypeIndex,
  search: v.optional(v.pipe(v.string(), v.maxLength(400))),
  cursor: v.optional(v.pipe(v.string(), v.maxLength(1024))),
});

export const groupFindQuery = v.object({
  group_type_index: groupTypeIndex,
  group_key: v.pipe(v.string('This field is required.'), v.minLength(1, 'This field is required.'), v.maxLength(400)),
});

/** A group's properties timeline: the group as `find` names it, and the range as a person's timeline takes it. */
export const groupTimelineQuery = v.object({ ...groupFindQuery.entries, ...timelineQuery.entries });

/**
 * True when the text holds a control character (C0, DEL or C1: Unicode's Cc category). Group type
 * names and their display names refuse them: a NUL, a line break or an escape sequence shows as
 * nothing, breaks the line or drives a terminal wherever the name is listed. Capture uses it too
 * (shared/domain/group-types.ts).
 */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

const groupName = v.optional(
  v.nullable(
    v.pipe(
      v.string(),
      v.trim(),
      v.maxLength(400),
      v.check((name) => !hasControlCharacter(name), 'Group type names may not contain control characters.'),
    ),
  ),
);

/** PostHog's `update_metadata`: a list of rows naming the type by index. */
export const groupTypesMetadataBody = v.pipe(
  v.array(
    v.object({
      group_type_index: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(4)),
      name_singular: groupName,
      name_plural: groupName,
    }),
  ),
  v.maxLength(5),
);
