/**
 * Breakdown ranking over the groups of one series in one period (breakdown.ts, the legacy rules):
 * values with events in the period ranked by volume, ties by label; the top `limit` get rows, the
 * rest one "Other" row unless hidden; rows in the same order. Values seen only before the period
 * (active-user lookback) join Other.
 */
import { breakdownLabel } from '../breakdown.ts';
import type { BreakdownModel } from '../model.ts';
import { BREAKDOWN_OTHER_VALUE } from '../types.ts';

export interface Ranking {
  /** Row values, in row order. */
  values: string[];
  /** Group ordinal -> row index, -1 when the group's events are in no row. */
  rowOfGroup: Int32Array;
}

const byVolume = (a: [string, number], b: [string, number]) => {
  const la = breakdownLabel(a[0]);
  const lb = breakdownLabel(b[0]);
  return b[1] - a[1] || (la < lb ? -1 : la > lb ? 1 : 0);
};

/** Null when no group has an event in the period (no rows). */
export function rankGroups(volumes: Float64Array, texts: readonly string[], spec: BreakdownModel): Ranking | null {
  const withVolume: [string, number][] = [];
  for (let g = 0; g < texts.length; g += 1) if ((volumes[g] ?? 0) > 0) withVolume.push([texts[g]!, volumes[g]!]);
  if (!withVolume.length) return null;
  const ranked = withVolume.sort(byVolume);
  const rows = ranked.slice(0, spec.breakdown_limit);
  const rest = ranked.slice(spec.breakdown_limit);
  const withOther = rest.length > 0 && !spec.breakdown_hide_other_aggregation;
  if (withOther) rows.push([BREAKDOWN_OTHER_VALUE, rest.reduce((sum, [, volume]) => sum + volume, 0)]);
  // A Map like the row engine's, so a value spelled like the Other sentinel shares its row there too.
  const index = new Map<string, number>();
  for (const [value] of rows.sort(byVolume)) if (!index.has(value)) index.set(value, index.size);
  const other = withOther ? index.get(BREAKDOWN_OTHER_VALUE)! : -1;
  const rowOfGroup = Int32Array.from(texts, (text) => index.get(text) ?? other);
  return { values: [...index.keys()], rowOfGroup };
}
