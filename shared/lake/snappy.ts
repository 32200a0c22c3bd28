/**
 * Snappy compression (the raw block format Parquet's SNAPPY codec uses): the algorithm of
 * hyparquet-writer's compressor (snappyjs, MIT, Copyright (c) 2016 Zhipeng Jia), writing into one
 * output array sized for the worst case instead of a growing writer checked byte by byte, which
 * took a fifth of the lake's write time.
 */

const MAX_HASH_TABLE_BITS = 14;
const MAX_OFFSET = 0xffff;
const INPUT_MARGIN = 15;
const tables: (Uint32Array | undefined)[] = [];

const hash = (key: number, shift: number) => Math.imul(key, 0x1e35a7bd) >>> shift;
const load32 = (a: Uint8Array, at: number) => a[at]! | (a[at + 1]! << 8) | (a[at + 2]! << 16) | (a[at + 3]! << 24);

/** Snappy's bound on a block's compressed size. */
export const snappyBound = (n: number) => 32 + n + Math.floor(n / 6);

/** `input` compressed into `out` (at least snappyBound(input.length) bytes): a view of `out`'s start. */
export function snappyCompress(
  input: Uint8Array,
  out: Uint8Array = new Uint8Array(snappyBound(input.length)),
): Uint8Array {
  const n = input.length;
  if (out.length < snappyBound(n)) throw new Error(`snappy: ${out.length} bytes of room for ${n} bytes`);
  let op = 0;
  // The uncompressed length, a varint.
  for (let v = n; ; ) {
    if (v < 128) {
      out[op++] = v;
      break;
    }
    out[op++] = (v & 127) | 128;
    v >>>= 7;
  }
  const literal = (from: number, len: number) => {
    const value = len - 1;
    if (len <= 60) out[op++] = value << 2;
    else {
      const bytes = value < 0x100 ? 1 : value < 0x10000 ? 2 : value < 0x1000000 ? 3 : 4;
      out[op++] = (59 + bytes) << 2;
      for (let i = 0; i < bytes; i += 1) out[op++] = (value >>> (i * 8)) & 255;
    }
    if (len <= 32) for (let i = 0; i < len; i += 1) out[op++] = input[from + i]!;
    else {
      out.set(input.subarray(from, from + len), op);
      op += len;
    }
  };
  const copyUpTo64 = (offset: number, len: number) => {
    if (len < 12 && offset < 2048) {
      out[op++] = 1 + ((len - 4) << 2) + ((offset >>> 8) << 5);
      out[op++] = offset & 255;
    } else {
      out[op++] = 2 + ((len - 1) << 2);
      out[op++] = offset & 255;
      out[op++] = offset >>> 8;
    }
  };
  const copy = (offset: number, len: number) => {
    while (len >= 68) {
      copyUpTo64(offset, 64);
      len -= 64;
    }
    if (len > 64) {
      copyUpTo64(offset, 60);
      len -= 60;
    }
    copyUpTo64(offset, len);
  };

  let bits = 1;
  while (1 << bits <= n && bits <= MAX_HASH_TABLE_BITS) bits += 1;
  bits -= 1;
  const shift = 32 - bits;
  const table = (tables[bits] ??= new Uint32Array(1 << bits));
  table.fill(0);
  let nextEmit = 0;
  if (n >= INPUT_MARGIN) {
    const ipLimit = n - INPUT_MARGIN;
    let ip = 1;
    let nextHash = hash(load32(input, ip), shift);
    let going = true;
    while (going) {
      let skip = 32;
      let nextIp = ip;
      let candidate = 0;
      do {
        ip = nextIp;
        const h = nextHash;
        const step = skip >>> 5;
        skip += 1;
        nextIp = ip + step;
        if (ip > ipLimit) {
          going = false;
          break;
        }
        nextHash = hash(load32(input, nextIp), shift);
        candidate = table[h]!;
        table[h] = ip;
      } while (ip - candidate > MAX_OFFSET || load32(input, ip) !== load32(input, candidate));
      if (!going) break;
      literal(nextEmit, ip - nextEmit);
      do {
        const base = ip;
        let matched = 4;
        while (ip + matched < n && input[ip + matched] === input[candidate + matched]) matched += 1;
        ip += matched;
        copy(base - candidate, matched);
        nextEmit = ip;
        if (ip >= ipLimit) {
          going = false;
          break;
        }
        table[hash(load32(input, ip - 1), shift)] = ip - 1;
        const h = hash(load32(input, ip), shift);
        candidate = table[h]!;
        table[h] = ip;
      } while (ip - candidate <= MAX_OFFSET && load32(input, ip) === load32(input, candidate));
      if (!going) break;
      ip += 1;
      nextHash = hash(load32(input, ip), shift);
    }
  }
  if (nextEmit < n) literal(nextEmit, n - nextEmit);
  return out.subarray(0, op);
}
