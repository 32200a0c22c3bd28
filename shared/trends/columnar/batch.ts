/**
 * The unit the columnar engine executes on: one batch of events as dictionary-encoded columns, the
 * shape the day segments are stored in (shared/segments/codec.ts). A batch comes from one decoded
 * segment chunk, or is built in memory from events that were not compacted (raw partitions, top-up,
 * or a caller's `TrendEvent[]`), so every read source runs the same code.
 */
import { readDictionaryColumn, readTimes, type FetchedSegment, type Projection } from '#shared/segments/codec.ts';
import { propertyOf } from '../properties.ts';
import type { TrendEvent } from '../types.ts';

/** A property column: row i has `dictionary[indexes[i] - 1]`, or lacks the key when `indexes[i]` is 0. */
export interface DictionaryColumn {
  dictionary: readonly unknown[];
  indexes: Uint32Array;
}

/**
 * Who did an event, as the query sees it: the person (merged distinct ids share one; an unresolved
 * distinct id stands for itself) and that person's current properties.
 */
export interface Actor {
  person: string;
  properties: Readonly<Record<string, unknown>>;
}

export interface ColumnBatch {
  n: number;
  /** Row i happened at `base + time[i]` epoch ms (segments: u32 offsets from their day as stored). */
  base: number;
  time: Uint32Array | Float64Array;
  /** Event names: row i is `names[nameIndexes[i]]` (every row `names[0]` when null). */
  names: readonly string[];
  nameIndexes: Uint32Array | null;
  /** Row i was done by `actors[actorIndexes[i]]` (every row `actors[0]` when null). */
  actors: readonly Actor[];
  actorIndexes: Uint32Array | null;
  /** The distinct id of each actor entry (HogQL's `distinct_id`); null when storage did not read distinct ids. */
  distinctIds: readonly string[] | null;
  /** Only the keys the query uses; a key missing here is absent on every row. Segment columns are decoded on first use. */
  columns: { get(key: string): DictionaryColumn | undefined };
}

/**
 * Where the engine reads events: batches decoded one at a time (a batch may be dropped once handled,
 * so a 30-day range never holds 30 days of rows), possibly read more than once (the session-duration
 * breakdown needs a first pass). Rows outside [from, to] are not part of the query's events.
 */
export interface ColumnSource {
  from: number;
  to: number;
  forEachBatch(visit: (batch: ColumnBatch) => void): void;
}

/** The person of a distinct id, when known (resolved by storage before the engine runs). */
export type PersonJoin = (distinctId: string) => Actor;

const NO_PROPERTIES: Readonly<Record<string, unknown>> = Object.freeze({});

/** Without a person resolution every distinct id is its own person, with no properties. */
export const distinctIdsOnly: PersonJoin = (distinctId) => ({ person: distinctId, properties: NO_PROPERTIES });

/**
 * One segment chunk of a single event name: distinct ids decoded and joined to persons at once (once
 * per distinct id); the times and property columns decoded when the engine first reads them, so a
 * chunk no series matches costs no more than its dictionary of distinct ids.
 */
export function batchOfSegment(
  name: string,
  segment: FetchedSegment,
  projection: Projection,
  join: PersonJoin,
): ColumnBatch {
  const dids = projection.distinctIds
    ? (readDictionaryColumn(segment.dids, segment.n) as { dictionary: string[]; indexes: Uint32Array })
    : null;
  const decoded = new Map<string, DictionaryColumn | undefined>();
  let time: Uint32Array | undefined;
  return {
    n: segment.n,
    base: segment.base,
    get time() {
      return (time ??= readTimes(segment));
    },
    names: [name],
    nameIndexes: null,
    actors: dids ? dids.dictionary.map(join) : [join('')],
    actorIndexes: dids?.indexes ?? null,
    distinctIds: dids?.dictionary ?? null,
    columns: {
      get(key) {
        if (!decoded.has(key)) {
          const blob = projection.properties.includes(key) ? segment.columns.get(key) : undefined;
          decoded.set(key, blob ? readDictionaryColumn(blob, segment.n) : undefined);
        }
        return decoded.get(key);
      },
    },
  };
}

/** An event as storage holds it outside segments (raw partitions, top-up): the engine joins its person. */
export interface EventRow {
  event: string;
  distinct_id: string;
  t: number;
  properties: Record<string, unknown>;
}

const valueId = (v: unknown) => (typeof v === 'string' ? `s${v}` : `j${JSON.stringify(v)}`);

/** Dictionary-encodes the given keys of rows (in row order), like the segment codec does. */
function encodeColumns(
  n: number,
  propertiesOf: (i: number) => Record<string, unknown>,
  keys: readonly string[],
): Map<string, DictionaryColumn> {
  const columns = new Map<string, DictionaryColumn>();
  for (const key of keys) {
    const dictionary: unknown[] = [];
    const ids = new Map<string, number>();
    const indexes = new Uint32Array(n);
    for (let i = 0; i < n; i += 1) {
      const value = propertyOf(propertiesOf(i), key);
      if (value === undefined) continue;
      const id = valueId(value);
      let v = ids.get(id);
      if (v === undefined) ids.set(id, (v = dictionary.push(value)));
      indexes[i] = v;
    }
    if (dictionary.length) columns.set(key, { dictionary, indexes });
  }
  return columns;
}

/** A name (or actor) column: the dictionary in first-seen order and each row's index into it. */
function encodeKeys<K>(n: number, keyOf: (i: number) => K): { dictionary: K[]; indexes: Uint32Array } {
  const dictionary: K[] = [];
  const ids = new Map<K, number>();
  const indexes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) {
    const key = keyOf(i);
    let v = ids.get(key);
    if (v === undefined) ids.set(key, (v = dictionary.push(key) - 1));
    indexes[i] = v;
  }
  return { dictionary, indexes };
}

const byTime = (times: Float64Array) => {
  const order = Array.from({ length: times.length }, (_, i) => i);
  return order.sort((a, b) => times[a]! - times[b]! || a - b);
};

/** Uncompacted events as one in-memory batch (sorted by time), persons joined once per distinct id. */
export function batchOfRows(rows: readonly EventRow[], keys: readonly string[], join: PersonJoin): ColumnBatch {
  const times = Float64Array.from(rows, (r) => r.t);
  const order = byTime(times);
  const n = rows.length;
  const names = encodeKeys(n, (i) => rows[order[i]!]!.event);
  const dids = encodeKeys(n, (i) => rows[order[i]!]!.distinct_id);
  return {
    n,
    base: 0,
    time: Float64Array.from(order, (i) => times[i]!),
    names: names.dictionary,
    nameIndexes: names.indexes,
    actors: dids.dictionary.map(join),
    actorIndexes: dids.indexes,
    distinctIds: dids.dictionary,
    columns: encodeColumns(n, (i) => rows[order[i]!]!.properties, keys),
  };
}

/** Timestamps are UTC (or epoch ms); one without a zone designator is read as UTC too (Date.parse would use the machine's zone). */
function parseTimestamp(ts: string | number): number {
  if (typeof ts === 'number') return ts;
  return Date.parse(/(Z|[+-]\d{2}:?\d{2})$/i.test(ts) || !ts.includes('T') ? ts : `${ts}Z`);
}

/**
 * A caller's events (each with its own person and person properties) as one batch; events without a
 * valid time are left out. An actor is a (distinct id, person, person properties) triple as the events carry them.
 */
export function batchOfEvents(events: readonly TrendEvent[], keys: readonly string[]): ColumnBatch {
  const valid = events.filter((e) => Number.isFinite(parseTimestamp(e.timestamp)));
  const times = Float64Array.from(valid, (e) => parseTimestamp(e.timestamp));
  const order = byTime(times);
  const n = valid.length;
  const at = (i: number) => valid[order[i]!]!;
  const names = encodeKeys(n, (i) => at(i).event);
  const actorIds = new Map<string, Map<object, number>>();
  const actors: Actor[] = [];
  const distinctIds: string[] = [];
  const actorIndexes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) {
    const e = at(i);
    const person = e.person_id || e.distinct_id;
    const properties = e.person_properties ?? NO_PROPERTIES;
    const id = `${person}\u0000${e.distinct_id}`;
    let byProperties = actorIds.get(id);
    if (!byProperties) actorIds.set(id, (byProperties = new Map()));
    let a = byProperties.get(properties);
    if (a === undefined) {
      byProperties.set(properties, (a = actors.push({ person, properties }) - 1));
      distinctIds.push(e.distinct_id);
    }
    actorIndexes[i] = a;
  }
  return {
    n,
    base: 0,
    time: Float64Array.from(order, (i) => times[i]!),
    names: names.dictionary,
    nameIndexes: names.indexes,
    actors,
    actorIndexes,
    distinctIds,
    columns: encodeColumns(n, (i) => at(i).properties, keys),
  };
}
