/**
 * Snappy (the raw block format of Parquet's SNAPPY codec) by snappyjs, the compressor hyparquet-writer
 * also carries a copy of. Its SnappyCompressor writes into a buffer we pass, so the lake's writer keeps
 * one output reused from page to page (fresh buffers per page set off full collections: docs/benchmarks.md).
 */
import { SnappyCompressor } from 'snappyjs/snappy_compressor.js';

/** Snappy's bound on a block's compressed size. */
export const snappyBound = (n: number) => 32 + n + Math.floor(n / 6);

/** `input` compressed into `out` (at least snappyBound(input.length) bytes): a view of `out`'s start. */
export function snappyCompress(
  input: Uint8Array,
  out: Uint8Array = new Uint8Array(snappyBound(input.length)),
): Uint8Array {
  if (out.length < snappyBound(input.length))
    throw new Error(`snappy: ${out.length} bytes of room for ${input.length} bytes`);
  return out.subarray(0, new SnappyCompressor(input).compressToBuffer(out));
}
