/**
 * The group properties a trend reads (group filters, group breakdowns): loaded once per query for the
 * group keys its events carry, so the engine looks a group up in memory per dictionary entry.
 */
import { getGroups } from '../db/groups.ts';
import type { StoredColumns } from '../trends/columnar/index.ts';
import { groupKeysOf } from '../trends/columnar/index.ts';
import { checkQueryGroups, type GroupLookup, NO_GROUPS } from '../trends/groups.ts';
import type { TrendsModel } from '../trends/model.ts';

/** The lookup of the groups of `types` that the read events name (MAX_QUERY_GROUPS at most: 400 past it). */
export async function groupLookup(
  projectId: number,
  query: TrendsModel,
  types: readonly number[],
  columns: StoredColumns,
): Promise<GroupLookup> {
  if (types.length === 0) return NO_GROUPS;
  const refs = [...groupKeysOf(columns, types)].flatMap(([typeIndex, keys]) =>
    [...keys].map((groupKey) => ({ typeIndex, groupKey })),
  );
  checkQueryGroups(refs.length, query);
  if (refs.length === 0) return NO_GROUPS;
  const found = new Map(
    (await getGroups(projectId, refs)).map((g) => [`${g.group_type_index}\u0000${g.group_key}`, g.group_properties]),
  );
  return (typeIndex, key) => found.get(`${typeIndex}\u0000${key}`);
}
