import type { StoredEvent } from '../db/events.ts';
import {
  getPerson,
  insertPerson,
  mergePersonInto,
  nextPersonId,
  personIdOf,
  personIdsOf,
  savePerson,
  type PersonRecord,
  type PropertyChange,
} from '../db/persons.ts';
import { bumpAnswersGeneration, bumpPersonsVersion } from '../db/projects.ts';
import { inParallel } from '../db/batch.ts';
import { logger } from '../observability.ts';
import { uuidv7 } from '../ids.ts';
import { conflictIfFalse, retryTransient } from '../retry.ts';
import {
  applyPersonUpdates,
  hasUpdates,
  isIllegalDistinctId,
  mergeProperties,
  personUpdatesOf,
} from './person-properties.ts';
import { hideRemovedProperties, removedKeys } from './lake-hides.ts';

const ATTEMPTS = 8;

function change(
  person: PersonRecord,
  e: StoredEvent,
  kind: PropertyChange['kind'],
  extra: Partial<PropertyChange> = {},
): PropertyChange {
  const u = personUpdatesOf(e.properties);
  return {
    id: uuidv7(),
    person_id: person.id,
    project_id: person.project_id,
    timestamp: e.timestamp,
    source: 'event',
    event_uuid: e.uuid,
    event: e.event,
    set: { ...u.setOnce, ...u.set },
    unset: u.unset,
    properties: person.properties,
    changed: [],
    kind,
    ...extra,
  };
}

async function load(projectId: number, distinctId: string): Promise<PersonRecord | undefined> {
  const id = await personIdOf(projectId, distinctId);
  return id === undefined ? undefined : getPerson(projectId, id);
}

async function newPerson(projectId: number, distinctIds: string[], e: StoredEvent): Promise<PersonRecord> {
  return {
    id: await nextPersonId(projectId),
    uuid: uuidv7(),
    project_id: projectId,
    properties: {},
    distinct_ids: distinctIds,
    created_at: e.timestamp,
    is_identified: false,
    version: 0,
  };
}

const PERSON_GROUPS_IN_FLIGHT = 16;

const isMerge = (e: StoredEvent) => e.event === '$identify' || e.event === '$create_alias';

/**
 * Persons for a stream batch. One BatchGetItem finds which distinct ids are known; an event of a known
 * id that sets nothing needs no further work (most traffic). The rest run grouped by distinct id:
 * in order within a group, groups concurrently (every write is conditional, so groups that meet in
 * a merge still converge). Returns the indexes of events that failed.
 */
export async function applyEventsToPersons(events: StoredEvent[]): Promise<number[]> {
  const relevant = events
    .map((e, index) => ({ e, index }))
    .filter(({ e }) => e.properties.$process_person_profile !== false && e.event !== '$groupidentify');
  const known = await personIdsOf(relevant.map(({ e }) => ({ projectId: e.project_id, distinctId: e.distinct_id })));
  const groups = new Map<string, { e: StoredEvent; index: number }[]>();
  for (const item of relevant) {
    const key = `${item.e.project_id}#${item.e.distinct_id}`;
    if (known.has(key) && !isMerge(item.e) && !hasUpdates(personUpdatesOf(item.e.properties))) continue;
    groups.set(key, [...(groups.get(key) ?? []), item]);
  }
  const failed: number[] = [];
  await inParallel([...groups.values()], PERSON_GROUPS_IN_FLIGHT, async (group) => {
    for (const { e, index } of group) {
      try {
        await applyEventToPersons(e);
      } catch (error) {
        failed.push(index);
        // Later events of this distinct id wait for the retry, to keep their order.
        failed.push(...group.filter((g) => g.index > index).map((g) => g.index));
        logger.error('person update failed', { event_uuid: e.uuid, error: (error as Error).message });
        return;
      }
    }
  });
  // After the merges committed: one UpdateItem per project whose distinct ids may have changed person.
  const merged = new Set([...groups.values()].flat().flatMap(({ e }) => (isMerge(e) ? [e.project_id] : [])));
  await Promise.all([...merged].map(bumpPersonsVersion));
  return failed;
}

/**
 * Brings the persons of a project up to date with one event. Every write is conditional (claims,
 * versions), so replaying the same event, or racing another worker, converges instead of duplicating.
 */
export async function applyEventToPersons(e: StoredEvent): Promise<void> {
  // PostHog never processes persons on $groupidentify: its distinct id (`$company_acme` from posthog-node) is no user.
  if (e.properties.$process_person_profile === false || e.event === '$groupidentify') return;
  const other =
    e.event === '$identify'
      ? e.properties.$anon_distinct_id
      : e.event === '$create_alias'
        ? e.properties.alias
        : undefined;
  if (typeof other === 'string' || typeof other === 'number') await mergeDistinctIds(e, String(other));
  await updateProperties(e);
}

async function updateProperties(e: StoredEvent): Promise<void> {
  const updates = personUpdatesOf(e.properties);
  const identify = e.event === '$identify';
  // One hide however many attempts (each attempt's put replaces it).
  const hideId = uuidv7();
  let removed = false;
  await retryTransient(
    `Person ${e.distinct_id}`,
    async () => {
      const person = await load(e.project_id, e.distinct_id);
      if (!person) {
        const created = await newPerson(e.project_id, [e.distinct_id], e);
        const { properties } = applyPersonUpdates({}, updates);
        const fresh = { ...created, properties, is_identified: identify };
        const record = hasUpdates(updates)
          ? change(fresh, e, 'create', { changed: Object.keys(properties) })
          : undefined;
        return conflictIfFalse(await insertPerson(fresh, record));
      }
      const { properties, changed } = applyPersonUpdates(person.properties, updates);
      const becomesIdentified = identify && !person.is_identified;
      if (changed.length === 0 && !becomesIdentified) return true;
      const next = { ...person, properties, is_identified: person.is_identified || identify };
      // Before the save: the lake stops serving an `$unset` key from now on (lake-hides.ts).
      const unset = removedKeys(person.properties, updates.unset);
      await hideRemovedProperties(e.project_id, person, unset, hideId);
      removed = unset.length > 0;
      return conflictIfFalse(
        await savePerson(next, { change: changed.length ? change(next, e, 'update', { changed }) : undefined }),
      );
    },
    {
      attempts: ATTEMPTS,
      gaveUp: () => new Error(`person update for ${e.distinct_id} kept conflicting (event ${e.uuid})`),
    },
  );
  // A cached answer may hold the removed value (a HogQLQuery reading person.properties): retired.
  if (removed) await bumpAnswersGeneration(e.project_id);
}

/** `$identify` / `$create_alias`: `other` joins the person of the event's distinct_id. */
async function mergeDistinctIds(e: StoredEvent, other: string): Promise<void> {
  const target = e.distinct_id;
  if (other === target || isIllegalDistinctId(other) || isIllegalDistinctId(target)) return;
  await retryTransient(
    `Merge of ${other} into ${target}`,
    async () => {
      const [t, s] = await Promise.all([load(e.project_id, target), load(e.project_id, other)]);
      if (!t && !s) {
        const created = await newPerson(e.project_id, [target, other], e);
        return conflictIfFalse(await insertPerson({ ...created, is_identified: e.event === '$identify' }));
      } else if (t && !s) {
        return conflictIfFalse(
          await savePerson({ ...t, distinct_ids: [...t.distinct_ids, other] }, { claim: [other] }),
        );
      } else if (!t && s) {
        return conflictIfFalse(
          await savePerson({ ...s, distinct_ids: [...s.distinct_ids, target] }, { claim: [target] }),
        );
      } else if (t && s) {
        if (t.id === s.id) return true;
        // PostHog refuses to merge two identified users on $identify/$create_alias: they are different people.
        if (t.is_identified && s.is_identified) return true;
        const merged: PersonRecord = {
          ...t,
          properties: mergeProperties(t.properties, s.properties),
          distinct_ids: [...t.distinct_ids, ...s.distinct_ids.filter((d) => !t.distinct_ids.includes(d))],
          is_identified: true,
        };
        const changed = Object.keys(merged.properties).filter(
          (k) => JSON.stringify(t.properties[k]) !== JSON.stringify(merged.properties[k]),
        );
        const record = change(merged, e, 'merge', { set: {}, unset: [], changed, merged_from: s.id });
        return conflictIfFalse(await mergePersonInto(merged, s, record));
      }
      return true;
    },
    {
      attempts: ATTEMPTS,
      gaveUp: () => new Error(`merging ${other} into ${target} kept conflicting (event ${e.uuid})`),
    },
  );
}
