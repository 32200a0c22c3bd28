/**
 * A day's events as lake rows and Parquet files. Columns: the event's identity and time, its person,
 * `session_id` and `group_0..4` (from `$session_id` and `$group_N`), PostHog's frequently used
 * properties as their own columns, and every other property as JSON text in `properties`.
 * Names are lowercase letters, digits and underscores: what Athena (Glue) accepts.
 */
import { type ParquetColumn, textValues, utf8Views, writeParquet } from '../exports/files.ts';

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
];

/** Columns whose values never repeat (an event's id, its other properties' JSON): plain, no statistics. */
const UNIQUE = new Set(['uuid', 'properties']);

/** Columns every event has (LakeEvent's non-null fields, and the JSON of the rest): REQUIRED. */
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

const byEventThenTime = (a: LakeEvent, b: LakeEvent) =>
  a.event < b.event ? -1 : a.event > b.event ? 1 : a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0;

/** One file's columns, in LAKE_COLUMNS order. */
function fileColumns(events: LakeEvent[]): ParquetColumn[] {
  const n = events.length;
  const columns = new Map<string, unknown[]>();
  const col = (name: string) => {
    let values = columns.get(name);
    if (!values) columns.set(name, (values = new Array(n).fill(null)));
    return values;
  };
  const [uuid, event, timestamp, distinctId, personId, properties] = [
    'uuid',
    'event',
    'timestamp',
    'distinct_id',
    'person_id',
    'properties',
  ].map(col) as [unknown[], unknown[], unknown[], unknown[], unknown[], unknown[]];
  // Made only when some event of the file has a person's properties.
  // A property column's array is made when the file has a value for it: most have none in most files.
  const ownKeys = new Set(Object.keys(PROPERTY_COLUMNS));
  const times = isoMillis();
  for (let i = 0; i < n; i += 1) {
    const e = events[i]!;
    uuid[i] = e.uuid;
    event[i] = e.event;
    // Epoch milliseconds: the writer stores them as they are (a Date a row would cost more than the encoding).
    timestamp[i] = times.parse(e.timestamp);
    distinctId[i] = e.distinct_id;
    personId[i] = e.person_id;
    if (e.person_properties != null) col('person_properties')[i] = e.person_properties;
    // One pass over the event's properties: each goes to its own column or to the JSON of the rest,
    // written as JSON.stringify writes an object (same order; undefined left out), without building one.
    const props = e.properties;
    let rest = '';
    for (const key in props) {
      if (!Object.hasOwn(props, key)) continue;
      const value = props[key];
      if (ownKeys.has(key)) col(PROPERTY_COLUMNS[key]!)[i] = text(value);
      else if (value !== undefined) rest += `${rest ? ',' : ''}${JSON.stringify(key)}:${JSON.stringify(value)}`;
    }
    properties[i] = rest ? `{${rest}}` : '{}';
  }
  // One array of nulls for every column the file has no value for.
  const nulls: null[] = new Array(n).fill(null);
  return LAKE_COLUMNS.map(({ name, type }): ParquetColumn => {
    const statistics = WITH_STATISTICS.has(name);
    const required = REQUIRED.has(name);
    if (!columns.has(name)) return { name, type, data: nulls, unique: true };
    if (type !== 'STRING') return { name, type, data: col(name), statistics, required };
    const texts = col(name) as (string | null)[];
    // Never repeated: plain pages of bytes encoded in a few batches, without counting.
    if (UNIQUE.has(name)) return { name, type, data: utf8Views(texts), unique: true, required };
    // Other text: a dictionary where values repeat, else plain.
    const { data, repeated } = textValues(texts);
    return { name, type, data, repeated, unique: !repeated && !statistics, statistics, required };
  });
}

/** The day's Parquet files: rows sorted by (event, timestamp), FILE_ROWS at most each; none for no events. */
export function lakeFiles(events: LakeEvent[]): Uint8Array[] {
  const sorted = [...events].sort(byEventThenTime);
  const files: Uint8Array[] = [];
  for (let start = 0; start < sorted.length; start += FILE_ROWS) {
    const part = sorted.slice(start, start + FILE_ROWS);
    files.push(new Uint8Array(writeParquet(fileColumns(part), 'SNAPPY', Math.min(ROW_GROUP_ROWS, part.length))));
  }
  return files;
}
