import type { Checkpoint } from './checkpoint.ts';

/** Rows decorated or compared between two checkpoints: a check costs a clock read, a row far less. */
const CHECK_EVERY = 1_024;

/**
 * Sorts `items` by a key computed once per item (decorate, sort, undecorate): an expensive key (a
 * stringified value) is not recomputed on each of the n log n comparisons. The checkpoint is called
 * while decorating and while sorting. Returns the items with their keys, sorted.
 */
export function sortByKey<T, K>(
  items: readonly T[],
  keyOf: (item: T) => K,
  compare: (a: K, b: K) => number,
  check: Checkpoint,
): { item: T; key: K }[] {
  const decorated = items.map((item, i) => {
    if (i % CHECK_EVERY === 0) check();
    return { item, key: keyOf(item) };
  });
  let comparisons = 0;
  return decorated.sort((a, b) => {
    comparisons += 1;
    if (comparisons % CHECK_EVERY === 0) check();
    return compare(a.key, b.key);
  });
}
