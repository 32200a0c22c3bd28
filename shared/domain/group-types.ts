import { nowIso } from '../clock.ts';
import { getGroupTypes, saveGroupTypes, type GroupType } from '../db/groups.ts';
import { logger } from '../observability.ts';
import { retryTransient, TRANSIENT } from '../retry.ts';
import { hasControlCharacter } from '../schemas/groups.ts';

/** PostHog's limit: group types per project, index 0-4. */
export const MAX_GROUP_TYPES = 5;
/** PostHog's column sizes: a group type name and a group key are at most 400 characters. */
export const MAX_GROUP_TYPE_LENGTH = 400;
export const MAX_GROUP_KEY_LENGTH = 400;

/** Projects whose assigned types a container remembers (an assignment never changes, so no expiry). */
const PROJECTS_REMEMBERED = 10_000;
const known = new Map<number, Map<string, number>>();

function remember(projectId: number, types: readonly GroupType[]): Map<string, number> {
  const map = new Map(types.map((t) => [t.group_type, t.group_type_index]));
  known.delete(projectId);
  known.set(projectId, map);
  if (known.size > PROJECTS_REMEMBERED) known.delete(known.keys().next().value!);
  return map;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A group key as PostHog stores it: strings and numbers (as text), non-empty, at most 400 characters. */
export function groupKeyOf(value: unknown): string | undefined {
  const key =
    typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
  return key && key.length <= MAX_GROUP_KEY_LENGTH ? key : undefined;
}

/**
 * A group type name as types are assigned: non-empty, at most 400 characters, no control character.
 * The name is how every list, filter and breakdown shows the type; a control character in it
 * (a NUL, a line break, an escape sequence) shows as nothing, breaks the line or drives the terminal.
 */
export function isGroupTypeName(t: unknown): t is string {
  return typeof t === 'string' && t.length > 0 && t.length <= MAX_GROUP_TYPE_LENGTH && !hasControlCharacter(t);
}

/** The type names an event names that are refused (a control character, empty or too long): reported, never assigned. */
function refusedTypeNames(event: string, properties: Record<string, unknown>): string[] {
  if (properties.$process_person_profile === false) return [];
  const named: unknown[] = [];
  if (event === '$groupidentify' && properties.$group_type !== undefined) named.push(properties.$group_type);
  if (isObject(properties.$groups)) named.push(...Object.keys(properties.$groups));
  return named.filter((t): t is string => typeof t === 'string' && !isGroupTypeName(t));
}

/**
 * The groups an event names: its `$groups` and, for `$groupidentify`, its `$group_type`. Events sent
 * with `$process_person_profile: false` name none (PostHog attributes only events with person processing).
 */
export function groupTypesNamed(event: string, properties: Record<string, unknown>): string[] {
  if (properties.$process_person_profile === false) return [];
  const named: string[] = [];
  if (event === '$groupidentify' && isGroupTypeName(properties.$group_type)) named.push(properties.$group_type);
  if (isObject(properties.$groups))
    for (const [type, key] of Object.entries(properties.$groups))
      if (isGroupTypeName(type) && groupKeyOf(key) !== undefined) named.push(type);
  return named;
}

/**
 * The project's index of each named type, assigning free indexes (0-4) in order of first use. A type
 * named once all five are taken gets none: PostHog drops it with an ingestion warning, and so do we
 * (a warning in the log, never an error to the SDK). Reads the table only for a type this container
 * has not seen assigned.
 */
export async function groupTypeIndexes(projectId: number, named: readonly string[]): Promise<Map<string, number>> {
  const wanted = [...new Set(named)];
  const cached = known.get(projectId);
  if (cached && (wanted.every((t) => cached.has(t)) || cached.size >= MAX_GROUP_TYPES)) return cached;
  const dropped: string[] = [];
  const types = await retryTransient(
    `Group types of project ${projectId}`,
    async () => {
      const record = await getGroupTypes(projectId);
      const have = new Set(record.types.map((t) => t.group_type));
      const missing = wanted.filter((t) => !have.has(t));
      const free = MAX_GROUP_TYPES - record.types.length;
      dropped.splice(0, dropped.length, ...missing.slice(Math.max(0, free)));
      const added = missing.slice(0, Math.max(0, free));
      if (added.length === 0) return record.types;
      const at = nowIso();
      const types = [
        ...record.types,
        ...added.map((group_type, i) => ({
          group_type,
          group_type_index: record.types.length + i,
          name_singular: null,
          name_plural: null,
          created_at: at,
        })),
      ];
      return (await saveGroupTypes({ ...record, types })) ? types : TRANSIENT;
    },
    { attempts: 8 },
  );
  for (const group_type of dropped)
    logger.warn('ingestion warning: group type limit reached', {
      type: 'group_type_limit_reached',
      project_id: projectId,
      group_type,
      limit: MAX_GROUP_TYPES,
    });
  return remember(projectId, types);
}

/**
 * Writes `$group_0`...`$group_4` on events from their `$groups` and the project's type indexes (as
 * PostHog's ingestion does), so every later reader (segments, trends, exports) sees a plain event property.
 */
export async function attributeGroups(
  projectId: number,
  events: readonly { event: string; properties: Record<string, unknown> }[],
): Promise<void> {
  // A refused type name is left out as PostHog leaves out a type past the limit: the event is kept as
  // sent, with no `$group_N` for it and no group, and an ingestion warning says why.
  for (const group_type of new Set(events.flatMap((e) => refusedTypeNames(e.event, e.properties))))
    logger.warn('ingestion warning: invalid group type', {
      type: 'invalid_group_type',
      project_id: projectId,
      group_type: JSON.stringify(group_type.slice(0, MAX_GROUP_TYPE_LENGTH)),
    });
  const named = events.flatMap((e) => groupTypesNamed(e.event, e.properties));
  if (named.length === 0) return;
  const indexes = await groupTypeIndexes(projectId, named);
  for (const e of events) {
    if (e.properties.$process_person_profile === false || !isObject(e.properties.$groups)) continue;
    for (const [type, value] of Object.entries(e.properties.$groups)) {
      // A name assigned before control characters were refused is not attributed either.
      const index = isGroupTypeName(type) ? indexes.get(type) : undefined;
      const key = groupKeyOf(value);
      if (index !== undefined && key !== undefined) e.properties[`$group_${index}`] = key;
    }
  }
}

/** Forgets what this container remembers (tests that reset the table). */
export function forgetGroupTypes(): void {
  known.clear();
}
