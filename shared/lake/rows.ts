/**
 * A day's events as lake rows and Parquet files. Columns: the event's identity and time, its person,
 * `session_id` and `group_0..4` (from `$session_id` and `$group_N`), PostHog's frequently used
 * properties as their own columns, and every other property as JSON text in `properties`.
 * Names are lowercase letters, digits and underscores: what Athena (Glue) accepts.
 */
import {
  type DictionaryTexts,
  type LakeParquetColumn,
  type PlainTexts,
  PlainTextsBuilder,
  releasePlainTexts,
  utf8Entries,
  writeLakeParquet,
} from './parquet.ts';

export interface LakeEvent {
  uuid: string;
  event: string;
  /** ISO UTC. */
  timestamp: string;
  distinct_id: string;
  /** The person's uuid when the compaction ran (PostHog's person_id), null when the distinct id has none. */
  person_id: string | null;
  /**
   * The person's properties as JSON text when the day was written (PostHog's persons-on-events
   * `person_properties`): what `person.properties.x` reads on the lake. Null without a person.
   */
  person_properties?: string | null;
  /** When the person was created (epoch milliseconds; PostHog's `person.created_at`). Null without a person. */
  person_created_at?: number | null;
  /** When the event was ingested (ISO UTC; PostHog's `created_at`). */
  created_at?: string;
  properties: Record<string, unknown>;
}

/**
 * Properties with a column of their own (PostHog's most used, and its materialized columns'
 * choice of type: text). A value that is not a string is kept as its JSON text, so that nothing
 * is lost and a comparison sees what the JSON column would give.
 */
export const PROPERTY_COLUMNS: Readonly<Record<string, string>> = {
  $session_id: 'session_id',
  $group_0: 'group_0',
  $group_1: 'group_1',
  $group_2: 'group_2',
  $group_3: 'group_3',
  $group_4: 'group_4',
  $browser: 'browser',
  $browser_version: 'browser_version',
  $os: 'os',
  $os_version: 'os_version',
  $device_type: 'device_type',
  $current_url: 'current_url',
  $host: 'host',
  $pathname: 'pathname',
  $referrer: 'referrer',
  $referring_domain: 'referring_domain',
  $lib: 'lib',
  $lib_version: 'lib_version',
  $screen_width: 'screen_width',
  $screen_height: 'screen_height',
  $geoip_country_code: 'geoip_country_code',
  $geoip_city_name: 'geoip_city_name',
  $pageview_id: 'pageview_id',
  utm_source: 'utm_source',
  utm_medium: 'utm_medium',
  utm_campaign: 'utm_campaign',
};

/** The lake table's columns in file order, with their Parquet (and Glue) types. */
export const LAKE_COLUMNS: readonly { name: string; type: 'STRING' | 'TIMESTAMP' }[] = [
  { name: 'uuid', type: 'STRING' },
  { name: 'event', type: 'STRING' },
  { name: 'timestamp', type: 'TIMESTAMP' },
  { name: 'distinct_id', type: 'STRING' },
  { name: 'person_id', type: 'STRING' },
  ...Object.values(PROPERTY_COLUMNS).map((name) => ({ name, type: 'STRING' as const })),
  { name: 'properties', type: 'STRING' },
  { name: 'person_properties', type: 'STRING' },
  { name: 'person_created_at', type: 'TIMESTAMP' },
  { name: 'created_at', type: 'TIMESTAMP' },
];

/** Columns whose values never repeat (an event's id; its other properties' JSON is written apart): plain, never a dictionary. */
const UNIQUE = new Set(['uuid']);

/** Columns every event has (LakeEvent's non-null fields, and the JSON of the rest): REQUIRED. The rest are OPTIONAL. */
const REQUIRED = new Set(['uuid', 'event', 'timestamp', 'distinct_id', 'properties']);

/** Min/max statistics where a reader skips row groups by them: the sort columns. */
const WITH_STATISTICS = new Set(['event', 'timestamp']);

/** Rows per file: a day past this is several files (bounded memory for the writer, parallel reads). */
export const FILE_ROWS = 1_000_000;
/** Rows per row group: the unit a reader skips with min/max statistics (event is sorted first). */
const ROW_GROUP_ROWS = 131_072;

const text = (v: unknown): string | null =>
  v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v);

/**
 * Epoch milliseconds of ISO UTC times: `YYYY-MM-DDTHH:MM:SS.sssZ` (how events store them) read from
 * their digits against the last day seen (a day's file is one day), anything else by Date.parse.
 * Date.parse took a sixth of the lake's row building.
 */
function isoMillis(): { parse: (iso: string) => number } {
  let day = '';
  let dayMs = Number.NaN;
  const digits = (iso: string, at: number, count: number): number => {
    let n = 0;
    for (let k = at; k < at + count; k += 1) {
      const d = iso.charCodeAt(k) - 48;
      if (d < 0 || d > 9) return -1;
      n = n * 10 + d;
    }
    return n;
  };
  return {
    parse(iso) {
      if (iso.length !== 24 || iso.charCodeAt(23) !== 90 /* Z */ || iso.charCodeAt(10) !== 84 /* T */)
        return Date.parse(iso);
      if (day === '' || !iso.startsWith(day)) {
        day = iso.slice(0, 11);
        dayMs = Date.parse(`${iso.slice(0, 10)}T00:00:00.000Z`);
      }
      const h = digits(iso, 11, 2);
      const m = digits(iso, 14, 2);
      const sec = digits(iso, 17, 2);
      const ms = digits(iso, 20, 3);
      const separators = iso[13] === ':' && iso[16] === ':' && iso[19] === '.';
      if (!separators || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59 || ms < 0 || Number.isNaN(dayMs))
        return Date.parse(iso);
      return dayMs + ((h * 60 + m) * 60 + sec) * 1000 + ms;
    },
  };
}

/**
 * One text column of a day's events, built in file order. Repeated texts are one entry (a Map) until
 * more than half the rows would have an entry of their own; from then on (and from the start for
 * columns of unique values) each row's text is written once, straight into Parquet's PLAIN bytes:
 * no row keeps a string alive and no page gathers bytes at random (the collector and such a gather
 * were much of the write's time in profiles).
 */
class TextBuilder {
  private ids: Int32Array | null;
  private entries: string[] = [];
  private map: Map<string, number> | null;
  private plain: PlainTextsBuilder | null;
  private readonly limit: number;

  constructor(
    private readonly rows: number,
    dictionary: boolean,
  ) {
    this.limit = rows / 2;
    this.ids = dictionary ? new Int32Array(rows).fill(-1) : null;
    this.map = dictionary ? new Map() : null;
    this.plain = dictionary ? null : new PlainTextsBuilder(rows);
  }

  /** Row `row`'s text: rows come in increasing order (a row not given is null). */
  add(row: number, text: string): void {
    const map = this.map;
    if (map === null) {
      this.plain!.add(row, text);
      return;
    }
    let id = map.get(text);
    if (id === undefined) {
      if (this.entries.length >= this.limit) {
        this.toPlain(row).add(row, text);
        return;
      }
      id = this.entries.length;
      map.set(text, id);
      this.entries.push(text);
    }
    this.ids![row] = id;
  }

  /** From a dictionary to plain bytes: the rows before `row` written again, each as its own text. */
  private toPlain(row: number): PlainTextsBuilder {
    const plain = new PlainTextsBuilder(this.rows);
    const ids = this.ids!;
    for (let r = 0; r < row; r += 1) if (ids[r]! >= 0) plain.add(r, this.entries[ids[r]!]!);
    this.plain = plain;
    this.ids = null;
    this.map = null;
    this.entries = [];
    return plain;
  }

  texts(): DictionaryTexts | PlainTexts {
    if (this.plain) return this.plain.texts();
    return { encoding: 'dictionary', entries: utf8Entries(this.entries), ids: this.ids! };
  }
}

/**
 * Row numbers of `events` sorted by (event, time): events grouped by name (names in code-unit order),
 * each group by its epoch milliseconds, ties in arrival order. A group's times are sorted as one
 * Float64Array of (time - first time) * n + row, natively: a comparator sort of the events took a
 * fifth of the write.
 */
function sortedRows(events: readonly LakeEvent[], ms: Float64Array): Int32Array {
  const n = events.length;
  const groups = new Map<string, number[]>();
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i += 1) {
    const name = events[i]!.event;
    const group = groups.get(name);
    if (group) group.push(i);
    else groups.set(name, [i]);
    const t = ms[i]!;
    if (t < min) min = t;
    if (t > max) max = t;
  }
  const names = [...groups.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const order = new Int32Array(n);
  let at = 0;
  // Keys stay exact integers below 2^53; a wider range (not one day's) sorts with a comparator.
  const packed = (max - min + 1) * n < Number.MAX_SAFE_INTEGER;
  for (const name of names) {
    const rows = groups.get(name)!;
    if (packed) {
      const keys = new Float64Array(rows.length);
      for (let k = 0; k < rows.length; k += 1) keys[k] = (ms[rows[k]!]! - min) * n + rows[k]!;
      keys.sort();
      for (let k = 0; k < keys.length; k += 1) order[at++] = keys[k]! % n;
    } else {
      rows.sort((a, b) => ms[a]! - ms[b]! || a - b);
      for (const row of rows) order[at++] = row;
    }
  }
  return order;
}

/**
 * The day's text columns, built in file order (`order`: the events' rows sorted): LAKE_COLUMNS' text
 * columns by name (a property column only once it has a value). The compactor hands a day's events
 * about in that order already (the store's, by shard, each by event name then time), so the visit is
 * close to sequential; events in random order cost more (about a third, in a scratch measurement of
 * one 333k-event day).
 */
function dayColumns(events: readonly LakeEvent[], order: Int32Array): Map<string, DictionaryTexts | PlainTexts> {
  const n = events.length;
  const builder = (name: string) => new TextBuilder(n, !UNIQUE.has(name));
  const uuid = builder('uuid');
  const event = builder('event');
  const distinctId = builder('distinct_id');
  const personId = builder('person_id');
  // Written part by part: the JSON of the properties without a column of their own.
  const properties = new PlainTextsBuilder(n);
  // Made once some event of the day has a person's properties.
  let personProperties: TextBuilder | null = null;
  // Every column's property key, to its builder once the day has a value for it (most have none on most days).
  const own = new Map<string, TextBuilder | null>(Object.keys(PROPERTY_COLUMNS).map((key) => [key, null]));
  // Keys of the other properties as JSON (with the colon), once each.
  const keysJson = new Map<string, string>();
  for (let i = 0; i < n; i += 1) {
    const e = events[order[i]!]!;
    uuid.add(i, e.uuid);
    event.add(i, e.event);
    distinctId.add(i, e.distinct_id);
    if (e.person_id !== null) personId.add(i, e.person_id);
    if (e.person_properties != null) (personProperties ??= builder('person_properties')).add(i, e.person_properties);
    // One pass over the event's own enumerable properties, in order (what JSON.stringify visits):
    // each goes to its own column or to the JSON of the rest, written as JSON.stringify writes an
    // object (what has no JSON left out), straight into the column's bytes without a string of its own.
    const props = e.properties;
    properties.open(i);
    let first = true;
    for (const key in props) {
      if (!Object.hasOwn(props, key)) continue;
      const value = props[key];
      let column = own.get(key);
      if (column !== undefined) {
        const t = text(value);
        if (t === null) continue;
        if (column === null) own.set(key, (column = builder(PROPERTY_COLUMNS[key]!)));
        column.add(i, t);
      } else {
        const json = JSON.stringify(value) as string | undefined;
        if (json === undefined) continue;
        let keyJson = keysJson.get(key);
        if (keyJson === undefined) keysJson.set(key, (keyJson = `${JSON.stringify(key)}:`));
        properties.write(first ? '{' : ',');
        properties.write(keyJson);
        properties.write(json);
        first = false;
      }
    }
    properties.write(first ? '{}' : '}');
    properties.close(i);
  }
  const columns = new Map<string, DictionaryTexts | PlainTexts>()
    .set('uuid', uuid.texts())
    .set('event', event.texts())
    .set('distinct_id', distinctId.texts())
    .set('person_id', personId.texts());
  for (const [key, column] of own) if (column) columns.set(PROPERTY_COLUMNS[key]!, column.texts());
  if (personProperties) columns.set('person_properties', personProperties.texts());
  return columns.set('properties', properties.texts());
}

/** Rows [start, end) of a column's texts. */
function rowsOf(texts: DictionaryTexts | PlainTexts, start: number, end: number): DictionaryTexts | PlainTexts {
  return texts.encoding === 'dictionary'
    ? { ...texts, ids: texts.ids.subarray(start, end) }
    : { ...texts, offsets: texts.offsets.subarray(start, end + 1) };
}

/** The day's Parquet files: rows sorted by (event, timestamp), FILE_ROWS at most each; none for no events. */
export function lakeFiles(events: LakeEvent[]): Uint8Array[] {
  const n = events.length;
  const times = isoMillis();
  const ms = new Float64Array(n);
  for (let i = 0; i < n; i += 1) {
    const t = times.parse(events[i]!.timestamp);
    if (!Number.isFinite(t)) throw new Error(`lake event ${events[i]!.uuid} has no valid timestamp`);
    ms[i] = t;
  }
  const order = sortedRows(events, ms);
  const sortedMs = new Float64Array(n);
  // NaN where the event has no person (or no ingestion time): a null of the OPTIONAL column.
  const personCreatedMs = new Float64Array(n);
  const createdMs = new Float64Array(n);
  const ingested = isoMillis();
  for (let j = 0; j < n; j += 1) {
    const row = order[j]!;
    const e = events[row]!;
    sortedMs[j] = ms[row]!;
    personCreatedMs[j] = e.person_created_at ?? Number.NaN;
    createdMs[j] = e.created_at === undefined ? Number.NaN : ingested.parse(e.created_at);
  }
  const timeColumns = new Map([
    ['timestamp', sortedMs],
    ['person_created_at', personCreatedMs],
    ['created_at', createdMs],
  ]);
  const texts = dayColumns(events, order);
  const files: Uint8Array[] = [];
  for (let start = 0; start < n; start += FILE_ROWS) {
    const end = Math.min(n, start + FILE_ROWS);
    const columns = LAKE_COLUMNS.map(({ name, type }): LakeParquetColumn => {
      const statistics = WITH_STATISTICS.has(name);
      const required = REQUIRED.has(name);
      if (type === 'TIMESTAMP')
        return { name, kind: 'millis', values: timeColumns.get(name)!.subarray(start, end), required, statistics };
      const column = texts.get(name);
      return {
        name,
        kind: 'text',
        values: column ? rowsOf(column, start, end) : null,
        required,
        statistics,
      };
    });
    files.push(writeLakeParquet(columns, end - start, ROW_GROUP_ROWS));
  }
  for (const column of texts.values()) if (column.encoding === 'plain') releasePlainTexts(column);
  return files;
}
