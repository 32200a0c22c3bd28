/**
 * The group properties a trend reads (group filters, group breakdowns): loaded once per query for the
 * group keys its events carry, so the engine looks a group up in memory per dictionary entry.
 */
import { getGroups, groupsOfType } from '../db/groups.ts';
import { ValidationError } from '../errors.ts';
import type { StoredColumns } from '../trends/columnar/index.ts';
import { groupKeysOf } from '../trends/columnar/index.ts';
import {
  checkQueryGroups,
  type GroupLookup,
  groupTypesOfFilters,
  MAX_QUERY_GROUPS,
  NO_GROUPS,
} from '../trends/groups.ts';
import type { TrendsModel } from '../trends/model.ts';
import type { PropertyGroup } from '../trends/types.ts';

/** The lookup of the groups of `types` that the read events name (MAX_QUERY_GROUPS at most: 400 past it). */
export async function groupLookup(
  projectId: number,
  query: TrendsModel,
  types: readonly number[],
  columns: StoredColumns,
  max = MAX_QUERY_GROUPS,
): Promise<GroupLookup> {
  if (types.length === 0) return NO_GROUPS;
  const refs = [...groupKeysOf(columns, types)].flatMap(([typeIndex, keys]) =>
    [...keys].map((groupKey) => ({ typeIndex, groupKey })),
  );
  checkQueryGroups(refs.length, query, max);
  if (refs.length === 0) return NO_GROUPS;
  const found = new Map(
    (await getGroups(projectId, refs)).map((g) => [`${g.group_type_index}\u0000${g.group_key}`, g.group_properties]),
  );
  return (typeIndex, key) => found.get(`${typeIndex}\u0000${key}`);
}

/**
 * Groups of one type an EventsQuery with group filters loads at most: its events are read page by
 * page, so the groups of the filtered types are loaded first (#104), each type's whole list.
 */
export const MAX_EVENTS_QUERY_GROUPS = 10_000;

/** The lookup of every group of the types `filters` read (400 on `attr` past MAX_EVENTS_QUERY_GROUPS of a type). */
export async function filterGroupLookup(
  projectId: number,
  filters: PropertyGroup,
  attr: string,
  max = MAX_EVENTS_QUERY_GROUPS,
): Promise<GroupLookup> {
  const types = [...groupTypesOfFilters(filters, new Set())];
  if (types.length === 0) return NO_GROUPS;
  const found = new Map<string, Record<string, unknown>>();
  for (const type of types) {
    const groups = await groupsOfType(projectId, type, max);
    if (groups.length > max)
      throw new ValidationError(
        `Group filters of an EventsQuery read every group of their type, at most ${max.toLocaleString('en-US')}; group type ${type} has more. Filter on the group key ($group_${type}) or use a trend.`,
        attr,
      );
    for (const g of groups) found.set(`${type}\u0000${g.group_key}`, g.group_properties);
  }
  return (typeIndex, key) => found.get(`${typeIndex}\u0000${key}`);
}
