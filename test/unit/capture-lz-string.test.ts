/**
 * shared/capture/decode.ts decodes lz64 bodies itself rather than with the lz-string package: it stops
 * at the request's cap while inflating (lz-string would build the whole output first: a few KB of input
 * can ask for hundreds of MB), and refuses a stream that ends without lz-string's end code. Here it must
 * answer exactly as lz-string does on whatever lz-string compresses, and never answer differently on noise.
 */
import fc from 'fast-check';
import LZString from 'lz-string';
import { describe, expect, it } from 'vitest';
import { lzDecompressFromBase64 } from '#shared/capture/decode.ts';
import { ParseError, PayloadTooLarge } from '#shared/errors.ts';

/** Texts lz-string's dictionary meets: any UTF-16 (lone surrogates too), repeats, JSON-looking runs. */
const texts = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.string({ unit: fc.constantFrom('a', 'b', '{', '"', ':', 'é', '🚀'), maxLength: 2_000 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
  fc.tuple(fc.string({ maxLength: 20 }), fc.integer({ min: 1, max: 500 })).map(([s, n]) => s.repeat(n)),
);

describe('lz64 decoding (ours) against the lz-string package (differential, fixed seed)', () => {
  it("decodes whatever lz-string's compressToBase64 writes to what lz-string decodes", () => {
    fc.assert(
      fc.property(texts, (text) => {
        const compressed = LZString.compressToBase64(text);
        const theirs = LZString.decompressFromBase64(compressed);
        expect(theirs).toBe(text);
        expect(lzDecompressFromBase64(compressed)).toBe(theirs);
      }),
      { seed: 20261128, numRuns: 1_500 },
    );
  });

  it('keeps the output cap: PayloadTooLarge exactly when the text is longer than the cap', () => {
    fc.assert(
      fc.property(texts, fc.integer({ min: 1, max: 3_000 }), (text, cap) => {
        const compressed = LZString.compressToBase64(text);
        if (text.length > cap) expect(() => lzDecompressFromBase64(compressed, cap)).toThrow(PayloadTooLarge);
        else expect(lzDecompressFromBase64(compressed, cap)).toBe(text);
      }),
      { seed: 20261129, numRuns: 300 },
    );
    // A 200,000-character text compresses to under 2 KB; the cap stops it early.
    const bomb = LZString.compressToBase64('a'.repeat(200_000));
    expect(bomb.length).toBeLessThan(2_000);
    expect(() => lzDecompressFromBase64(bomb, 10_000)).toThrow(PayloadTooLarge);
  });

  it('on noise, answers what lz-string answers or refuses it (ParseError), never another text', () => {
    const base64 = fc.string({
      unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/='),
      minLength: 1,
      maxLength: 200,
    });
    let decoded = 0;
    fc.assert(
      fc.property(base64, (noise) => {
        let ours: string;
        try {
          ours = lzDecompressFromBase64(noise, 100_000);
        } catch (error) {
          expect(error instanceof ParseError || error instanceof PayloadTooLarge).toBe(true);
          return;
        }
        decoded++;
        expect(ours).toBe(LZString.decompressFromBase64(noise));
      }),
      { seed: 20261130, numRuns: 3_000 },
    );
    // Not vacuous: some noise is a valid stream.
    expect(decoded).toBeGreaterThan(0);
  });
});
