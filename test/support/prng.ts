/**
 * mulberry32: a small seeded generator of numbers in [0, 1). Tests and benchmarks that draw "random"
 * data use it so every run draws the same (a property test's failures reproduce; sizes do not vary).
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
