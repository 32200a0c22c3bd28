/**
 * What storage read for a trend, as the engine's source: compacted segment chunks (decoded one at a
 * time when the engine visits them) and uncompacted rows (raw partitions, top-up), batched per UTC
 * day in memory. One code path for every read source.
 */
import { decodeColumns, type FetchedSegment, type Projection } from '#shared/segments/codec.ts';
import { groupColumn, groupKeyText } from '../groups.ts';
import { propertyOf } from '../properties.ts';
import { batchOfRows, batchOfSegment, type ColumnSource, type EventRow, type PersonJoin } from './batch.ts';

export interface StoredColumns {
  /** Segment chunks, each of one event name. */
  segments: { name: string; segment: FetchedSegment }[];
  rows: EventRow[];
  /** The read window (inclusive): rows outside it are not the query's. */
  from: number;
  to: number;
  projection: Projection;
}

const DAY_MS = 86_400_000;

/** The distinct ids of the window's events: whose persons storage must resolve. */
export function distinctIdsOf(stored: StoredColumns): Set<string> {
  const ids = new Set<string>();
  for (const { segment } of stored.segments) {
    const { n, base, time, dids } = decodeColumns(segment, { properties: [], distinctIds: true });
    const seen = new Uint8Array(dids!.dictionary.length);
    for (let i = 0; i < n; i += 1) {
      const t = base + time[i]!;
      if (t >= stored.from && t <= stored.to) seen[dids!.indexes[i]!] = 1;
    }
    seen.forEach((s, d) => {
      if (s) ids.add(dids!.dictionary[d]!);
    });
  }
  for (const r of stored.rows) if (r.t >= stored.from && r.t <= stored.to) ids.add(r.distinct_id);
  return ids;
}

/** The group keys of each type in `types` that the window's events carry (`$group_N`): whose properties storage must load. */
export function groupKeysOf(stored: StoredColumns, types: readonly number[]): Map<number, Set<string>> {
  const found = new Map(types.map((t) => [t, new Set<string>()]));
  const visit = (
    keys: Set<string>,
    dictionary: readonly unknown[],
    indexes: Uint32Array,
    inWindow: (i: number) => boolean,
  ) => {
    const seen = new Uint8Array(dictionary.length + 1);
    for (let i = 0; i < indexes.length; i += 1) if (inWindow(i)) seen[indexes[i]!] = 1;
    for (let v = 1; v < seen.length; v += 1) {
      const key = seen[v] ? groupKeyText(dictionary[v - 1]) : null;
      if (key !== null) keys.add(key);
    }
  };
  for (const [type, keys] of found) {
    const column = groupColumn(type);
    for (const { segment } of stored.segments) {
      if (!segment.columns.get(column)) continue;
      const { base, time, columns } = decodeColumns(segment, { properties: [column], distinctIds: false });
      const decoded = columns.get(column);
      if (!decoded) continue;
      visit(keys, decoded.dictionary, decoded.indexes, (i) => {
        const t = base + time[i]!;
        return t >= stored.from && t <= stored.to;
      });
    }
    for (const r of stored.rows) {
      if (r.t < stored.from || r.t > stored.to) continue;
      const key = groupKeyText(propertyOf(r.properties, column));
      if (key !== null) keys.add(key);
    }
  }
  return found;
}

export function storedSource(stored: StoredColumns, join: PersonJoin): ColumnSource {
  const rowDays = new Map<number, EventRow[]>();
  for (const r of stored.rows) {
    const day = Math.floor(r.t / DAY_MS);
    const list = rowDays.get(day);
    if (list) list.push(r);
    else rowDays.set(day, [r]);
  }
  return {
    from: stored.from,
    to: stored.to,
    forEachBatch(visit) {
      for (const { name, segment } of stored.segments) visit(batchOfSegment(name, segment, stored.projection, join));
      for (const rows of rowDays.values()) visit(batchOfRows(rows, stored.projection.properties, join));
    },
  };
}
