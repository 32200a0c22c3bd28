/**
 * PostHog's property definitions. Event and person keys are recorded by the ingest worker as it sees
 * them (one partition per project, `PROJECT#<p>#PROPDEFS`): the compacted day segments hold a column per
 * key too, but their attribute names hash long keys and are only listed by reading whole chunks, and
 * keys of events not yet compacted would be missing. Group keys come from the group counts (#106).
 */
import type { StoredEvent } from '../db/events.ts';
import { groupPropertyCounts } from '../db/groups.ts';
import {
  readPropertyKeys,
  recordPropertyKeys,
  type PropertyKeySighting,
  type PropertyType,
  type StoredPropertyDefinition,
} from '../db/property-definitions.ts';
import { inParallel } from '../db/batch.ts';
import { ValidationError } from '../errors.ts';
import { logger } from '../observability.ts';
import type { PropertyDefinitionsQuery } from '../schemas/definitions.ts';
import { personUpdatesOf } from './person-properties.ts';

/** Keys (and event names) longer than this many UTF-8 bytes are not recorded: sort keys stop at 1,024 bytes. */
export const MAX_RECORDED_KEY_BYTES = 400;
/** New sightings written per project per stream batch; the rest are recorded by a later batch that sees them again. */
export const MAX_SIGHTINGS_PER_BATCH = 500;
/** Keys one listing reads of a kind (every event key, every person key). */
export const MAX_KEYS_READ = 10_000;
/** Keys read per name of `event_names`. */
export const MAX_KEYS_READ_PER_EVENT = 1_000;

/** Person-update instructions are not event properties one filters on. */
const NOT_EVENT_KEYS = new Set(['$set', '$set_once', '$unset']);
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The type PostHog's ingestion infers from a first value; null for values that say nothing (null, lists, objects). */
export function inferPropertyType(value: unknown): PropertyType | null {
  if (typeof value === 'number') return Number.isFinite(value) ? 'Numeric' : null;
  if (typeof value === 'boolean') return 'Boolean';
  if (typeof value !== 'string') return null;
  const lower = value.trim().toLowerCase();
  if (lower === 'true' || lower === 'false') return 'Boolean';
  if (ISO_DATE.test(value.trim()) && !Number.isNaN(Date.parse(value.trim()))) return 'DateTime';
  return 'String';
}

const recordable = (s: string) => s.length > 0 && Buffer.byteLength(s) <= MAX_RECORDED_KEY_BYTES;

/** Every sighting a batch of new events holds: each event key (overall and per event name) and each `$set`/`$set_once` key. */
export function sightingsOf(events: readonly StoredEvent[]): PropertyKeySighting[] {
  const out: PropertyKeySighting[] = [];
  for (const e of events) {
    const eventNamed = recordable(e.event);
    for (const [key, value] of Object.entries(e.properties)) {
      if (NOT_EVENT_KEYS.has(key) || !recordable(key)) continue;
      const type = inferPropertyType(value);
      out.push({ projectId: e.project_id, kind: 'event', key, type });
      if (eventNamed) out.push({ projectId: e.project_id, kind: 'event', key, event: e.event, type });
    }
    const updates = personUpdatesOf(e.properties);
    for (const [key, value] of [...Object.entries(updates.setOnce), ...Object.entries(updates.set)]) {
      if (recordable(key)) out.push({ projectId: e.project_id, kind: 'person', key, type: inferPropertyType(value) });
    }
  }
  return out;
}

/**
 * What this container has recorded (true: with a type), so a warm worker writes only keys it has not
 * seen: a project's steady traffic costs no writes. Cleared when full.
 */
const recorded = new Map<string, boolean>();
const MEMO_ENTRIES = 50_000;
const memoKey = (s: PropertyKeySighting) => `${s.projectId}\u0000${s.kind}\u0000${s.event ?? ''}\u0000${s.key}`;

/** Records the keys of a stream batch's new events; idempotent, so a redelivered batch is harmless. */
export async function notePropertyKeys(events: readonly StoredEvent[]): Promise<void> {
  const fresh = new Map<string, PropertyKeySighting>();
  const perProject = new Map<number, number>();
  for (const s of sightingsOf(events)) {
    const id = memoKey(s);
    const prior = fresh.get(id);
    if (prior) {
      if (prior.type === null && s.type !== null) fresh.set(id, s);
      continue;
    }
    const known = recorded.get(id);
    if (known === true || (known === false && s.type === null)) continue;
    const written = perProject.get(s.projectId) ?? 0;
    if (written >= MAX_SIGHTINGS_PER_BATCH) continue;
    perProject.set(s.projectId, written + 1);
    fresh.set(id, s);
  }
  if (fresh.size === 0) return;
  await recordPropertyKeys([...fresh.values()]);
  if (recorded.size + fresh.size > MEMO_ENTRIES) recorded.clear();
  for (const [id, s] of fresh) recorded.set(id, s.type !== null);
}

/** Person keys an API edit sets (`PATCH`, `update_property`): recorded like ingestion's, the first MAX_SIGHTINGS_PER_BATCH of an edit. */
export async function notePersonPropertyKeys(projectId: number, set: Record<string, unknown>): Promise<void> {
  const sightings = Object.entries(set)
    .filter(([key]) => recordable(key))
    .slice(0, MAX_SIGHTINGS_PER_BATCH)
    .map(([key, value]): PropertyKeySighting => ({ projectId, kind: 'person', key, type: inferPropertyType(value) }));
  if (sightings.length === 0) return;
  // The edit is saved: keys are only suggestions, and the next event or edit that sets them records them.
  await recordPropertyKeys(sightings).catch((error: unknown) =>
    logger.warn('person property keys not recorded', { projectId, error: (error as Error).message }),
  );
}

export interface PropertyDefinition {
  id: string;
  name: string;
  description: null;
  tags: string[];
  is_numerical: boolean;
  property_type: PropertyType | null;
  is_seen_on_filtered_events: boolean | null;
  updated_at: null;
  updated_by: null;
  verified: false;
}

/** Keys one request reads: every key of the kind, and those seen on `event_names` (null when none were given). */
async function candidateKeys(
  projectId: number,
  q: PropertyDefinitionsQuery,
): Promise<{ all: StoredPropertyDefinition[]; seen: Set<string> | null; limited: boolean }> {
  if (q.type === 'group') {
    if (q.group_type_index === undefined)
      throw new ValidationError('group_type_index must be set for queries with type=group.', 'group_type_index');
    const counts = await groupPropertyCounts(projectId);
    const all = counts
      .filter((c) => c.group_type_index === q.group_type_index && c.count > 0)
      .map((c) => ({ key: c.key, type: null }));
    return { all, seen: null, limited: false };
  }
  if (q.type === 'person') {
    const read = await readPropertyKeys(projectId, { kind: 'person' }, MAX_KEYS_READ);
    return { all: read.keys, seen: null, limited: read.more };
  }
  const names = q.event_names ? [...new Set(q.event_names)] : [];
  const [overall, ...perName] = await inParallel([undefined, ...names], 8, (event) =>
    event === undefined
      ? readPropertyKeys(projectId, { kind: 'event' }, MAX_KEYS_READ)
      : readPropertyKeys(projectId, { kind: 'event', event }, MAX_KEYS_READ_PER_EVENT),
  );
  const seen = q.event_names ? new Set(perName.flatMap((r) => r.keys.map((k) => k.key))) : null;
  return { all: overall!.keys, seen, limited: overall!.more || perName.some((r) => r.more) };
}

/**
 * The list as PostHog answers it: keys seen on `event_names` first, then by name; `scan_limited: true`
 * when a kind holds more keys than one listing reads (MAX_KEYS_READ, MAX_KEYS_READ_PER_EVENT).
 */
export async function listPropertyDefinitions(
  projectId: number,
  q: PropertyDefinitionsQuery,
): Promise<{ count: number; results: PropertyDefinition[]; scan_limited?: true }> {
  const { all, seen, limited } = await candidateKeys(projectId, q);
  const needle = q.search?.toLowerCase();
  const only = q.properties ? new Set(q.properties) : null;
  const excluded = new Set(q.excluded_properties ?? []);
  const kept = all.filter(
    (d) =>
      (!needle || d.key.toLowerCase().includes(needle)) &&
      (!only || only.has(d.key)) &&
      !excluded.has(d.key) &&
      (q.is_numerical === undefined || (d.type === 'Numeric') === q.is_numerical) &&
      (!q.filter_by_event_names || !seen || seen.has(d.key)),
  );
  const rank = (d: StoredPropertyDefinition) => (seen && !seen.has(d.key) ? 1 : 0);
  kept.sort((a, b) => rank(a) - rank(b) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const results = kept.slice(q.offset, q.offset + q.limit).map(
    (d): PropertyDefinition => ({
      // PostHog's ids are uuids of stored definitions; here the key is the definition.
      id: d.key,
      name: d.key,
      description: null,
      tags: [],
      is_numerical: d.type === 'Numeric',
      property_type: d.type,
      is_seen_on_filtered_events: seen ? seen.has(d.key) : null,
      updated_at: null,
      updated_by: null,
      verified: false,
    }),
  );
  return { count: kept.length, results, ...(limited ? { scan_limited: true as const } : {}) };
}
