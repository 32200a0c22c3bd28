/**
 * Deleted is gone from the lake at once. The lake's files change only when the compactor rewrites a
 * day, so whatever deletes or removes person data records a hide here, in the same request, before
 * the deletion itself: a person deleted (its person columns read NULL), a person's property removed
 * (the API's delete_property, an event's `$unset`: that key reads NULL for the person), a person's
 * events deleted by the drain (their rows are left out). Every lake query reads the project's hides
 * and its printer applies them (shared/lake/hidden.ts) until the days are rewritten:
 *
 * - the compactor finds the days a hide concerns (the distinct ids' keys-only index) and makes them
 *   due at once (the drain already knows its days, and schedules them itself);
 * - a day rewritten at least VISIBILITY_MS after the hide was recorded reads the deletion, so the
 *   hide stops waiting for it; a hide waiting for no day is settled, and deleted SETTLED_MS after it
 *   was recorded. Until then it is still applied (it changes nothing the files do not already say, a
 *   key set again after its removal aside): Athena reuses a result of the same SQL text for up to 60
 *   minutes (shared/lake/athena.ts RESULT_REUSE), and a text without the hide is the text of before
 *   the deletion.
 *
 * Bounds: a lake query applies at most MAX_LAKE_HIDES hides holding at most MAX_HIDDEN_CHARACTERS
 * of ids; past either a trend is answered in-process (exact without the lake) and a HogQLQuery is a
 * 503 saying to retry, until the compactor has caught up. Nothing deleted is ever served meanwhile.
 */
import { now as clockNow } from '../clock.ts';
import { daysOfDistinctId } from '../db/events.ts';
import {
  deleteLakeHides,
  dueLakeHides,
  type LakeHideRecord,
  putLakeHides,
  readLakeHides,
  resolveLakeHide,
  settleLakeHides,
} from '../db/lake-hides.ts';
import type { PersonRecord } from '../db/persons.ts';
import { scheduleCompactions } from '../db/segments.ts';
import { uuidv7 } from '../ids.ts';
import type { LakeHidden } from '../lake/hidden.ts';
import { logger } from '../observability.ts';
import { VISIBILITY_MS } from './event-days.ts';

/** Hides one lake query applies at most (a bulk delete of 1,000 persons and its drain's fit). */
export const MAX_LAKE_HIDES = 2_000;
/** Characters of ids (uuids, distinct ids, keys) the printed hides hold at most: the SQL stays far under Athena's 256 KB. */
export const MAX_HIDDEN_CHARACTERS = 128 * 1024;
/** Hides the compactor resolves per tick. */
const RESOLVE_PER_TICK = 200;
/**
 * How long after it was recorded a settled hide goes: past Athena's result reuse (60 minutes,
 * shared/lake/athena.ts RESULT_REUSE: not imported, it would bundle the lake's writer here), so no
 * answer computed before the deletion is reused once the SQL text is as it was.
 */
export const SETTLED_MS = 65 * 60_000;
const settledUntil = (at: string) => new Date(Date.parse(at) + SETTLED_MS).toISOString();

const isoNow = () => clockNow().toISOString();

/** Before persons are deleted: their person columns read NULL in the lake from now on. */
export async function hideDeletedPersons(
  projectId: number,
  persons: readonly Pick<PersonRecord, 'uuid' | 'distinct_ids'>[],
  ids: readonly string[] = persons.map(() => uuidv7()),
): Promise<void> {
  const at = isoNow();
  await putLakeHides(
    persons.map((p, i) => ({
      projectId,
      id: ids[i] as string,
      at,
      kind: 'person' as const,
      personUuid: p.uuid,
      distinctIds: p.distinct_ids,
    })),
  );
}

/** Before keys are removed from a person: they read NULL for its events in the lake from now on. */
export async function hideRemovedProperties(
  projectId: number,
  person: Pick<PersonRecord, 'uuid' | 'distinct_ids'>,
  keys: readonly string[],
  id: string = uuidv7(),
): Promise<void> {
  if (!keys.length) return;
  await putLakeHides([
    {
      projectId,
      id,
      at: isoNow(),
      kind: 'properties',
      personUuid: person.uuid,
      keys: [...keys],
      distinctIds: person.distinct_ids,
    },
  ]);
}

/** The keys `unset` removes from `properties` (those it has). */
export const removedKeys = (properties: Record<string, unknown>, unset: readonly string[]) =>
  [...new Set(unset)].filter((k) => Object.hasOwn(properties, k));

/** Before the drain deletes a distinct id's events up to `until`: their rows leave the lake from now on. Returns the hide. */
export async function hideDeletedEvents(
  projectId: number,
  distinctIds: readonly string[],
  until: string,
): Promise<LakeHideRecord> {
  const hide: LakeHideRecord = {
    projectId,
    id: uuidv7(),
    at: isoNow(),
    kind: 'events',
    distinctIds: [...distinctIds],
    until,
  };
  await putLakeHides([hide]);
  return hide;
}

/**
 * After the drain deleted the events (of `days`): the hide is made again from now, waiting for those
 * days (due for compaction at once), and the one made before the deletion goes. Without days nothing was deleted.
 */
export async function deletedEventsSettled(before: LakeHideRecord, days: ReadonlySet<string>): Promise<void> {
  if (days.size) {
    const at = isoNow();
    await putLakeHides([{ ...before, id: uuidv7(), at, days: [...days].sort() }]);
    await scheduleRewrites(before.projectId, [...days], at);
  }
  await deleteLakeHides(before.projectId, [before.id]);
}

/** The days can be compacted for the hide once its deletion is visible to the compactor's reads. */
async function scheduleRewrites(projectId: number, days: string[], at: string): Promise<void> {
  const due = new Date(Math.max(clockNow().getTime(), Date.parse(at) + VISIBILITY_MS)).toISOString();
  await scheduleCompactions(
    days.map((day) => ({ projectId, day })),
    due,
  );
}

/** The project's hides as the printers apply them; null past the caps (see the module's comment). */
export async function lakeHidden(projectId: number): Promise<LakeHidden | null> {
  const hides = await readLakeHides(projectId, MAX_LAKE_HIDES + 1);
  if (hides.length > MAX_LAKE_HIDES) return null;
  const hidden: LakeHidden = { rows: [], persons: [], keys: new Map() };
  let characters = 0;
  for (const h of hides) {
    if (h.kind === 'events' && h.until) {
      hidden.rows.push({ distinctIds: h.distinctIds, until: new Date(h.until) });
      for (const id of h.distinctIds) characters += id.length + 4;
    } else if (h.kind === 'person' && h.personUuid) {
      hidden.persons.push(h.personUuid);
      characters += h.personUuid.length + 4;
    } else if (h.kind === 'properties' && h.personUuid) {
      for (const key of h.keys ?? []) {
        hidden.keys.set(key, [...(hidden.keys.get(key) ?? []), h.personUuid]);
        characters += key.length + h.personUuid.length + 8;
      }
    }
  }
  return characters > MAX_HIDDEN_CHARACTERS ? null : hidden;
}

/**
 * The compactor's first step: for each hide whose days are not known yet, the days holding its
 * distinct ids' events (up to its time, or its `until`), made due for compaction at once.
 */
export async function scheduleLakeRewrites(now: Date, remainingMs: () => number = () => Infinity): Promise<number> {
  const due = await dueLakeHides(now, RESOLVE_PER_TICK);
  let resolved = 0;
  for (const hide of due) {
    if (remainingMs() < 120_000) break;
    if (hide.settled) {
      await deleteLakeHides(hide.projectId, [hide.id]);
      continue;
    }
    const until = hide.until ?? now.toISOString();
    const days = new Set<string>();
    for (const id of hide.distinctIds)
      for (const day of await daysOfDistinctId(hide.projectId, id, until)) days.add(day);
    await scheduleRewrites(hide.projectId, [...days], hide.at);
    if (await resolveLakeHide(hide, [...days], true, settledUntil(hide.at))) resolved += 1;
  }
  if (due.length) logger.info('lake hides resolved', { due: due.length, resolved });
  return resolved;
}

/**
 * After a day's lake files were rewritten by a compaction at `now`: the hides it satisfies stop
 * waiting for it. One recorded less than VISIBILITY_MS before may not be in what the compaction read:
 * the day is made due again for it.
 */
export async function settleLakeDay(projectId: number, day: string, now: Date): Promise<void> {
  const hides = (await readLakeHides(projectId)).filter((h) => h.days?.includes(day));
  if (!hides.length) return;
  const read = now.getTime() - VISIBILITY_MS;
  const settled = hides.filter((h) => Date.parse(h.at) <= read);
  await settleLakeHides(
    projectId,
    day,
    settled.map((h) => h.id),
    settledUntil,
  );
  const latest = Math.max(...hides.map((h) => Date.parse(h.at)));
  if (latest > read) await scheduleRewrites(projectId, [day], new Date(latest).toISOString());
}
