/**
 * `npm run bench -- cohort-count`: what one cohort calculation step spends counting a behavioural
 * leaf (performed_event in the last 30 days) before it pages persons (shared/domain/cohort-events.ts),
 * in-process (no DynamoDB): BENCH_COHORT_EVENTS window events (default and most 1M) of one name, done
 * by distinct ids drawn from 1M persons, 29 days as compacted segments (50k-event chunks) and the
 * last day as raw rows, as readTrendRows hands them over. Timed: decode + mask + per-distinct-id
 * counts, for the event leaf and for an action leaf whose step tests an event property (`plan`).
 * Heap: heapUsed + arrayBuffers above the level before counting (after a full GC), after counting
 * (the map of counts is what the step keeps while it pages persons).
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { encodeSegment, type FetchedSegment, type SegmentRow } from '#shared/segments/codec.ts';
import { type EventRow, distinctIdsOnly, storedSource } from '#shared/trends/columnar/index.ts';
import { countPerDistinctId, eventByName, eventsOfAction } from '#shared/trends/columnar/event-counts.ts';
import { fixed, heading, table } from './lib/format.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';
import { prng } from '../test/support/prng.ts';

const DAY = 86_400_000;
const DAYS = 30;
const NOW = Date.parse('2026-01-31T12:00:00Z');
const PERSONS = 1_000_000;
const CHUNK_ROWS = 50_000;
const RUNS = 3;
/** A step has the worker's 900 s less a minute kept back: counting a 1M-event window must be a small part of it. */
const TARGET_1M_MS = 2_000;
/** The counts kept while the step pages persons: one entry per distinct id that matched. */
const TARGET_1M_HEAP_MB = 256;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function events(): number {
  const raw = process.env.BENCH_COHORT_EVENTS;
  const n = raw ? Number(raw) : 1_000_000;
  if (!Number.isInteger(n) || n <= 0 || n > 1_000_000)
    throw new Error(`BENCH_COHORT_EVENTS must be an integer in 1..1000000, got '${raw}'`);
  return n;
}

/** The window's events: compacted chunks for every day but the last, raw rows for the last (today). */
function generate(count: number) {
  const rng = prng(23);
  const from = NOW - DAYS * DAY;
  const segments: { name: string; segment: FetchedSegment }[] = [];
  const rows: EventRow[] = [];
  for (let d = 0; d < DAYS; d += 1) {
    const dayStart = from + d * DAY;
    const day: SegmentRow[] = Array.from({ length: Math.round(count / DAYS) }, () => ({
      distinct_id: `user-${Math.floor(rng() * PERSONS)}`,
      t: dayStart + Math.floor(rng() * DAY),
      properties: { plan: rng() < 0.25 ? 'pro' : 'free', $browser: rng() < 0.5 ? 'Chrome' : 'Safari' },
    })).sort((a, b) => a.t - b.t);
    if (d === DAYS - 1) for (const r of day) rows.push({ event: 'bought', ...r });
    else
      for (let at = 0; at < day.length; at += CHUNK_ROWS)
        segments.push({ name: 'bought', segment: encodeSegment(day.slice(at, at + CHUNK_ROWS), dayStart) });
  }
  return { segments, rows, from, to: NOW, events: Math.round(count / DAYS) * DAYS };
}

const heap = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

export const cohortCountBenchmark: Benchmark = {
  name: 'cohort-count',
  title: "Behavioural cohort leaf: one calculation step's counting of a 1M-event window (segments + raw tail)",
  async run(): Promise<BenchResult> {
    const n = events();
    const data = generate(n);
    const ctx = { tz: 'UTC', now: NOW, weekStartDay: 0 as const };
    const leaves = [
      { label: 'performed_event (event)', counted: eventByName('bought') },
      {
        label: 'performed_event (action, plan = pro)',
        counted: eventsOfAction(
          {
            id: 1,
            name: 'Bought pro',
            steps: [{ event: 'bought', properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }] }],
          },
          ctx,
        ),
      },
    ];
    const rows: SummaryRow[] = [];
    const errors: string[] = [];
    const lines: string[][] = [];
    for (const { label, counted } of leaves) {
      const projection = { properties: counted.properties, distinctIds: true };
      const run = () => {
        gc();
        const before = heap();
        const started = performance.now();
        const source = storedSource({ ...data, projection }, distinctIdsOnly);
        const result = countPerDistinctId(source, counted.node, 20_000_000);
        const ms = performance.now() - started;
        return { ms, heapMb: (heap() - before) / 2 ** 20, result };
      };
      run();
      const runs = Array.from({ length: RUNS }, run);
      const ms = median(runs.map((r) => r.ms));
      const heapMb = Math.max(...runs.map((r) => r.heapMb));
      const { result } = runs[0]!;
      if (result.events !== data.events)
        errors.push(`${label}: counted ${result.events} window events, expected ${data.events}`);
      lines.push([label, String(result.perDistinctId.size), fixed(ms, 1), fixed(heapMb, 1)]);
      const target = n === 1_000_000;
      rows.push({
        benchmark: 'cohort-count',
        metric: `${label} at ${n} events, ms`,
        value: fixed(ms, 1),
        target: target ? `<= ${TARGET_1M_MS}` : '-',
        status: !target ? 'info' : ms <= TARGET_1M_MS ? 'pass' : 'OVER TARGET',
      });
      rows.push({
        benchmark: 'cohort-count',
        metric: `${label} at ${n} events, heap MiB`,
        value: fixed(heapMb, 1),
        target: target ? `<= ${TARGET_1M_HEAP_MB}` : '-',
        status: !target ? 'info' : heapMb <= TARGET_1M_HEAP_MB ? 'pass' : 'OVER TARGET',
      });
    }
    heading(
      `Cohort leaf counting: ${n} window events, ${data.segments.length} segment chunks + ${data.rows.length} raw rows`,
    );
    console.log(table(['leaf', 'distinct ids counted', 'ms (median)', 'heap MiB'], lines, ['l', 'r', 'r', 'r']));
    return { rows, errors };
  },
};
