import * as zlib from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { recordsToCsv } from '../csv.ts';

export const FILE_FORMATS = ['JSONLines', 'Parquet', 'CSV'] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];
export type Compression = 'none' | 'gzip' | 'brotli' | 'snappy' | 'zstd' | 'lz4';

/**
 * zstd through node:zlib: Node 22.15 and later (Lambda's nodejs22.x), absent on older runtimes.
 * Read as a property so that the runtime decides, not the type definitions.
 */
const zstdCompress = (zlib as unknown as { zstdCompressSync?: (b: Uint8Array) => Buffer }).zstdCompressSync;

/**
 * Codecs per format, PostHog's lists (SUPPORTED_COMPRESSIONS) less what we cannot write: Parquet's
 * lz4 (LZ4_RAW) has no compressor in hyparquet-writer nor in node, and zstd only where node:zlib has it.
 * `none` (or null) writes uncompressed text; for Parquet it means snappy, the writer's and pyarrow's default.
 */
export const COMPRESSIONS: Record<FileFormat, readonly Compression[]> = {
  JSONLines: ['none', 'gzip', 'brotli'],
  CSV: ['none', 'gzip', 'brotli'],
  Parquet: ['none', 'snappy', 'gzip', 'brotli', ...(zstdCompress ? (['zstd'] as const) : [])],
};
/** What PostHog accepts for Parquet: a codec here and not in COMPRESSIONS.Parquet is refused by name. */
export const POSTHOG_PARQUET_COMPRESSIONS: readonly Compression[] = ['zstd', 'lz4', 'snappy', 'gzip', 'brotli'];

export interface EncodedFile {
  body: Buffer;
  extension: string;
  contentType: string;
  records: number;
}

/** One file's bytes: JSON Lines (nested values stay objects), CSV (nested values as JSON) or typed Parquet. */
export function encodeRows(
  rows: Record<string, unknown>[],
  columns: string[],
  format: FileFormat,
  compression: Compression,
): EncodedFile {
  if (format === 'Parquet') return encodeParquet(rows, columns, compression);
  const text =
    format === 'JSONLines'
      ? rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : '')
      : recordsToCsv(rows, columns);
  const raw = Buffer.from(text, 'utf8');
  const extension = fileExtension(format, compression);
  const contentType = format === 'JSONLines' ? 'application/jsonl' : 'text/csv';
  const records = rows.length;
  if (compression === 'gzip') return { body: zlib.gzipSync(raw), extension, contentType, records };
  if (compression === 'brotli') return { body: zlib.brotliCompressSync(raw), extension, contentType, records };
  return { body: raw, extension, contentType, records };
}

/** Columns whose ISO strings are written as Parquet timestamps (the events and persons schemas' times). */
const TIMESTAMP_COLUMNS = new Set(['timestamp', 'created_at', '_inserted_at', 'updated_at']);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Columns whose canonical uuid strings are written as 16-byte UUIDs (the events and persons schemas' ids). */
const UUID_COLUMNS = new Set(['uuid', 'person_id']);
/** Lowercase and dashed only: what a reader prints a UUID as, so that it reads back the very text exported. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type ParquetType = 'STRING' | 'JSON' | 'TIMESTAMP' | 'INT64' | 'DOUBLE' | 'BOOLEAN' | 'UUID';

/**
 * A column's Parquet type from its values: timestamps as timestamps, uuids as UUIDs (16 bytes where
 * the text takes 36), integers as INT64, other numbers as DOUBLE, booleans as BOOLEAN, objects and
 * arrays as JSON text; anything mixed is a string column.
 */
function columnType(name: string, values: unknown[]): ParquetType {
  const present = values.filter((v) => v !== null && v !== undefined);
  if (present.length === 0) return 'STRING';
  if (TIMESTAMP_COLUMNS.has(name) && present.every((v) => typeof v === 'string' && ISO.test(v))) return 'TIMESTAMP';
  if (UUID_COLUMNS.has(name) && present.every((v) => typeof v === 'string' && CANONICAL_UUID.test(v))) return 'UUID';
  if (present.every((v) => typeof v === 'number' && Number.isFinite(v)))
    return present.every((v) => Number.isSafeInteger(v)) ? 'INT64' : 'DOUBLE';
  if (present.every((v) => typeof v === 'boolean')) return 'BOOLEAN';
  if (present.every((v) => typeof v === 'object')) return 'JSON';
  return 'STRING';
}

/** The 16 bytes of a canonical uuid string. */
export const uuidBytes = (uuid: string): Uint8Array => Buffer.from(uuid.replaceAll('-', ''), 'hex');

/** Values and whether they repeat, as a Parquet column wants them (columnType's type). */
function columnData(type: ParquetType, values: unknown[]): { data: unknown[]; repeated?: boolean } {
  if (type === 'STRING' || type === 'JSON' || type === 'UUID') return textColumn(type, values);
  return {
    data: values.map((v) => {
      if (v === null || v === undefined) return null;
      // Epoch milliseconds, not a Date: the writer's statistics convert a Date one array at a time.
      if (type === 'TIMESTAMP') return Date.parse(v as string);
      if (type === 'INT64') return BigInt(v as number);
      return v;
    }),
  };
}

/**
 * Text columns (uuids included), counted by their text: a column whose values repeat (at most half
 * of them distinct: distinct ids, person ids, properties of a few shapes) is dictionary-encoded,
 * else plain. The writer's own guess samples 1,000 values, and so sees nearly all of them distinct
 * in a column of a few thousand values each repeated. Equal values become one object, which the
 * writer then converts (JSON text, UUID bytes) once.
 */
function textColumn(type: 'STRING' | 'JSON' | 'UUID', values: unknown[]): { data: unknown[]; repeated: boolean } {
  const seen = new Map<string, unknown>();
  let present = 0;
  const data = values.map((v) => {
    if (v === null || v === undefined) return null;
    present += 1;
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    const first = seen.get(text);
    if (first !== undefined) return first;
    const value = type === 'UUID' ? uuidBytes(text) : type === 'STRING' ? text : v;
    seen.set(text, value);
    return value;
  });
  const repeated = present > 1 && seen.size * 2 <= present;
  return { data: type === 'STRING' && !repeated ? utf8Views(data as (string | null)[]) : data, repeated };
}

/** Texts per utf8Views call: one joined string of them stays far below V8's string length limit. */
const VIEW_CHUNK = 16_384;

/**
 * Texts as UTF-8 byte views over a few shared buffers, for a plain column: the writer takes the
 * bytes as they are, where it would otherwise encode (and allocate) every value on its own.
 */
function utf8Views(texts: readonly (string | null)[]): (Uint8Array | null)[] {
  const out: (Uint8Array | null)[] = new Array(texts.length);
  for (let start = 0; start < texts.length; start += VIEW_CHUNK) {
    const end = Math.min(texts.length, start + VIEW_CHUNK);
    const present: string[] = [];
    for (let i = start; i < end; i += 1) if (texts[i] !== null) present.push(texts[i]!);
    const joined = present.join('');
    const buffer = Buffer.from(joined, 'utf8');
    // subarray of a plain Uint8Array: a Buffer's (or the three-argument constructor) costs twice as much.
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    // As many bytes as UTF-16 units only when every character is ASCII: then lengths need no counting.
    const ascii = bytes.length === joined.length;
    let offset = 0;
    for (let i = start; i < end; i += 1) {
      const text = texts[i];
      if (text === null || text === undefined) {
        out[i] = null;
        continue;
      }
      const length = ascii ? text.length : Buffer.byteLength(text, 'utf8');
      out[i] = bytes.subarray(offset, offset + length);
      offset += length;
    }
  }
  return out;
}

const toBytes = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
/** Compressors for the codecs hyparquet-writer does not carry itself (it has snappy). */
const COMPRESSORS = {
  GZIP: (input: Uint8Array) => toBytes(zlib.gzipSync(input)),
  // Quality 5, not brotli's default 11: 11 took 3 minutes for a 100k-event window; 5 keeps most of the gain.
  BROTLI: (input: Uint8Array) =>
    toBytes(zlib.brotliCompressSync(input, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } })),
  ...(zstdCompress ? { ZSTD: (input: Uint8Array) => toBytes(zstdCompress(input)) } : {}),
};
const CODECS = { none: 'SNAPPY', snappy: 'SNAPPY', gzip: 'GZIP', brotli: 'BROTLI', zstd: 'ZSTD' } as const;

export interface ParquetColumn {
  name: string;
  type: ParquetType;
  /** One value a row, converted as columnData does (Date, bigint, string, number, boolean or null); a TIMESTAMP may also take epoch milliseconds. */
  data: unknown[];
  /**
   * PLAIN without min/max statistics: for columns of (nearly) unique values (uuids, JSON text), where a
   * dictionary is never kept and statistics skip nothing, and both cost most of the writer's time.
   */
  unique?: boolean;
  /** Dictionary-encoded whatever the writer's sample says: values known to repeat. */
  repeated?: boolean;
  /** Min/max statistics (default: yes, unless `unique`). */
  statistics?: boolean;
  /** Never null (REQUIRED): no definition levels to compute and write. */
  required?: boolean;
}

/**
 * The batch exports' Parquet writer (the lake has its own for its few shapes: shared/lake/parquet.ts): typed columns, one codec, row groups of
 * `rowGroupSize` rows. Times and integers are delta-encoded: close values take a few bits a row where plain takes 8 bytes.
 */
export function writeParquet(
  columns: ParquetColumn[],
  codec: (typeof CODECS)[keyof typeof CODECS],
  rowGroupSize: number,
): ArrayBuffer {
  return parquetWriteBuffer({
    columnData: columns.map(({ name, type, data, unique, repeated, statistics, required }) => {
      const encoding =
        type === 'TIMESTAMP' || type === 'INT64'
          ? ('DELTA_BINARY_PACKED' as const)
          : unique
            ? ('PLAIN' as const)
            : repeated
              ? ('RLE_DICTIONARY' as const)
              : undefined;
      return {
        name,
        type,
        data: data as never,
        ...(encoding ? { encoding } : {}),
        ...(unique || statistics === false ? { statistics: false } : {}),
        ...(required ? { nullable: false } : {}),
      };
    }),
    codec,
    compressors: COMPRESSORS,
    rowGroupSize,
  });
}

function encodeParquet(rows: Record<string, unknown>[], columns: string[], compression: Compression): EncodedFile {
  const codec = CODECS[compression as keyof typeof CODECS];
  if (!codec || !COMPRESSIONS.Parquet.includes(compression))
    throw new Error(`Parquet compression ${compression} is not available in this runtime`);
  const buffer = writeParquet(
    columns.map((name) => {
      const values = rows.map((r) => r[name]);
      const type = columnType(name, values);
      const { data, repeated } = columnData(type, values);
      // Values that (nearly) never repeat: plain, without the statistics that would skip nothing.
      const unique = repeated === false;
      return { name, type, data, unique, repeated };
    }),
    codec,
    // One row group per file: the files are bounded by max_file_size_mb, and readers get whole columns.
    Math.max(1, rows.length),
  );
  return {
    body: Buffer.from(buffer),
    extension: fileExtension('Parquet', compression),
    contentType: 'application/vnd.apache.parquet',
    records: rows.length,
  };
}

/**
 * The window's rows as files of at most `maxBytes` each (one file when unbounded). Rows are grouped by
 * their JSON size (never smaller than their compressed encoding in practice), then a file that still
 * comes out too big is halved until it fits or holds one row.
 */
export function encodeFiles(
  rows: Record<string, unknown>[],
  columns: string[],
  format: FileFormat,
  compression: Compression,
  maxBytes?: number,
): EncodedFile[] {
  if (!maxBytes || rows.length === 0) return [encodeRows(rows, columns, format, compression)];
  const groups: Record<string, unknown>[][] = [];
  let group: Record<string, unknown>[] = [];
  let size = 0;
  for (const row of rows) {
    const rowSize = Buffer.byteLength(JSON.stringify(row)) + 1;
    if (group.length && size + rowSize > maxBytes) {
      groups.push(group);
      group = [];
      size = 0;
    }
    group.push(row);
    size += rowSize;
  }
  groups.push(group);
  const withinSize = (g: Record<string, unknown>[]): EncodedFile[] => {
    const file = encodeRows(g, columns, format, compression);
    if (file.body.length <= maxBytes || g.length === 1) return [file];
    const half = Math.ceil(g.length / 2);
    return [...withinSize(g.slice(0, half)), ...withinSize(g.slice(half))];
  };
  return groups.flatMap(withinSize);
}

/** What a batch export exports: the table `{table}` names. */
export const EXPORT_MODELS = ['events', 'persons'] as const;

/** A window end's longest ISO form: JS dates end at +275760-09-13 (27 characters), years past 9999 take six digits. */
const LONGEST_ISO = new Date(8.64e15).toISOString();

/** PostHog's prefix variables, from the window's start (UTC), each with the longest text it can render. */
const PREFIX_VARIABLES: Record<
  string,
  { value: (w: { start: Date; end: Date }, table: string) => string; longest: string }
> = {
  year: { value: (w) => w.start.toISOString().slice(0, 4), longest: '9999' },
  month: { value: (w) => w.start.toISOString().slice(5, 7), longest: '12' },
  day: { value: (w) => w.start.toISOString().slice(8, 10), longest: '31' },
  hour: { value: (w) => w.start.toISOString().slice(11, 13), longest: '23' },
  minute: { value: (w) => w.start.toISOString().slice(14, 16), longest: '59' },
  second: { value: (w) => w.start.toISOString().slice(17, 19), longest: '59' },
  table: { value: (_w, table) => table, longest: EXPORT_MODELS.reduce((a, b) => (b.length > a.length ? b : a)) },
  data_interval_start: { value: (w) => w.start.toISOString(), longest: LONGEST_ISO },
  data_interval_end: { value: (w) => w.end.toISOString(), longest: LONGEST_ISO },
};
export const PREFIX_PLACEHOLDERS = Object.keys(PREFIX_VARIABLES).map((name) => `{${name}}`);

export function renderPrefix(prefix: string, window: { start: Date; end: Date }, table: string): string {
  // Own keys only: `{constructor}` or `{toString}` stay literal rather than expanding to Object.prototype's functions.
  return prefix.replace(/\{(\w+)\}/g, (all, name: string) =>
    Object.hasOwn(PREFIX_VARIABLES, name) ? PREFIX_VARIABLES[name]!.value(window, table) : all,
  );
}

/** `{...}` groups of a prefix that name no variable (PostHog's prefixes know only PREFIX_PLACEHOLDERS). */
export function unknownPlaceholders(prefix: string): string[] {
  const found = prefix.match(/\{[^{}]*\}/g) ?? [];
  return [...new Set(found.filter((p) => !PREFIX_PLACEHOLDERS.includes(p)))];
}

/** S3's limit on an object key, in UTF-8 bytes. */
export const MAX_S3_KEY_BYTES = 1024;

/**
 * A window split into files numbers them from 0; seven digits are reserved. encodeFiles fills each
 * file to max_file_size_mb (at least 1 MB) before starting the next, halving one only when its encoding
 * outgrows its JSON, and a window is held in memory whole (at most a Lambda's 10,240 MB): thousands of
 * files, not 10^7.
 */
const LONGEST_FILE_NUMBER = '-9999999';

/** A file's extension: the format's, then the compression's (Parquet compresses inside the file). */
export function fileExtension(format: FileFormat, compression: Compression): string {
  if (format === 'Parquet') return 'parquet';
  const base = format === 'JSONLines' ? 'jsonl' : 'csv';
  return compression === 'gzip' ? `${base}.gz` : compression === 'brotli' ? `${base}.br` : base;
}

const LONGEST_DATA_EXTENSION = FILE_FORMATS.flatMap((f) => COMPRESSIONS[f].map((c) => fileExtension(f, c))).reduce(
  (a, b) => (b.length > a.length ? b : a),
);

/** The longest file name objectKey can give a window (a data file or its manifest), in bytes (all ASCII). */
export const MAX_FILE_NAME_BYTES = Math.max(
  `${LONGEST_ISO}-${LONGEST_ISO}${LONGEST_FILE_NUMBER}.${LONGEST_DATA_EXTENSION}`.length,
  `${LONGEST_ISO}-${LONGEST_ISO}.manifest.json`.length,
);

function fileName(start: Date, end: Date, extension: string, fileNumber?: number): string {
  const part = fileNumber === undefined ? '' : `-${fileNumber}`;
  return `${start.toISOString()}-${end.toISOString()}${part}.${extension}`;
}

/** The longest key, in UTF-8 bytes, any window's file under this prefix can have (each placeholder at its longest). */
export function longestKeyBytes(prefix: string): number {
  const longest = prefix
    .replace(/\{(\w+)\}/g, (all, name: string) =>
      Object.hasOwn(PREFIX_VARIABLES, name) ? PREFIX_VARIABLES[name]!.longest : all,
    )
    .replace(/\/+$/, '');
  return Buffer.byteLength(longest) + (longest ? 1 : 0) + MAX_FILE_NAME_BYTES;
}

/**
 * Where a window's file goes. Deterministic: a re-run (retry, backfill over an exported window)
 * writes the same key and so replaces its own file instead of adding a duplicate. A window split into
 * several files numbers them from 0 (`-0`, `-1`, ...), as PostHog does with max_file_size_mb.
 */
export function objectKey(
  prefix: string,
  window: { start: Date; end: Date },
  table: string,
  extension: string,
  fileNumber?: number,
): string {
  const base = renderPrefix(prefix, window, table).replace(/\/+$/, '');
  const name = fileName(window.start, window.end, extension, fileNumber);
  return base ? `${base}/${name}` : name;
}

/** The window's manifest: beside its files, written after all of them. */
export function manifestKey(prefix: string, window: { start: Date; end: Date }, table: string): string {
  return objectKey(prefix, window, table, 'manifest.json');
}
