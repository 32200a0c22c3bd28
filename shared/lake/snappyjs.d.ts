/** snappyjs ships no types: the compressor class shared/lake/snappy.ts uses. */
declare module 'snappyjs/snappy_compressor.js' {
  export class SnappyCompressor {
    constructor(input: Uint8Array);
    maxCompressedLength(): number;
    /** Writes the compressed block into `out` (room for maxCompressedLength()); returns its length. */
    compressToBuffer(out: Uint8Array): number;
  }
}
