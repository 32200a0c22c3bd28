/**
 * The lake: each compacted (project, UTC day) also as Parquet files (shared/lake/), what Athena and
 * DuckDB read. The compactor rewrites a day whenever it rebuilds its segments, so deleted events
 * (person deletions, event deletions: the ingest worker marks their days) leave the lake with them.
 */
import { randomUUID } from 'node:crypto';
import type { StoredEvent } from '../db/events.ts';
import { getPersons, personIdsOf } from '../db/persons.ts';
import { personsVersion } from '../db/projects.ts';
import { dataKey, dayPrefix, manifestText, manifestUris, newGeneration, pointerKey } from '../lake/layout.ts';
import { type LakeEvent, lakeFiles } from '../lake/rows.ts';
import { type LakeStore, lakeStore } from '../lake/store.ts';

const PARQUET = 'application/vnd.apache.parquet';

interface LakePerson {
  uuid: string;
  /** JSON text. */
  properties: string;
  /** Epoch milliseconds (null if the stored text is not a time). */
  createdAt: number | null;
}

/** distinct id -> the person's uuid, properties and creation time, for the distinct ids of one project's day. */
async function personsOf(projectId: number, distinctIds: string[]): Promise<Map<string, LakePerson>> {
  const ids = await personIdsOf(distinctIds.map((distinctId) => ({ projectId, distinctId })));
  const persons = await getPersons(projectId, [...new Set(ids.values())]);
  const byId = new Map(
    persons.map((p): [number, LakePerson] => {
      const createdAt = Date.parse(p.created_at);
      return [
        p.id,
        {
          uuid: p.uuid,
          properties: JSON.stringify(p.properties ?? {}),
          createdAt: Number.isFinite(createdAt) ? createdAt : null,
        },
      ];
    }),
  );
  const out = new Map<string, LakePerson>();
  for (const [key, id] of ids) {
    const person = byId.get(id);
    if (person) out.set(key.slice(`${projectId}#`.length), person);
  }
  return out;
}

export interface LakeDayWrite {
  files: number;
  rows: number;
  /** The project's persons version read before the person ids were looked up (undefined: no lake). */
  personsVersion?: number;
}

/**
 * Replaces the day's files with `events` (the project's events of that UTC day; anything else is
 * left out): a new generation's files first, then the pointer swapped to them, then the files the
 * old pointer named deleted. A day with no events keeps no pointer and no files.
 */
export async function writeLakeDay(
  projectId: number,
  day: string,
  events: StoredEvent[],
  now: Date,
  store: LakeStore | undefined = lakeStore(),
): Promise<LakeDayWrite> {
  if (!store) return { files: 0, rows: 0 };
  const own = events.filter((e) => e.project_id === projectId && e.timestamp.slice(0, 10) === day);
  // Read before the lookup: a merge that commits after it moves the version, so the day's person ids read as stale.
  const version = await personsVersion(projectId);
  const persons = await personsOf(projectId, [...new Set(own.map((e) => e.distinct_id))]);
  const rows: LakeEvent[] = own.map((e) => {
    const person = persons.get(e.distinct_id);
    return {
      uuid: e.uuid,
      event: e.event,
      timestamp: e.timestamp,
      distinct_id: e.distinct_id,
      person_id: person?.uuid ?? null,
      person_properties: person?.properties ?? null,
      person_created_at: person?.createdAt ?? null,
      created_at: e.inserted_at,
      properties: e.properties,
    };
  });
  const files = lakeFiles(rows);
  const generation = newGeneration(now, randomUUID());
  const keys = files.map((_, i) => dataKey(projectId, day, generation, i));
  await Promise.all(files.map((body, i) => store.put(keys[i]!, body, PARQUET)));
  const pointer = pointerKey(projectId, day);
  const before = await store.getText(pointer);
  if (keys.length) await store.put(pointer, Buffer.from(manifestText(keys.map(store.uri))), 'text/plain');
  else await store.delete(pointer);
  // Superseded files go at once (a deleted event must not stay in the lake); a query already reading them fails and is retried on the new pointer.
  const prefix = dayPrefix(projectId, day);
  const superseded = manifestUris(before ?? '')
    .map((uri) => store.keyOf(uri))
    .filter((key): key is string => key?.startsWith(prefix) === true && !keys.includes(key));
  await Promise.all(superseded.map((key) => store.delete(key)));
  return { files: files.length, rows: rows.length, personsVersion: version };
}

/** The files of the lake's current generation of each day (days without events have none). */
export async function lakeDayUris(
  projectId: number,
  days: string[],
  store: LakeStore | undefined = lakeStore(),
): Promise<string[]> {
  if (!store) return [];
  const perDay = await Promise.all(
    days.map(async (day) => {
      const prefix = dayPrefix(projectId, day);
      // Only files of this project's day, whatever a pointer says.
      return manifestUris((await store.getText(pointerKey(projectId, day))) ?? '').filter((uri) =>
        store.keyOf(uri)?.startsWith(prefix),
      );
    }),
  );
  return perDay.flat();
}
