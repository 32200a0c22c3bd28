import { describe, expect, it } from 'vitest';
import { DEFAULT_COHORT_WINDOW_EVENTS, readConfig } from '#shared/config.ts';
import { encodeSegment } from '#shared/segments/codec.ts';
import { countPerDistinctId, eventByName, eventsOfAction } from '#shared/trends/columnar/event-counts.ts';
import { distinctIdsOnly, type EventRow, storedSource } from '#shared/trends/columnar/index.ts';

const DAY = Date.parse('2026-01-10T00:00:00Z');
const ctx = { tz: 'UTC', now: DAY + 86_400_000, weekStartDay: 0 as const };

/** A compacted day of `bought` (one chunk) and a raw day (rows of several names), read as trends read them. */
function source(properties: string[], from: number, to: number) {
  const segmentRows = [
    { distinct_id: 'a', t: DAY + 1_000, properties: { plan: 'pro' } },
    { distinct_id: 'a', t: DAY + 2_000, properties: { plan: 'free' } },
    { distinct_id: 'b', t: DAY + 3_000, properties: { plan: 'pro' } },
    { distinct_id: 'c', t: DAY + 80_000_000, properties: {} },
  ];
  const rows: EventRow[] = [
    { event: 'bought', distinct_id: 'a', t: DAY + 86_400_000 + 5, properties: { plan: 'pro' } },
    { event: 'bought', distinct_id: 'd', t: DAY + 86_400_000 + 6, properties: { plan: 'free' } },
    { event: 'viewed', distinct_id: 'd', t: DAY + 86_400_000 + 7, properties: { plan: 'pro' } },
  ];
  return storedSource(
    {
      segments: [{ name: 'bought', segment: encodeSegment(segmentRows, DAY) }],
      rows,
      from,
      to,
      projection: { properties, distinctIds: true },
    },
    distinctIdsOnly,
  );
}

describe('behavioural cohort leaves counted on columns', () => {
  it('an event leaf counts its name per distinct id over segments and raw rows, inside the window only', () => {
    const leaf = eventByName('bought');
    const all = countPerDistinctId(source(leaf.properties, DAY, DAY + 2 * 86_400_000), leaf.node, 100);
    expect(Object.fromEntries(all.perDistinctId)).toEqual({ a: 3, b: 1, c: 1, d: 1 });
    expect(all).toMatchObject({ events: 7, over: false });
    // The window's bounds are inclusive; c's late event and the raw day fall outside this one.
    const early = countPerDistinctId(source(leaf.properties, DAY + 2_000, DAY + 3_000), leaf.node, 100);
    expect(Object.fromEntries(early.perDistinctId)).toEqual({ a: 1, b: 1 });
  });

  it('an action leaf reads the properties its steps test and counts rows any step matches', () => {
    const leaf = eventsOfAction(
      {
        id: 7,
        name: 'Bought pro',
        steps: [{ event: 'bought', properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }] }],
      },
      ctx,
    );
    expect(leaf).toMatchObject({ names: ['bought'], properties: ['plan'] });
    const counted = countPerDistinctId(source(leaf.properties, DAY, DAY + 2 * 86_400_000), leaf.node, 100);
    expect(Object.fromEntries(counted.perDistinctId)).toEqual({ a: 2, b: 1 });
    // A step of any event reads every name; an action without steps (or deleted) reads nothing.
    expect(eventsOfAction({ id: 8, name: 'Any', steps: [{ event: null }] }, ctx).names).toBeNull();
    expect(eventsOfAction(undefined, ctx).names).toEqual([]);
  });

  it('stops at the cap: more window events than `maxEvents` is `over`, whatever matched', () => {
    const leaf = eventByName('bought');
    const window = [DAY, DAY + 2 * 86_400_000] as const;
    expect(countPerDistinctId(source([], ...window), leaf.node, 7).over).toBe(false);
    const over = countPerDistinctId(source([], ...window), leaf.node, 6);
    expect(over.over).toBe(true);
    expect(over.events).toBeGreaterThan(6);
  });

  it(`the cap is ${DEFAULT_COHORT_WINDOW_EVENTS} events a leaf unless ANALYTICS_COHORT_WINDOW_EVENTS says otherwise`, () => {
    expect(DEFAULT_COHORT_WINDOW_EVENTS).toBe(20_000_000);
    expect(readConfig({}).cohortWindowEvents).toBe(DEFAULT_COHORT_WINDOW_EVENTS);
    expect(readConfig({ ANALYTICS_COHORT_WINDOW_EVENTS: '5' }).cohortWindowEvents).toBe(5);
    expect(() => readConfig({ ANALYTICS_COHORT_WINDOW_EVENTS: '0' })).toThrow(/ANALYTICS_COHORT_WINDOW_EVENTS/);
  });
});
