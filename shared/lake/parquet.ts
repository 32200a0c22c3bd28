/**
 * The lake's Parquet encoder: the few shapes the lake writes (shared/lake/rows.ts), and nothing else.
 * Text columns (BYTE_ARRAY UTF8, REQUIRED or OPTIONAL) as a dictionary where values repeat, else
 * PLAIN; millisecond times (INT64 TIMESTAMP_MILLIS, REQUIRED or OPTIONAL) DELTA_BINARY_PACKED; a column with no
 * value as one run of null definition levels. One V1 data page per column chunk, snappy-compressed
 * (shared/lake/snappy.ts), min/max statistics where asked, a thrift compact footer. The schema is the
 * one hyparquet-writer gave these types (converted types, no logical types), as Glue declares it.
 * hyparquet-writer, general (any type, nesting, codec), spent most of the lake's write time on
 * per-value work this file does not need: per-row conversions, levels for columns with no value,
 * text encoded value by value into growing buffers (batch exports still use it: shared/exports/files.ts).
 */
import { snappyBound, snappyCompress } from './snappy.ts';

export interface TextColumn {
  name: string;
  kind: 'text';
  /** The rows' texts; null for a column with no value in any row. */
  values: DictionaryTexts | PlainTexts | null;
  /** Never null (REQUIRED). */
  required: boolean;
  /** Min/max (and null count) in the column chunk's metadata. */
  statistics: boolean;
}

/**
 * Texts that repeat: each distinct text once, and each row's entry (-1 for null). Dictionary-encoded
 * where a row group's values repeat (at most half distinct); PLAIN otherwise.
 */
export interface DictionaryTexts {
  encoding: 'dictionary';
  entries: Utf8Entries;
  ids: Int32Array;
}

/**
 * Texts that do not repeat (an event's id, its other properties' JSON), already as PLAIN BYTE_ARRAY
 * values (a 4-byte length, then UTF-8) in row order: row r's is bytes[offsets[r], offsets[r + 1]),
 * empty for null. A row group's page body is one slice.
 */
export interface PlainTexts {
  encoding: 'plain';
  bytes: Buffer;
  /** rows + 1 offsets. */
  offsets: Int32Array;
}

export interface MillisColumn {
  name: string;
  kind: 'millis';
  /** Epoch milliseconds, one a row; NaN for a null (only where not required). */
  values: Float64Array;
  /** Never null (REQUIRED). */
  required: boolean;
  statistics: boolean;
}

export type LakeParquetColumn = TextColumn | MillisColumn;

// Parquet's enums (parquet.thrift).
const BYTE_ARRAY = 6;
const INT64 = 2;
const REQUIRED = 0;
const OPTIONAL = 1;
const UTF8 = 0;
const TIMESTAMP_MILLIS = 9;
const PLAIN = 0;
const RLE = 3;
const DELTA_BINARY_PACKED = 5;
const RLE_DICTIONARY = 8;
const DATA_PAGE = 0;
const DICTIONARY_PAGE = 2;
const SNAPPY = 1;

// Thrift compact protocol field types.
const T_I32 = 5;
const T_I64 = 6;
const T_BINARY = 8;
const T_LIST = 9;
const T_STRUCT = 12;

/** Thrift compact protocol, writing only: the footer and page headers (small, so plain number arrays). */
class Thrift {
  readonly out: number[] = [];
  private last: number[] = [0];

  private varint(n: number): void {
    // Doubles, not 32-bit operators: i64 fields (offsets, sizes, times) pass 2^31.
    while (n >= 128) {
      this.out.push((n % 128) | 128);
      n = Math.floor(n / 128);
    }
    this.out.push(n);
  }
  private zigzag(n: number): void {
    this.varint(n >= 0 ? n * 2 : -n * 2 - 1);
  }
  private field(id: number, type: number): void {
    const delta = id - this.last[this.last.length - 1]!;
    if (delta > 0 && delta <= 15) this.out.push((delta << 4) | type);
    else {
      this.out.push(type);
      this.zigzag(id);
    }
    this.last[this.last.length - 1] = id;
  }
  i32(id: number, n: number): this {
    this.field(id, T_I32);
    this.zigzag(n);
    return this;
  }
  i64(id: number, n: number): this {
    this.field(id, T_I64);
    this.zigzag(n);
    return this;
  }
  binary(id: number, bytes: Uint8Array): this {
    this.field(id, T_BINARY);
    this.varint(bytes.length);
    for (const b of bytes) this.out.push(b);
    return this;
  }
  string(id: number, s: string): this {
    return this.binary(id, Buffer.from(s, 'utf8'));
  }
  struct(id: number, body: (t: this) => void): this {
    this.field(id, T_STRUCT);
    return this.inner(body);
  }
  private inner(body: (t: this) => void): this {
    this.last.push(0);
    body(this);
    this.out.push(0);
    this.last.pop();
    return this;
  }
  private listHeader(id: number, size: number, type: number): void {
    this.field(id, T_LIST);
    if (size < 15) this.out.push((size << 4) | type);
    else {
      this.out.push(0xf0 | type);
      this.varint(size);
    }
  }
  structs<T>(id: number, items: readonly T[], body: (t: this, item: T) => void): this {
    this.listHeader(id, items.length, T_STRUCT);
    for (const item of items) this.inner((t) => body(t, item));
    return this;
  }
  i32s(id: number, items: readonly number[]): this {
    this.listHeader(id, items.length, T_I32);
    for (const n of items) this.zigzag(n);
    return this;
  }
  strings(id: number, items: readonly string[]): this {
    this.listHeader(id, items.length, T_BINARY);
    for (const s of items) {
      const bytes = Buffer.from(s, 'utf8');
      this.varint(bytes.length);
      for (const b of bytes) this.out.push(b);
    }
    return this;
  }
  /** The bytes of a top-level struct: its fields and the stop byte. */
  end(): Uint8Array {
    this.out.push(0);
    return Uint8Array.from(this.out);
  }
}

/**
 * A growable byte buffer, reused from page to page (a page is compressed before the next is built):
 * a Buffer for its native UTF-8 writes.
 */
class Bytes {
  at = 0;
  constructor(public buf: Buffer = Buffer.allocUnsafe(1 << 16)) {}
  reset(): void {
    this.at = 0;
  }
  ensure(more: number): void {
    if (this.at + more <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + more));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }
  byte(b: number): void {
    this.buf[this.at++] = b;
  }
  u32(n: number): void {
    this.buf.writeUInt32LE(n, this.at);
    this.at += 4;
  }
  varint(n: number): void {
    while (n >= 128) {
      this.buf[this.at++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    this.buf[this.at++] = n;
  }
  zigzag(n: number): void {
    this.varint(n >= 0 ? n * 2 : -n * 2 - 1);
  }
  append(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.at);
    this.at += bytes.length;
  }
  view(): Uint8Array {
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.at);
  }
}

/**
 * `width` bits of each of `count` values (LSB first), from values[from]: Parquet's bit packing. Values
 * past `end` are written as 0 (the padding of a last group). Widths up to 32.
 */
function bitPack(out: Bytes, values: ArrayLike<number>, from: number, count: number, end: number, width: number): void {
  out.ensure(Math.ceil((count * width) / 8) + 8);
  const buf = out.buf;
  let o = out.at;
  let acc = 0;
  let bits = 0;
  for (let k = 0; k < count; k += 1) {
    let v = from + k < end ? values[from + k]! : 0;
    let rest = width;
    while (rest > 0) {
      const take = Math.min(8 - bits, rest);
      acc |= (v & ((1 << take) - 1)) << bits;
      bits += take;
      rest -= take;
      v >>>= take;
      if (bits === 8) {
        buf[o++] = acc;
        acc = 0;
        bits = 0;
      }
    }
  }
  if (bits > 0) buf[o++] = acc;
  out.at = o;
}

/** True when the 8 values from `at` are all equal (and all present). */
function runOf8(values: ArrayLike<number>, at: number, end: number): boolean {
  if (at + 8 > end) return false;
  const v = values[at];
  for (let k = 1; k < 8; k += 1) if (values[at + k] !== v) return false;
  return true;
}

/**
 * values[from, end) in Parquet's RLE/bit-packed hybrid at `width` bits (1..24): runs of 8 or more equal
 * values as one run (a column's nulls, a sorted column's repeats), the rest bit-packed in groups of 8.
 */
function hybrid(out: Bytes, values: ArrayLike<number>, from: number, end: number, width: number): void {
  const valueBytes = Math.ceil(width / 8);
  let i = from;
  while (i < end) {
    const v = values[i]!;
    let run = i + 1;
    while (run < end && values[run] === v) run += 1;
    if (run - i >= 8) {
      out.ensure(16);
      out.varint((run - i) * 2);
      for (let b = 0; b < valueBytes; b += 1) out.byte((v >>> (8 * b)) & 255);
      i = run;
      continue;
    }
    // Groups of 8 until a run of 8 starts on a group boundary (or the values end: the last group is padded).
    const start = i;
    do i += 8;
    while (i < end && !runOf8(values, i, end));
    const groups = (i - start) / 8;
    out.ensure(16);
    out.varint(groups * 2 + 1);
    bitPack(out, values, start, groups * 8, end, width);
  }
}

const bitWidth = (max: number): number => (max <= 1 ? 1 : 32 - Math.clz32(max - 1));

/** ULEB/zigzag of a whole number of any size a double holds exactly (times' deltas can pass 2^31). */
const zigzagDouble = (n: number) => (n >= 0 ? n * 2 : -n * 2 - 1);

const BLOCK = 128;
const MINIBLOCKS = 4;
const MINIBLOCK = BLOCK / MINIBLOCKS;
const TWO_32 = 2 ** 32;

/** values[from, end) DELTA_BINARY_PACKED (blocks of 128, 4 miniblocks), whole numbers up to 2^52. */
function deltaBinaryPacked(out: Bytes, values: Float64Array, from: number, end: number): void {
  const count = end - from;
  out.ensure(32);
  out.varint(BLOCK);
  out.varint(MINIBLOCKS);
  out.varint(count);
  out.varint(zigzagDouble(count ? values[from]! : 0));
  const deltas = new Float64Array(BLOCK);
  const lo = new Uint32Array(MINIBLOCK);
  const hi = new Uint32Array(MINIBLOCK);
  for (let at = from + 1; at < end; at += BLOCK) {
    const n = Math.min(BLOCK, end - at);
    let min = Number.POSITIVE_INFINITY;
    for (let k = 0; k < n; k += 1) {
      const d = values[at + k]! - values[at + k - 1]!;
      deltas[k] = d;
      if (d < min) min = d;
    }
    out.ensure(16);
    out.varint(zigzagDouble(min));
    const widthsAt = out.at;
    out.at += MINIBLOCKS;
    for (let m = 0; m < MINIBLOCKS; m += 1) {
      const first = m * MINIBLOCK;
      if (first >= n) {
        // Miniblocks past the values: a width of 0 and no bytes.
        out.buf[widthsAt + m] = 0;
        continue;
      }
      const last = Math.min(n, first + MINIBLOCK);
      let max = 0;
      for (let k = first; k < last; k += 1) {
        const v = deltas[k]! - min;
        if (v > max) max = v;
      }
      const width =
        max === 0 ? 0 : max < TWO_32 ? 32 - Math.clz32(max) : 32 + (32 - Math.clz32(Math.floor(max / TWO_32)));
      out.buf[widthsAt + m] = width;
      if (width === 0) continue;
      for (let k = 0; k < MINIBLOCK; k += 1) {
        const v = first + k < last ? deltas[first + k]! - min : 0;
        lo[k] = v % TWO_32;
        hi[k] = Math.floor(v / TWO_32);
      }
      if (width <= 32) bitPack(out, lo, 0, MINIBLOCK, MINIBLOCK, width);
      // Widths past 32: deltas of more than 49 days.
      else packWide(out, lo, hi, width);
    }
  }
}

/** 32 values of `width` (33..64) bits: low word then the high bits, LSB first, bit by bit. */
function packWide(out: Bytes, lo: Uint32Array, hi: Uint32Array, width: number): void {
  out.ensure(MINIBLOCK * 8 + 8);
  let acc = 0;
  let bits = 0;
  const push = (bit: number) => {
    acc |= bit << bits;
    bits += 1;
    if (bits === 8) {
      out.byte(acc);
      acc = 0;
      bits = 0;
    }
  };
  for (let k = 0; k < MINIBLOCK; k += 1) {
    for (let b = 0; b < 32; b += 1) push((lo[k]! >>> b) & 1);
    for (let b = 0; b < width - 32; b += 1) push((hi[k]! >>> b) & 1);
  }
}

/** What a column chunk's metadata says of its pages (written to the file as they are made). */
interface Chunk {
  encodings: number[];
  uncompressed: number;
  compressed: number;
  dictionaryPage: boolean;
  /** Bytes of the dictionary page (header included): the data page's offset past the chunk's start. */
  dictionaryBytes: number;
  /** Min/max (absent when every value is null) and the null count. */
  stats?: { min?: Uint8Array; max?: Uint8Array; nulls: number };
}

/**
 * A page, appended to the file: its header (thrift compact: type, sizes, then the kind's own header)
 * then its bytes, snappy-compressed.
 */
function page(chunk: Chunk, body: Uint8Array, type: number, header: (t: Thrift) => void): number {
  compressedPage.reset();
  compressedPage.ensure(snappyBound(body.length));
  const compressed = snappyCompress(body, compressedPage.buf);
  const t = new Thrift().i32(1, type).i32(2, body.length).i32(3, compressed.length);
  header(t);
  const head = t.end();
  file.append(head);
  file.append(compressed);
  chunk.uncompressed += head.length + body.length;
  chunk.compressed += head.length + compressed.length;
  return head.length + compressed.length;
}

/*
 * Buffers reused from page to page and file to file (the writer is synchronous). Fresh ones for each
 * day (tens of MB) set off full collections of the whole heap, the day's events included, as external
 * memory pressure: two a 333k-event day, 90-150 ms each (docs/benchmarks.md, stop 34).
 */
const scratch = new Bytes();
// Empty until the first file: loading the encoder (the SQL printers import rows.ts) allocates nothing.
const compressedPage = new Bytes(Buffer.alloc(0));
/** The file being written: its pages as they are made, then the footer; copied out whole. */
const file = new Bytes(Buffer.alloc(0));
const levels = { buf: new Uint8Array(0) };

/** Texts encoded to UTF-8 once: entry i is bytes[offsets[i], offsets[i + 1]). */
export interface Utf8Entries {
  bytes: Buffer;
  /** Int32, not doubles: a double index makes every byte access a slow path. */
  offsets: Int32Array;
}

/** A column's texts past this many bytes are refused (Int32 offsets): a day's file is far smaller. */
const MAX_ENTRY_BYTES = 2 ** 31 - 1;

/** Texts per joined string: one stays far below V8's string length limit. */
const JOIN = 16_384;

/**
 * `texts` as Utf8Entries: joined a few thousand at a time and encoded per
 * joined string, which costs a fraction of encoding them one by one; lengths are the strings' own
 * when the joined text is ASCII.
 */
export function utf8Entries(texts: readonly string[]): Utf8Entries {
  const out = new Bytes();
  const offsets = new Int32Array(texts.length + 1);
  for (let start = 0; start < texts.length; start += JOIN) {
    const end = Math.min(texts.length, start + JOIN);
    let joined = '';
    const part: string[] = new Array(end - start);
    for (let i = start; i < end; i += 1) part[i - start] = texts[i]!;
    joined = part.join('');
    if (out.at + joined.length * 3 > MAX_ENTRY_BYTES)
      throw new Error(`a lake column's texts pass ${MAX_ENTRY_BYTES} bytes`);
    out.ensure(joined.length * 3);
    const written = out.buf.write(joined, out.at, 'utf8');
    const ascii = written === joined.length;
    let at = out.at;
    for (let i = start; i < end; i += 1) {
      offsets[i] = at;
      const text = part[i - start]!;
      at += ascii ? text.length : Buffer.byteLength(text, 'utf8');
    }
    out.at += written;
  }
  offsets[texts.length] = out.at;
  return { bytes: out.buf, offsets };
}

/** A PLAIN BYTE_ARRAY value's 4-byte little-endian length at `at`: by hand, as Buffer#writeUInt32LE's checks cost more a value. */
function putLength(buf: Uint8Array, at: number, length: number): void {
  buf[at] = length & 255;
  buf[at + 1] = (length >>> 8) & 255;
  buf[at + 2] = (length >>> 16) & 255;
  buf[at + 3] = length >>> 24;
}

/**
 * `text` as UTF-8 into `buf` at `at` (room checked by the caller), the byte count: ASCII by code
 * unit in JS, anything else natively. Buffer#write's checks cost more than a short value's bytes.
 */
function writeUtf8(buf: Buffer, text: string, at: number): number {
  const n = text.length;
  if (n <= 128) {
    let k = 0;
    for (; k < n; k += 1) {
      const c = text.charCodeAt(k);
      if (c >= 128) break;
      buf[at + k] = c;
    }
    if (k === n) return n;
  }
  return buf.write(text, at, 'utf8');
}

/**
 * PlainTexts written row by row, in row order (rows not given are null): each text goes straight
 * into one growing buffer, so no row keeps a string of its own alive.
 */
export class PlainTextsBuilder {
  private readonly out = new Bytes(sparePlainBytes.pop());
  private readonly offsets: Int32Array;
  /** Rows whose offsets are set: offsets[0..next]. */
  private next = 0;

  constructor(private readonly rows: number) {
    this.offsets = new Int32Array(rows + 1);
  }

  add(row: number, text: string): void {
    this.open(row);
    this.write(text);
    this.close(row);
  }

  /** Row `row`'s text in parts: open, write each part, close. Rows come in increasing order. */
  open(row: number): void {
    this.nullsTo(row);
    this.out.ensure(4);
    // The length goes here on close.
    this.out.at += 4;
  }

  write(text: string): void {
    const out = this.out;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (out.at + text.length * 3 > MAX_ENTRY_BYTES && out.at + Buffer.byteLength(text, 'utf8') > MAX_ENTRY_BYTES)
      throw new Error(`a lake column's texts pass ${MAX_ENTRY_BYTES} bytes`);
    out.ensure(text.length * 3);
    out.at += writeUtf8(out.buf, text, out.at);
  }

  close(row: number): void {
    const { buf, at } = this.out;
    const start = this.offsets[row]!;
    putLength(buf, start, at - start - 4);
    this.offsets[row + 1] = at;
    this.next = row + 1;
  }

  private nullsTo(row: number): void {
    const at = this.out.at;
    while (this.next < row) this.offsets[++this.next] = at;
  }

  texts(): PlainTexts {
    this.nullsTo(this.rows);
    return { encoding: 'plain', bytes: this.out.buf, offsets: this.offsets };
  }
}

/**
 * Bytes of PlainTexts written and given back, for the next builders (a day's unique texts are tens of
 * MB: fresh ones each day were most of the writer's external memory pressure; see `scratch`).
 */
const sparePlainBytes: Buffer[] = [];
const SPARE_PLAIN_BYTES = 4;

/** `texts`' bytes may be reused: nothing reads `texts` after this. */
export function releasePlainTexts(texts: PlainTexts): void {
  if (sparePlainBytes.length < SPARE_PLAIN_BYTES) sparePlainBytes.push(texts.bytes);
}

/** Entries' bytes, each after its 4-byte length (PLAIN BYTE_ARRAY), at the end of `out`. */
function plainEntries(out: Bytes, entries: Utf8Entries, ids: ArrayLike<number>, from: number, end: number): void {
  const { bytes, offsets } = entries;
  let size = 0;
  for (let i = from; i < end; i += 1) {
    const id = ids[i]!;
    if (id >= 0) size += 4 + offsets[id + 1]! - offsets[id]!;
  }
  out.ensure(size);
  const buf = out.buf;
  let at = out.at;
  for (let i = from; i < end; i += 1) {
    const id = ids[i]!;
    if (id < 0) continue;
    const s = offsets[id]!;
    const len = offsets[id + 1]! - s;
    putLength(buf, at, len);
    at += 4;
    // Short values byte by byte: a native copy's call costs more than a uuid's 36 bytes.
    if (len <= 64) for (let k = 0; k < len; k += 1) buf[at + k] = bytes[s + k]!;
    else bytes.copy(buf, at, s, s + len);
    at += len;
  }
  out.at = at;
}

/** The least and greatest of entries (by id) in Parquet's order for BYTE_ARRAY statistics: unsigned bytes. */
function minMax(
  entries: Utf8Entries,
  ids: ArrayLike<number>,
  from: number,
  end: number,
): { min: Uint8Array; max: Uint8Array } | undefined {
  const { bytes, offsets } = entries;
  let min = -1;
  let max = -1;
  // buf.compare(target, targetStart, targetEnd, sourceStart, sourceEnd) orders the source against the target.
  const compare = (a: number, b: number) =>
    bytes.compare(bytes, offsets[b]!, offsets[b + 1]!, offsets[a]!, offsets[a + 1]!);
  for (let i = from; i < end; i += 1) {
    const id = ids[i]!;
    if (id < 0 || id === min || id === max) continue;
    if (min < 0 || compare(id, min) < 0) min = id;
    if (max < 0 || compare(id, max) > 0) max = id;
  }
  if (min < 0) return undefined;
  const copy = (id: number) => Uint8Array.from(bytes.subarray(offsets[id]!, offsets[id + 1]!));
  return { min: copy(min), max: copy(max) };
}

/** The least and greatest present value of rows [from, end) of PlainTexts, in the same order. */
function plainMinMax(texts: PlainTexts, from: number, end: number): { min: Uint8Array; max: Uint8Array } | undefined {
  const { bytes, offsets } = texts;
  let min = -1;
  let max = -1;
  // A row's value past its 4-byte length.
  const compare = (a: number, b: number) =>
    bytes.compare(bytes, offsets[b]! + 4, offsets[b + 1]!, offsets[a]! + 4, offsets[a + 1]!);
  for (let r = from; r < end; r += 1) {
    if (offsets[r + 1] === offsets[r]) continue;
    if (min < 0 || compare(r, min) < 0) min = r;
    if (max < 0 || compare(r, max) > 0) max = r;
  }
  if (min < 0) return undefined;
  const copy = (r: number) => Uint8Array.from(bytes.subarray(offsets[r]! + 4, offsets[r + 1]!));
  return { min: copy(min), max: copy(max) };
}

/** Definition levels of rows [from, end) (1 present, 0 null) after a 4-byte length, as V1 pages have them; the count present. */
function definitionLevels(
  out: Bytes,
  values: DictionaryTexts | PlainTexts | Float64Array | null,
  from: number,
  end: number,
): number {
  const n = end - from;
  out.ensure(8);
  const lengthAt = out.at;
  out.at += 4;
  let present = 0;
  if (values === null) {
    out.varint(n * 2);
    out.byte(0);
  } else {
    if (levels.buf.length < n) levels.buf = new Uint8Array(n);
    const lv = levels.buf;
    if (values instanceof Float64Array) {
      for (let i = 0; i < n; i += 1) {
        const p = Number.isNaN(values[from + i]!) ? 0 : 1;
        lv[i] = p;
        present += p;
      }
    } else if (values.encoding === 'dictionary') {
      const ids = values.ids;
      for (let i = 0; i < n; i += 1) {
        const p = ids[from + i]! >= 0 ? 1 : 0;
        lv[i] = p;
        present += p;
      }
    } else {
      const offsets = values.offsets;
      for (let i = 0; i < n; i += 1) {
        const p = offsets[from + i + 1]! > offsets[from + i]! ? 1 : 0;
        lv[i] = p;
        present += p;
      }
    }
    hybrid(out, lv, 0, n, 1);
  }
  out.buf.writeUInt32LE(out.at - lengthAt - 4, lengthAt);
  return present;
}

/** Local dictionary indices, per entry: reused across a file's row groups, reset after each. */
const local = { of: new Int32Array(0) };

/** One text column chunk: rows [from, end) of the file. */
function textChunk(column: TextColumn, from: number, end: number): Chunk {
  const rows = end - from;
  const chunk: Chunk = {
    encodings: [],
    uncompressed: 0,
    compressed: 0,
    dictionaryPage: false,
    dictionaryBytes: 0,
  };
  const { values } = column;
  const out = scratch;
  out.reset();
  let present = rows;
  if (!column.required) {
    present = definitionLevels(out, values, from, end);
    chunk.encodings.push(RLE);
  }
  const levelsEnd = out.at;
  if (values === null || present === 0) {
    writeData(chunk, out.view(), rows, PLAIN);
    chunk.encodings.push(PLAIN);
    if (column.statistics) chunk.stats = { nulls: rows };
    return chunk;
  }
  if (values.encoding === 'plain') {
    if (column.statistics) chunk.stats = { ...plainMinMax(values, from, end), nulls: rows - present };
    const start = values.offsets[from]!;
    const length = values.offsets[end]! - start;
    out.ensure(length);
    values.bytes.copy(out.buf, out.at, start, start + length);
    out.at += length;
    writeData(chunk, out.view(), rows, PLAIN);
    chunk.encodings.push(PLAIN);
    return chunk;
  }
  const { ids, entries } = values;
  if (column.statistics) chunk.stats = { ...minMax(entries, ids, from, end), nulls: rows - present };
  if (present > 1) {
    // The row group's own dictionary: its entries in order of first use.
    const count = entries.offsets.length - 1;
    if (local.of.length < count) local.of = new Int32Array(count).fill(-1);
    const of = local.of;
    const used: number[] = [];
    const indices = new Int32Array(present);
    const limit = present / 2;
    let k = 0;
    for (let i = from; i < end && used.length <= limit; i += 1) {
      const id = ids[i]!;
      if (id < 0) continue;
      let index = of[id]!;
      if (index < 0) {
        index = of[id] = used.length;
        used.push(id);
      }
      indices[k++] = index;
    }
    for (const id of used) of[id] = -1;
    if (used.length <= limit) {
      // The levels are kept aside: the dictionary page is built (and compressed) first in the same buffer.
      const levelBytes = Uint8Array.from(out.buf.subarray(0, levelsEnd));
      out.reset();
      plainEntries(out, entries, used, 0, used.length);
      chunk.dictionaryBytes = page(chunk, out.view(), DICTIONARY_PAGE, (t) =>
        t.struct(7, (h) => h.i32(1, used.length).i32(2, PLAIN)),
      );
      chunk.dictionaryPage = true;
      out.reset();
      out.ensure(levelBytes.length + 1);
      out.buf.set(levelBytes, 0);
      out.at = levelBytes.length;
      const width = bitWidth(used.length);
      out.byte(width);
      hybrid(out, indices, 0, present, width);
      writeData(chunk, out.view(), rows, RLE_DICTIONARY);
      chunk.encodings.push(PLAIN, RLE_DICTIONARY);
      return chunk;
    }
  }
  plainEntries(out, entries, ids, from, end);
  writeData(chunk, out.view(), rows, PLAIN);
  chunk.encodings.push(PLAIN);
  return chunk;
}

function writeData(chunk: Chunk, body: Uint8Array, rows: number, encoding: number): void {
  page(chunk, body, DATA_PAGE, (t) => t.struct(5, (h) => h.i32(1, rows).i32(2, encoding).i32(3, RLE).i32(4, RLE)));
}

const int64 = (n: number): Uint8Array => {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(n));
  return Uint8Array.from(b);
};

/** The present values of an OPTIONAL time column's row group, in row order: reused, as `levels`. */
const presentMillis = { buf: new Float64Array(0) };

function millisChunk(column: MillisColumn, from: number, end: number): Chunk {
  const chunk: Chunk = {
    encodings: [],
    uncompressed: 0,
    compressed: 0,
    dictionaryPage: false,
    dictionaryBytes: 0,
  };
  const out = scratch;
  out.reset();
  let values = column.values;
  let [first, last] = [from, end];
  if (!column.required) {
    const present = definitionLevels(out, values, from, end);
    chunk.encodings.push(RLE);
    if (present === 0) {
      chunk.encodings.push(PLAIN);
      if (column.statistics) chunk.stats = { nulls: end - from };
      writeData(chunk, out.view(), end - from, PLAIN);
      return chunk;
    }
    if (presentMillis.buf.length < present) presentMillis.buf = new Float64Array(present);
    const kept = presentMillis.buf;
    let k = 0;
    for (let i = from; i < end; i += 1) if (!Number.isNaN(values[i]!)) kept[k++] = values[i]!;
    [values, first, last] = [kept, 0, present];
  }
  chunk.encodings.push(DELTA_BINARY_PACKED);
  deltaBinaryPacked(out, values, first, last);
  if (column.statistics) {
    let min = values[first]!;
    let max = min;
    for (let i = first + 1; i < last; i += 1) {
      const v = values[i]!;
      if (v < min) min = v;
      else if (v > max) max = v;
    }
    chunk.stats = { min: int64(min), max: int64(max), nulls: end - from - (last - first) };
  }
  writeData(chunk, out.view(), end - from, DELTA_BINARY_PACKED);
  return chunk;
}

const MAGIC = Buffer.from('PAR1', 'latin1');
const CREATED_BY = 'posthog-lite lake writer version 1.0.0';

/** A Parquet file of `rows` rows in row groups of `rowGroupRows` rows. */
export function writeLakeParquet(
  columns: readonly LakeParquetColumn[],
  rows: number,
  rowGroupRows: number,
): Uint8Array {
  if (!(rowGroupRows >= 1)) throw new Error(`row groups of ${rowGroupRows} rows`);
  for (const c of columns) {
    const length =
      c.kind === 'millis'
        ? c.values.length
        : c.values === null
          ? rows
          : c.values.encoding === 'dictionary'
            ? c.values.ids.length
            : c.values.offsets.length - 1;
    if (length !== rows) throw new Error(`column ${c.name} has ${length} values for ${rows} rows`);
  }
  file.reset();
  file.append(MAGIC);
  const groups: {
    chunks: { chunk: Chunk; offset: number; column: LakeParquetColumn }[];
    rows: number;
    offset: number;
    bytes: number;
    compressed: number;
  }[] = [];
  for (let from = 0; from < rows; from += rowGroupRows) {
    const end = Math.min(rows, from + rowGroupRows);
    const group = {
      chunks: [] as { chunk: Chunk; offset: number; column: LakeParquetColumn }[],
      rows: end - from,
      // Pages are appended as they are made: where the file ends is where the next chunk starts.
      offset: file.at,
      bytes: 0,
      compressed: 0,
    };
    for (const column of columns) {
      const offset = file.at;
      const chunk = column.kind === 'text' ? textChunk(column, from, end) : millisChunk(column, from, end);
      group.chunks.push({ chunk, offset, column });
      group.bytes += chunk.uncompressed;
      group.compressed += chunk.compressed;
    }
    groups.push(group);
  }
  const t = new Thrift();
  t.i32(1, 1)
    .structs(2, [null, ...columns], (s, c) => {
      if (c === null) s.string(4, 'schema').i32(5, columns.length);
      else if (c.kind === 'text')
        s.i32(1, BYTE_ARRAY)
          .i32(3, c.required ? REQUIRED : OPTIONAL)
          .string(4, c.name)
          .i32(6, UTF8);
      else
        s.i32(1, INT64)
          .i32(3, c.required ? REQUIRED : OPTIONAL)
          .string(4, c.name)
          .i32(6, TIMESTAMP_MILLIS);
    })
    .i64(3, rows)
    .structs(4, groups, (g, group) => {
      g.structs(1, group.chunks, (cc, { chunk, offset: at, column }) => {
        cc.i64(2, at).struct(3, (m) => {
          m.i32(1, column.kind === 'text' ? BYTE_ARRAY : INT64)
            .i32s(2, chunk.encodings)
            .strings(3, [column.name])
            .i32(4, SNAPPY)
            .i64(5, group.rows)
            .i64(6, chunk.uncompressed)
            .i64(7, chunk.compressed)
            .i64(9, at + chunk.dictionaryBytes);
          if (chunk.dictionaryPage) m.i64(11, at);
          const stats = chunk.stats;
          if (stats)
            m.struct(12, (s) => {
              s.i64(3, stats.nulls);
              if (stats.min && stats.max) s.binary(5, stats.max).binary(6, stats.min);
            });
        });
      })
        .i64(2, group.bytes)
        .i64(3, group.rows)
        .i64(5, group.offset)
        .i64(6, group.compressed);
    })
    .string(6, CREATED_BY)
    .structs(7, columns, (o) => o.struct(1, () => {}));
  const footer = t.end();
  file.append(footer);
  file.ensure(4);
  file.u32(footer.length);
  file.append(MAGIC);
  // A copy: the file's buffer is the next file's.
  const copy = Buffer.allocUnsafe(file.at);
  file.buf.copy(copy, 0, 0, file.at);
  return copy;
}
