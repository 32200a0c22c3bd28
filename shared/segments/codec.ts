import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';

/**
 * The columnar form of one (project, UTC day, event name)'s events that trends read instead of one
 * item per event. Each column is its own gzipped blob, stored as its own attribute of the segment
 * item, so a reader fetches (DynamoDB ProjectionExpression) and decodes only the columns its query
 * uses: the times always, the distinct ids when persons matter, and the properties it filters,
 * breaks down or aggregates on.
 *
 * Blobs, before gzip: `time` = n u32 LE offsets from `base` (ms); `dids` and each property column =
 * a dictionary, then n dictionary indexes (for properties, index + 1; 0 = the event does not have
 * the key). The column starts with a u32 LE word: its low 30 bits are a length, its two high bits flags.
 * - Dictionary: JSON (flag NUMBERS clear): the word holds the byte length of a JSON array, then that
 *   JSON; or numbers (flag NUMBERS set), when every value is a decimal m / 10^k with |m| < 2^31 and
 *   one k <= 6 (prices, durations, counts): the word holds the count, then u32 LE k and count i32 LE m.
 *   A numeric property of mostly distinct values made JSON.parse the largest cost of a query.
 * - Indexes, after zero padding to 4 bytes: u32 LE, or u16 LE (flag NARROW set) when the dictionary
 *   has fewer than 65,535 entries, halving what gunzip writes for most columns.
 * Segments written before the flags existed have both clear and read as they always did (a JSON
 * dictionary never reaches 1 GiB). Code from before the flags cannot read flagged segments: roll back
 * with the compacted days rebuilt (docs/operations.md).
 */
export interface SegmentRow {
  distinct_id: string;
  /** Epoch milliseconds. */
  t: number;
  properties: Record<string, unknown>;
}

export interface EncodedSegment {
  n: number;
  base: number;
  time: Uint8Array;
  dids: Uint8Array;
  /** Property key -> its column. */
  columns: Map<string, Uint8Array>;
}

/** What a reader wants decoded: these property keys, and the distinct ids or not. */
export interface Projection {
  properties: readonly string[];
  distinctIds: boolean;
}

const MAX_OFFSET = 0xffffffff;

const valueId = (v: unknown) => (typeof v === 'string' ? `s${v}` : `j${JSON.stringify(v)}`);

/**
 * The attribute name of a property's column. Property keys are arbitrary strings; long ones are hashed
 * so the name stays small. Readers compute the same name from the key they want.
 */
export function columnAttribute(key: string): string {
  return Buffer.byteLength(key) <= 200 ? `p:${key}` : `h:${createHash('sha256').update(key).digest('hex')}`;
}

const NUMBERS = 0x80000000;
const NARROW = 0x40000000;
const LENGTH_BITS = 0x3fffffff;
const MAX_SCALE = 6;

/**
 * The dictionary as decimals m / 10^k with one k for all (the smallest that fits), if every value is
 * a number that reads back exactly that way with |m| < 2^31; else undefined (the dictionary stays JSON).
 */
function scaledIntegers(values: readonly unknown[]): { scale: number; ints: Int32Array } | undefined {
  if (values.length === 0 || values.length > LENGTH_BITS) return undefined;
  for (const v of values) if (typeof v !== 'number') return undefined;
  const ints = new Int32Array(values.length);
  next: for (let scale = 0; scale <= MAX_SCALE; scale += 1) {
    const factor = 10 ** scale;
    for (let i = 0; i < values.length; i += 1) {
      const v = values[i] as number;
      const m = Math.round(v * factor);
      if (!(Math.abs(m) <= 0x7fffffff) || m / factor !== v) continue next;
      ints[i] = m;
    }
    return { scale, ints };
  }
  return undefined;
}

const bytesOf = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

function dictionaryColumn(dictionary: unknown[], indexes: Uint32Array): Uint8Array {
  const narrow = dictionary.length < 0xffff ? NARROW : 0;
  const numbers = scaledIntegers(dictionary);
  const head = numbers
    ? Buffer.concat([
        bytesOf(new Uint32Array([(NUMBERS | narrow | numbers.ints.length) >>> 0, numbers.scale])),
        bytesOf(numbers.ints),
      ])
    : jsonDictionary(dictionary, narrow);
  const at = align4(head.length);
  const stored = narrow ? Uint16Array.from(indexes) : indexes;
  const out = Buffer.alloc(at + stored.byteLength);
  head.copy(out, 0);
  bytesOf(stored).copy(out, at);
  return gzipSync(out);
}

function jsonDictionary(dictionary: unknown[], flags: number): Buffer {
  const json = Buffer.from(JSON.stringify(dictionary), 'utf8');
  if (json.length > LENGTH_BITS) throw new RangeError('a segment column dictionary must stay under 1 GiB');
  const out = Buffer.alloc(4 + json.length);
  out.writeUInt32LE((flags | json.length) >>> 0, 0);
  json.copy(out, 4);
  return out;
}

/**
 * gunzip into one buffer of the output's size, read from the gzip trailer (ISIZE, the size mod 2^32;
 * one byte more, or zlib allocates a second chunk to find the end): its default 16 KiB chunks would be
 * concatenated, copying every column once more.
 */
function inflate(blob: Uint8Array): Buffer {
  const size =
    blob.length >= 4 ? Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).readUInt32LE(blob.length - 4) : 0;
  // Bounded: a damaged trailer costs a few chunks, not a huge allocation.
  return gunzipSync(blob, { chunkSize: Math.min(Math.max(64, size + 1), 32 * 1024 * 1024) });
}

/** One dictionary column (a property's: indexes are value + 1, 0 = absent; or the distinct ids'). */
export function readDictionaryColumn(blob: Uint8Array, n: number): { dictionary: unknown[]; indexes: Uint32Array } {
  const raw = inflate(blob);
  const head = raw.readUInt32LE(0);
  const length = head & LENGTH_BITS;
  let dictionary: unknown[];
  let at: number;
  if (head & NUMBERS) {
    const stored = words(raw, 8, length);
    const ints = new Int32Array(stored.buffer, stored.byteOffset, length);
    const factor = 10 ** raw.readUInt32LE(4);
    dictionary = new Array<number>(length);
    for (let i = 0; i < length; i += 1) dictionary[i] = ints[i]! / factor;
    at = 8 + 4 * length;
  } else {
    dictionary = JSON.parse(raw.toString('utf8', 4, 4 + length)) as unknown[];
    at = align4(4 + length);
  }
  return { dictionary, indexes: head & NARROW ? halfWords(raw, at, n) : words(raw, at, n) };
}

/** u16 indexes widened to the u32 the engine reads (one typed copy, so its loops see one array type). */
function halfWords(raw: Buffer, offset: number, n: number): Uint32Array {
  if (raw.length < offset + 2 * n) throw new Error('truncated segment column');
  const start = raw.byteOffset + offset;
  const view =
    start % 2 === 0 ? new Uint16Array(raw.buffer, start, n) : new Uint16Array(raw.buffer.slice(start, start + 2 * n));
  return new Uint32Array(view);
}

/** A u32 view of `n` words at `offset`; gunzip's buffer may be misaligned, then it is copied once. */
function words(raw: Buffer, offset: number, n: number): Uint32Array {
  if (!littleEndian) throw new Error('segments are little-endian; this machine is not');
  const start = raw.byteOffset + offset;
  if (raw.length < offset + 4 * n) throw new Error('truncated segment column');
  return start % 4 === 0
    ? new Uint32Array(raw.buffer, start, n)
    : new Uint32Array(raw.buffer.slice(start, start + 4 * n));
}

/** Encodes rows whose times lie in [base, base + 2^32 ms). */
export function encodeSegment(rows: readonly SegmentRow[], base: number): EncodedSegment {
  const n = rows.length;
  const time = new Uint32Array(n);
  const dids: string[] = [];
  const didIndex = new Map<string, number>();
  const did = new Uint32Array(n);
  const columns = new Map<string, { values: unknown[]; index: Map<string, number>; indexes: Uint32Array }>();
  rows.forEach((row, i) => {
    const offset = row.t - base;
    if (!Number.isInteger(offset) || offset < 0 || offset > MAX_OFFSET)
      throw new RangeError(`event time ${row.t} is outside the segment's range`);
    time[i] = offset;
    let d = didIndex.get(row.distinct_id);
    if (d === undefined) didIndex.set(row.distinct_id, (d = dids.push(row.distinct_id) - 1));
    did[i] = d;
    for (const [key, value] of Object.entries(row.properties)) {
      if (value === undefined) continue;
      let column = columns.get(key);
      if (!column) columns.set(key, (column = { values: [], index: new Map(), indexes: new Uint32Array(n) }));
      const id = valueId(value);
      let v = column.index.get(id);
      if (v === undefined) column.index.set(id, (v = column.values.push(value) - 1));
      column.indexes[i] = v + 1;
    }
  });
  return {
    n,
    base,
    time: gzipSync(Buffer.from(time.buffer, time.byteOffset, time.byteLength)),
    dids: dictionaryColumn(dids, did),
    columns: new Map([...columns].map(([key, c]) => [key, dictionaryColumn(c.values, c.indexes)])),
  };
}

export function encodedSize(segment: EncodedSegment): number {
  let size = segment.time.length + segment.dids.length;
  for (const [key, blob] of segment.columns) size += blob.length + columnAttribute(key).length;
  return size;
}

/** A segment as a reader fetched it: only some columns (a column the reader did not fetch, or the segment lacks, is undefined). */
export type FetchedSegment = Omit<EncodedSegment, 'columns'> & { columns: Map<string, Uint8Array | undefined> };

/** One segment's projected columns, decoded: property indexes are value + 1 (0 = the event lacks the key). */
export interface DecodedColumns {
  n: number;
  base: number;
  /** Offsets from `base`, ms. */
  time: Uint32Array;
  dids: { dictionary: string[]; indexes: Uint32Array } | null;
  /** Only the projected keys the segment has. */
  columns: Map<string, { dictionary: unknown[]; indexes: Uint32Array }>;
}

/** The time column: offsets from `base`, ms. */
export const readTimes = (segment: FetchedSegment): Uint32Array => words(inflate(segment.time), 0, segment.n);

export function decodeColumns(segment: FetchedSegment, projection: Projection): DecodedColumns {
  const { n, base } = segment;
  const columns = new Map<string, { dictionary: unknown[]; indexes: Uint32Array }>();
  for (const key of projection.properties) {
    const blob = segment.columns.get(key);
    if (blob) columns.set(key, readDictionaryColumn(blob, n));
  }
  const dids = projection.distinctIds
    ? (readDictionaryColumn(segment.dids, n) as { dictionary: string[]; indexes: Uint32Array })
    : null;
  return { n, base, time: readTimes(segment), dids, columns };
}

/**
 * Calls `row` for each event with the projected columns decoded (a key the segment lacks reads as
 * absent on every row; without distinct ids, `distinct_id` is ''), in time order.
 */
export function forEachRow(
  segment: FetchedSegment,
  projection: Projection,
  row: (distinctId: string, t: number, properties: Record<string, unknown>) => void,
): void {
  const { n, base, time, dids, columns } = decodeColumns(segment, projection);
  const present = [...columns].map(([key, column]) => ({ key, ...column }));
  for (let i = 0; i < n; i += 1) {
    const properties: Record<string, unknown> = {};
    for (const { key, dictionary, indexes } of present) {
      const v = indexes[i]!;
      if (v === 0) continue;
      // A "__proto__" property is data (JSON.parse makes it an own property); plain assignment would set the prototype.
      if (key === '__proto__')
        Object.defineProperty(properties, key, {
          value: dictionary[v - 1],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else properties[key] = dictionary[v - 1];
    }
    row(dids ? dids.dictionary[dids.indexes[i]!]! : '', base + time[i]!, properties);
  }
}

export function decodeSegment(segment: FetchedSegment, projection: Projection): SegmentRow[] {
  const rows: SegmentRow[] = [];
  forEachRow(segment, projection, (distinct_id, t, properties) => rows.push({ distinct_id, t, properties }));
  return rows;
}

const align4 = (n: number) => (n + 3) & ~3;
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
