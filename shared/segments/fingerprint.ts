/**
 * A 24-bit fingerprint of an event's uuid. Day counters keep, beside the count of a (project, UTC day,
 * event name), the sum of its events' fingerprints; a compacted segment records the same pair for the
 * events it holds. Equal pairs mean the segment holds exactly the events counted (a deletion and an
 * addition that leave the count unchanged move the sum, except with probability 2^-24). 24 bits keep the
 * sum an exact integer in JavaScript and in DynamoDB numbers up to ~5e8 events per (day, name).
 */
export function fingerprint(uuid: string): number {
  // FNV-1a, 32-bit, folded to 24 bits.
  let h = 0x811c9dc5;
  for (let i = 0; i < uuid.length; i += 1) {
    h ^= uuid.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return ((h >>> 24) ^ h) & 0xffffff;
}

/** What a set of events adds up to: how many, and the sum of their fingerprints. */
export interface Tally {
  count: number;
  xsum: number;
}

export const emptyTally = (): Tally => ({ count: 0, xsum: 0 });

export function addToTally(tally: Tally, uuid: string): void {
  tally.count += 1;
  tally.xsum += fingerprint(uuid);
}

export const sameTally = (a: Tally | undefined, b: Tally | undefined): boolean =>
  (a?.count ?? 0) === (b?.count ?? 0) && (a?.xsum ?? 0) === (b?.xsum ?? 0);
