import { inParallel } from '../db/batch.ts';
import type { StoredEvent } from '../db/events.ts';
import {
  addPropertyCounts,
  COUNTS_PER_TRANSACTION,
  getGroup,
  getGroupTypes,
  writeGroup,
  type GroupChange,
  type GroupRecord,
} from '../db/groups.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import { uuidv7 } from '../ids.ts';
import { logger } from '../observability.ts';
import { retryTransient, TRANSIENT } from '../retry.ts';
import { groupKeyOf, isGroupTypeName } from './group-types.ts';
import { applyPersonUpdates } from './person-properties.ts';

const ATTEMPTS = 8;
const GROUPS_IN_FLIGHT = 16;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `$groupidentify` events that update a group (PostHog skips them without person processing). */
const isGroupIdentify = (e: StoredEvent) =>
  e.event === '$groupidentify' &&
  e.properties.$process_person_profile !== false &&
  isGroupTypeName(e.properties.$group_type) &&
  groupKeyOf(e.properties.$group_key) !== undefined;

/**
 * Groups for a stream batch: each `$groupidentify` creates its group or applies its `$group_set`, in
 * stream order per group, groups concurrently. The type's index is the one capture assigned; a type
 * capture dropped (a sixth) has none, and its event changes nothing. Returns the indexes of events that failed.
 */
export async function applyGroupIdentifies(events: StoredEvent[]): Promise<number[]> {
  const relevant = events.map((e, index) => ({ e, index })).filter(({ e }) => isGroupIdentify(e));
  if (relevant.length === 0) return [];
  const projects = [...new Set(relevant.map(({ e }) => e.project_id))];
  const typesOf = new Map(
    await Promise.all(
      projects.map(
        async (p) =>
          [p, new Map((await getGroupTypes(p)).types.map((t) => [t.group_type, t.group_type_index]))] as const,
      ),
    ),
  );
  const byGroup = new Map<string, { e: StoredEvent; index: number; typeIndex: number; key: string }[]>();
  for (const { e, index } of relevant) {
    const typeIndex = typesOf.get(e.project_id)?.get(String(e.properties.$group_type));
    if (typeIndex === undefined) continue;
    const key = groupKeyOf(e.properties.$group_key)!;
    const id = `${e.project_id}#${typeIndex}#${key}`;
    byGroup.set(id, [...(byGroup.get(id) ?? []), { e, index, typeIndex, key }]);
  }
  const failed: number[] = [];
  const changedProjects = new Set<number>();
  await inParallel([...byGroup.values()], GROUPS_IN_FLIGHT, async (group) => {
    for (const [i, { e, index, typeIndex, key }] of group.entries()) {
      try {
        if (await upsertGroup(e, typeIndex, key)) changedProjects.add(e.project_id);
      } catch (error) {
        // This event and the later ones of its group wait for the retry, to keep their order.
        failed.push(index, ...group.slice(i + 1).map((g) => g.index));
        logger.error('group update failed', { event_uuid: e.uuid, error: (error as Error).message });
        return;
      }
    }
  });
  // Cached answers that read group properties (filters, breakdowns) are stale once a group changes.
  await Promise.all([...changedProjects].map(bumpAnswersGeneration));
  return failed;
}

/**
 * The `$group_set` keys an event at `timestamp` may write: those no later event has set already, so
 * the outcome does not depend on the order events reach the worker (PostHog keeps the same per-key times).
 */
export function newerSet(
  set: Record<string, unknown>,
  lastUpdated: Record<string, string>,
  timestamp: string,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(set).filter(([k]) => !(Object.hasOwn(lastUpdated, k) && lastUpdated[k]! > timestamp)),
  );
}

/**
 * Creates the group or applies `$group_set` to it (set semantics, as PostHog's), recording the change
 * as person changes are recorded. Conditional writes: a replay changes nothing, a race re-reads.
 * True when the group was created or its properties changed.
 */
async function upsertGroup(e: StoredEvent, typeIndex: number, key: string): Promise<boolean> {
  const given = isObject(e.properties.$group_set) ? e.properties.$group_set : {};
  let changedProperties = false;
  await retryTransient(
    `Group ${typeIndex}/${key}`,
    async () => {
      const current = await getGroup(e.project_id, typeIndex, key);
      const base: GroupRecord = current ?? {
        project_id: e.project_id,
        group_type_index: typeIndex,
        group_key: key,
        group_properties: {},
        properties_last_updated_at: {},
        created_at: e.timestamp,
        version: 0,
      };
      const set = newerSet(given, base.properties_last_updated_at, e.timestamp);
      const { properties, changed } = applyPersonUpdates(base.group_properties, { set, setOnce: {}, unset: [] });
      // A group first seen through a later event was created no later than this one.
      const createdAt = [e.timestamp, base.created_at].sort()[0]!;
      // Every key the event sets is stamped, changed or not: an older value arriving later must still lose.
      const restamped = Object.keys(set).filter((k) => (base.properties_last_updated_at[k] ?? '') < e.timestamp);
      if (current && changed.length === 0 && restamped.length === 0 && createdAt === base.created_at) return true;
      const added = Object.keys(properties).filter((k) => !Object.hasOwn(base.group_properties, k));
      const change: GroupChange | undefined =
        changed.length > 0
          ? {
              id: uuidv7(),
              project_id: e.project_id,
              group_type_index: typeIndex,
              group_key: key,
              timestamp: e.timestamp,
              event_uuid: e.uuid,
              set,
              properties,
              changed,
              kind: current ? 'update' : 'create',
            }
          : undefined;
      const stamped = Object.fromEntries(restamped.map((k) => [k, e.timestamp]));
      const next: GroupRecord = {
        ...base,
        group_properties: properties,
        properties_last_updated_at: { ...base.properties_last_updated_at, ...stamped },
        created_at: createdAt,
      };
      if (!(await writeGroup(next, change, added.slice(0, COUNTS_PER_TRANSACTION)))) return TRANSIENT;
      changedProperties = !current || changed.length > 0;
      if (added.length > COUNTS_PER_TRANSACTION)
        await addPropertyCounts(e.project_id, typeIndex, added.slice(COUNTS_PER_TRANSACTION));
      return true;
    },
    { attempts: ATTEMPTS, gaveUp: () => new Error(`group ${typeIndex}/${key} kept conflicting (event ${e.uuid})`) },
  );
  return changedProperties;
}
