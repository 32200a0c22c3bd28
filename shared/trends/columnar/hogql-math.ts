/**
 * `math: "hogql"` (`math_hogql`, an aggregate expression such as `avg(toFloat(properties.price))`):
 * one accumulator of the library's compileAggregate per (row, bucket) cell, or per row for the whole
 * period on aggregated displays. Accumulators cannot be merged (a median, a uniq), so cells are kept
 * per answer row, not per breakdown value: with a breakdown the engine ranks the values first (one
 * pass counting volumes), then folds the rows in a second pass. The cells are then at most
 * rows × buckets, which the values cap (limits.ts MAX_CELLS) already bounds.
 */
import type { HogValue } from '#shared/hogql/values.ts';
import type { Period } from '../dates.ts';
import type { ColumnBatch } from './batch.ts';
import { bucketOf } from './buckets.ts';
import { type ColumnExpr, type FieldReader, rowReaderOf } from './expressions.ts';
import type { Mask } from './masks.ts';

/** One group's accumulator (the library's compileAggregate factory gives one per call). */
export interface Aggregate {
  add(read: FieldReader): void;
  result(): HogValue;
}

/** A cell's result as a trend value: numbers as they are, booleans 0/1, numeric strings parsed; null, NaN and anything else 0 (an empty bucket is 0 too). */
export function trendNumber(v: HogValue): number {
  if (typeof v === 'number') return Number.isFinite(v) ? v : 0;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : 0;
  }
  return 0;
}

/** A value per row: row i has `table[indexes[i]]` (the engine's breakdown groups). */
export interface GroupLookup {
  table: Int32Array;
  indexes: Uint32Array;
}

export class AggregateCells {
  private readonly cells: (Aggregate | undefined)[];
  /** Cells per row: one per bucket, or one for the whole period. */
  private readonly slots: number;

  constructor(
    private readonly make: () => Aggregate,
    private readonly expr: ColumnExpr,
    readonly period: Period,
    /** The answer row of each breakdown group (-1: in none); [0] without a breakdown. */
    private readonly rowOfGroup: Int32Array,
    private readonly rowCount: number,
    /** Aggregated displays show only the whole period's value. */
    private readonly whole: boolean,
  ) {
    this.slots = whole ? 1 : period.buckets.length;
    this.cells = new Array(rowCount * this.slots);
  }

  /** Adds the batch's rows that pass `mask`, in [lo, last] and in the period, to their cells. */
  fold(batch: ColumnBatch, mask: Mask, groups: GroupLookup | null, lo: number, last: number): void {
    if (mask === false) return;
    const rowMask = mask === true ? null : mask;
    const { time, base, n } = batch;
    const { from, to, buckets } = this.period;
    const start = Math.max(lo, from);
    const end = Math.min(last, to);
    const reader = rowReaderOf(this.expr, batch);
    const { rowOfGroup, cells, slots, whole } = this;
    for (let i = 0; i < n; i += 1) {
      if (rowMask !== null && rowMask[i] === 0) continue;
      const t = base + time[i]!;
      if (t < start || t > end) continue;
      const g = groups === null ? 0 : groups.table[groups.indexes[i]!]!;
      const r = g < rowOfGroup.length ? rowOfGroup[g]! : -1;
      if (r < 0) continue;
      let slot = 0;
      if (!whole) {
        if (!buckets.length || t < buckets[0]!) continue;
        slot = bucketOf(buckets, t);
      }
      const at = r * slots + slot;
      reader.at(i);
      let cell = cells[at];
      if (cell === undefined) cells[at] = cell = this.make();
      cell.add(reader.read);
    }
  }

  /** Each row's values per bucket (zeros on aggregated displays) and its whole-period value (NaN when not shown). */
  rows(): { values: number[]; aggregated: number }[] {
    const B = this.period.buckets.length;
    const value = (at: number) => {
      const cell = this.cells[at];
      return cell === undefined ? 0 : trendNumber(cell.result());
    };
    return Array.from({ length: this.rowCount }, (_, r) =>
      this.whole
        ? { values: new Array<number>(B).fill(0), aggregated: value(r) }
        : { values: Array.from({ length: B }, (_, b) => value(r * B + b)), aggregated: Number.NaN },
    );
  }
}
