import {
  getGroup,
  getGroupTypes,
  groupPropertyCounts,
  groupsPage,
  saveGroupTypes,
  type GroupRecord,
  type GroupsPosition,
  type GroupType,
  listGroupChanges,
} from '../db/groups.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import { NotFound, ValidationError } from '../errors.ts';
import { retryTransient, TRANSIENT } from '../retry.ts';
import { type TimelineRange, timeline } from './timeline.ts';

/** PostHog's group type resource. */
function groupTypeOut(t: GroupType) {
  return {
    group_type: t.group_type,
    group_type_index: t.group_type_index,
    name_singular: t.name_singular,
    name_plural: t.name_plural,
    detail_dashboard: null,
    default_columns: null,
    created_at: t.created_at,
  };
}

/** PostHog's group resource. */
function groupOut(g: GroupRecord) {
  return {
    group_type_index: g.group_type_index,
    group_key: g.group_key,
    group_properties: g.group_properties,
    created_at: g.created_at,
  };
}

export async function listGroupTypes(projectId: number) {
  const { types } = await getGroupTypes(projectId);
  return [...types].sort((a, b) => a.group_type_index - b.group_type_index).map(groupTypeOut);
}

export interface GroupTypeNames {
  group_type_index: number;
  name_singular?: string | null;
  name_plural?: string | null;
}

/**
 * PostHog's `update_metadata`: names of existing types (a field left out keeps its value, `null` or
 * an empty string clears it); answers the whole list. An index no type has is a 404.
 */
export async function updateGroupTypeNames(projectId: number, rows: readonly GroupTypeNames[]) {
  await retryTransient(`Group types of project ${projectId}`, async () => {
    const record = await getGroupTypes(projectId);
    const types = record.types.map((t) => ({ ...t }));
    for (const row of rows) {
      const type = types.find((t) => t.group_type_index === row.group_type_index);
      if (!type) throw new NotFound();
      if (row.name_singular !== undefined) type.name_singular = row.name_singular || null;
      if (row.name_plural !== undefined) type.name_plural = row.name_plural || null;
    }
    return (await saveGroupTypes({ ...record, types })) ? true : TRANSIENT;
  });
  // Type metadata is part of what answers about groups show: cached ones are retired with it.
  await bumpAnswersGeneration(projectId);
  return listGroupTypes(projectId);
}

/** PostHog's page size for groups (its CursorPagination). */
export const GROUPS_PAGE_SIZE = 100;
/** Groups one search request examines at most; past it `next` continues from where it stopped. */
export const GROUPS_SEARCH_SCAN_LIMIT = 5_000;

function encodeCursor(p: GroupsPosition): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.groupKey])).toString('base64url');
}

function decodeCursor(cursor: string): GroupsPosition {
  try {
    const [createdAt, groupKey] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof createdAt === 'string' && typeof groupKey === 'string' && !Number.isNaN(Date.parse(createdAt)))
      return { createdAt, groupKey };
  } catch {
    // refused below
  }
  throw new ValidationError('Invalid cursor', 'cursor');
}

/** PostHog's search: the key exactly (case-insensitive) or the properties' JSON text containing it. */
function matches(g: GroupRecord, search: string | undefined): boolean {
  if (search === undefined) return true;
  const s = search.toLowerCase();
  return g.group_key.toLowerCase() === s || JSON.stringify(g.group_properties).toLowerCase().includes(s);
}

/**
 * One page of a type's groups, newest first; `cursor` is where the previous page stopped (only
 * forward: `previous` is always null). A search reads at most GROUPS_SEARCH_SCAN_LIMIT groups.
 */
export async function listGroups(
  projectId: number,
  q: { group_type_index: number; search?: string; cursor?: string },
): Promise<{ results: ReturnType<typeof groupOut>[]; nextCursor?: string }> {
  let after = q.cursor ? decodeCursor(q.cursor) : undefined;
  const results: GroupRecord[] = [];
  let scanned = 0;
  for (;;) {
    const want = q.search === undefined ? GROUPS_PAGE_SIZE - results.length : GROUPS_PAGE_SIZE;
    const page = await groupsPage(
      projectId,
      q.group_type_index,
      Math.min(want, GROUPS_SEARCH_SCAN_LIMIT - scanned),
      after,
    );
    for (const g of page.groups) {
      scanned += 1;
      after = { createdAt: g.created_at, groupKey: g.group_key };
      if (!matches(g, q.search)) continue;
      results.push(g);
      if (results.length === GROUPS_PAGE_SIZE) break;
    }
    const more = page.more || page.groups.at(-1)?.group_key !== after?.groupKey;
    if (!more) return { results: results.map(groupOut) };
    if (results.length === GROUPS_PAGE_SIZE || scanned >= GROUPS_SEARCH_SCAN_LIMIT)
      return { results: results.map(groupOut), nextCursor: encodeCursor(after!) };
  }
}

export async function findGroup(projectId: number, typeIndex: number, groupKey: string) {
  const group = await getGroup(projectId, typeIndex, groupKey);
  if (!group) throw new NotFound();
  return groupOut(group);
}

/** A group's properties over time: one point per `$group_set` that changed a value (as a person's timeline). */
export async function groupPropertiesTimeline(
  projectId: number,
  typeIndex: number,
  groupKey: string,
  range: TimelineRange,
) {
  if (!(await getGroup(projectId, typeIndex, groupKey))) throw new NotFound();
  return timeline(range, async (window) =>
    (await listGroupChanges(projectId, typeIndex, groupKey, window)).map((c) => ({
      timestamp: c.timestamp,
      properties: c.properties,
      changed_keys: c.changed,
      source: 'event',
      event: '$groupidentify',
      event_uuid: c.event_uuid,
      actor: null,
    })),
  );
}

/** PostHog's `groups/property_definitions`: per type index, its property keys by how many groups hold them. */
export async function groupPropertyDefinitions(projectId: number) {
  const counts = (await groupPropertyCounts(projectId)).filter((c) => c.count > 0);
  counts.sort((a, b) => a.group_type_index - b.group_type_index || b.count - a.count || (a.key < b.key ? -1 : 1));
  const out: Record<string, { name: string; count: number }[]> = {};
  for (const c of counts) (out[String(c.group_type_index)] ??= []).push({ name: c.key, count: c.count });
  return out;
}
