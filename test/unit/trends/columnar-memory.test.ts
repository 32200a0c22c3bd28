import { describe, expect, it } from 'vitest';
import { encodeSegment } from '#shared/segments/codec.ts';
import {
  batchOfRows,
  computeTrendFromColumns,
  distinctIdsOnly,
  storedSource,
  type ColumnSource,
  type EventRow,
} from '#shared/trends/columnar/index.ts';
import { BREAKDOWN_OTHER_VALUE, parseTrendRequest } from '#shared/trends/index.ts';

const DAY = 86_400_000;

describe('columnar engine memory', () => {
  it('a breakdown with a distinct value per event over ~10,000 hourly buckets keeps only the cells that occur', () => {
    // 8,000 values × 9,578 slots: 613 MB of dense counters; the cells that occur are 16,000.
    const start = Date.parse('2023-01-01T00:00:00Z');
    const rows: EventRow[] = Array.from({ length: 8_000 }, (_, i) => ({
      event: 'e',
      distinct_id: 'u',
      t: start + i * 60 * 60_000,
      properties: { id: `v${i}` },
    }));
    const days = new Map<number, EventRow[]>();
    for (const r of rows) days.set(Math.floor(r.t / DAY), [...(days.get(Math.floor(r.t / DAY)) ?? []), r]);
    const before = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const source: ColumnSource = {
      from: -Infinity,
      to: Infinity,
      forEachBatch: (visit) => {
        for (const day of days.values()) {
          visit(batchOfRows(day, ['id'], distinctIdsOnly));
          peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
        }
      },
    };
    const request = {
      events: [{ id: 'e' }],
      breakdown: 'id',
      breakdown_limit: 1,
      interval: 'hour',
      date_from: '2023-01-01T00:00:00',
      date_to: '2024-02-04T00:00:00',
    };
    const query = parseTrendRequest(request);
    const res = computeTrendFromColumns(query, {
      source,
      project: { timezone: 'UTC', week_start_day: 0, test_account_filters: [] },
      actions: [],
      now: new Date('2024-03-01T00:00:00Z'),
    });
    expect(res.result.map((r) => [r.breakdown_value, r.count])).toEqual([
      [BREAKDOWN_OTHER_VALUE, 7_999],
      ['v0', 1],
    ]);
    expect(res.result[0]!.data.length).toBe(9_577);
    // Live typed arrays while batches are folded: the 16 MB dense budget and a small hash table.
    expect(peak).toBeLessThan(64 * 2 ** 20);
    // The whole-range cells too (aggregated displays).
    const table = computeTrendFromColumns(parseTrendRequest({ ...request, display: 'ActionsTable' }), {
      source,
      project: { timezone: 'UTC', week_start_day: 0, test_account_filters: [] },
      actions: [],
      now: new Date('2024-03-01T00:00:00Z'),
    });
    expect(table.result.map((r) => [r.breakdown_value, r.aggregated_value])).toEqual([
      [BREAKDOWN_OTHER_VALUE, 7_999],
      ['v0', 1],
    ]);
  });

  it('decodes no column of a segment chunk no series matches (read with every event name)', () => {
    const day = Date.parse('2024-03-19T00:00:00Z');
    const segment = (name: string) =>
      encodeSegment([{ distinct_id: 'u', t: day + 3_600_000, properties: { plan: name } }], day);
    const other = segment('other');
    // A column that would throw if it were decoded.
    other.columns.set('plan', Uint8Array.from([1, 2, 3]));
    const source = storedSource(
      {
        segments: [
          { name: 'other', segment: other },
          { name: 'e', segment: segment('e') },
        ],
        rows: [],
        from: -Infinity,
        to: Infinity,
        projection: { properties: ['plan'], distinctIds: false },
      },
      distinctIdsOnly,
    );
    const query = parseTrendRequest({ events: [{ id: 'e' }], breakdown: 'plan', date_from: '-7d' });
    const res = computeTrendFromColumns(query, {
      source,
      project: { timezone: 'UTC', week_start_day: 0, test_account_filters: [] },
      actions: [],
      now: new Date('2024-03-20T12:00:00Z'),
    });
    expect(res.result.map((r) => [r.breakdown_value, r.count])).toEqual([['e', 1]]);
  });
});
