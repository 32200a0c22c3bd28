import { describe, expect, it } from 'vitest';
import {
  canUseHourlyRollups,
  computeTrend,
  computeTrendFromHourly,
  parseTrendRequest,
  type TrendEvent,
  seriesId,
  type TrendsModel,
} from '#shared/trends/index.ts';
import { ev, project } from './helpers.ts';
import { prng } from '../../support/prng.ts';

const NOW = new Date('2024-03-15T10:30:00Z');
const START = Date.parse('2023-01-01T00:00:00Z');
const random = prng(42);
const EVENTS: TrendEvent[] = Array.from({ length: 3000 }, () => {
  const t = START + Math.floor(random() * (NOW.getTime() - START));
  return ev(['a', 'b', 'c'][Math.floor(random() * 3)]!, new Date(t).toISOString(), {
    person: `p${Math.floor(random() * 50)}`,
  });
});
const FIRST = new Date(Math.min(...EVENTS.map((e) => Date.parse(String(e.timestamp)))));

/** What the rollup writer stores: per series, events counted by UTC hour `YYYY-MM-DDTHH`. */
function hourlyFor(query: TrendsModel, events: TrendEvent[]): Map<string, number>[] {
  return query.series.map((s) => {
    const counts = new Map<string, number>();
    for (const e of events) {
      const name = seriesId(s);
      if (name !== null && e.event !== name) continue;
      const key = new Date(e.timestamp).toISOString().slice(0, 13);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
  });
}

const CASES: Record<string, unknown>[] = [
  { events: [{ id: 'a' }] },
  { events: [{ id: 'a' }, { id: 'b' }], date_from: '-30d', interval: 'week', formula: 'A+B*2' },
  { events: [{ id: null }], date_from: '-3m', interval: 'month', compare: true },
  { events: [{ id: 'c' }], date_from: '-48h', interval: 'hour' },
  { events: [{ id: 'a' }], date_from: '2024-03-01', date_to: '2024-03-12', display: 'ActionsLineGraphCumulative' },
  { events: [{ id: 'a' }, { id: 'b' }], date_from: '-14d', display: 'BoldNumber', compare: true, compare_to: '-1y' },
  { events: [{ id: 'b' }], date_from: 'all', interval: 'month' },
  { events: [{ id: 'a' }], date_from: '-2d', interval: 'hour', compare: true },
  { events: [{ id: 'a' }], date_from: 'wStart', filter_test_accounts: true },
  { events: [{ id: 'c' }], date_from: '-1mStart', date_to: '-1mEnd', display: 'ActionsTable' },
  { events: [{ id: 'a' }], date_from: '2023-11-04', date_to: '2023-11-06', interval: 'hour' },
  {
    events: [{ id: 'b' }, { id: 'c' }],
    date_from: '2023-03-01',
    date_to: '2023-04-15',
    interval: 'week',
    formula: 'A/B',
  },
  // Compared periods resolved on their own: overlapping (-7d), not rounded (-24h by day), same hours of yesterday (dStart).
  { events: [{ id: 'a' }, { id: 'b' }], date_from: '-7d', compare: true },
  { events: [{ id: null }], date_from: '-24h', compare: true },
  { events: [{ id: null }], date_from: 'dStart', interval: 'hour', compare: true },
];

describe('hourly rollups give exactly the raw-event response', () => {
  for (const tz of ['UTC', 'America/New_York', 'Europe/London', 'Asia/Tokyo']) {
    it(`in ${tz}, for every eligible query shape`, () => {
      const p = project(tz, tz === 'Europe/London' ? 1 : 0);
      for (const raw of CASES) {
        const query = parseTrendRequest(raw);
        expect(canUseHourlyRollups(query, p, NOW, FIRST), JSON.stringify(raw)).toBe(true);
        const fromEvents = computeTrend(query, {
          events: EVENTS,
          project: p,
          actions: [],
          now: NOW,
          firstEventAt: FIRST,
        });
        const fromHourly = computeTrendFromHourly(query, {
          hourly: hourlyFor(query, EVENTS),
          project: p,
          now: NOW,
          firstEventAt: FIRST,
        });
        expect(fromHourly, JSON.stringify(raw)).toEqual(fromEvents);
        const total = fromEvents.result.reduce((sum, s) => sum + s.count + (s.aggregated_value ?? 0), 0);
        expect(total, `non-trivial: ${JSON.stringify(raw)}`).not.toBe(0);
      }
    });
  }
});

describe('canUseHourlyRollups', () => {
  const eligible = (raw: Record<string, unknown>, p = project()) =>
    canUseHourlyRollups(parseTrendRequest({ events: [{ id: 'a' }], ...raw }), p, NOW);

  it('accepts total counts of events with formula, compare and any display but WorldMap', () => {
    expect(eligible({})).toBe(true);
    expect(
      eligible({
        events: [{ id: 'a', math: 'total' }, { id: null }],
        formula: 'A/B',
        compare: true,
        display: 'ActionsPie',
      }),
    ).toBe(true);
    expect(eligible({ display: 'WorldMap' })).toBe(false);
  });

  it('refuses other maths, actions, breakdowns and property filters anywhere', () => {
    expect(eligible({ events: [{ id: 'a', math: 'dau' }] })).toBe(false);
    expect(eligible({ events: [], actions: [{ id: 1 }] })).toBe(false);
    expect(eligible({ breakdown: '$browser' })).toBe(false);
    expect(eligible({ properties: [{ key: 'x', value: 1 }] })).toBe(false);
    expect(eligible({ events: [{ id: 'a', properties: [{ key: 'x', value: 1 }] }] })).toBe(false);
    expect(eligible({ properties: { type: 'AND', values: [{ type: 'OR', values: [] }] } })).toBe(true);
    expect(eligible({ filter_test_accounts: true }, project('UTC', 0, [{ key: 'email', operator: 'is_set' }]))).toBe(
      false,
    );
    expect(eligible({ filter_test_accounts: false }, project('UTC', 0, [{ key: 'email', operator: 'is_set' }]))).toBe(
      true,
    );
  });

  it('refuses time zones whose offset is not whole hours over the range, and bounds off the hour', () => {
    expect(eligible({}, project('Asia/Kolkata'))).toBe(false);
    expect(eligible({}, project('Australia/Adelaide'))).toBe(false);
    // Caracas was UTC-4:30 until May 2016, UTC-4 since.
    const caracas = project('America/Caracas');
    expect(
      canUseHourlyRollups(
        parseTrendRequest({ events: [{ id: 'a' }], date_from: '2016-04-01', date_to: '2016-04-10' }),
        caracas,
        NOW,
      ),
    ).toBe(false);
    expect(
      canUseHourlyRollups(
        parseTrendRequest({ events: [{ id: 'a' }], date_from: '2020-04-01', date_to: '2020-04-10' }),
        caracas,
        NOW,
      ),
    ).toBe(true);
    expect(eligible({ date_from: '2024-03-01T10:30:00', date_to: '2024-03-01T12:00:00', explicit_date: true })).toBe(
      false,
    );
    // compare_to: the previous hourly period ends at yesterday's 10:30 (current length from now), mid-hour.
    expect(eligible({ date_from: '-2h', interval: 'hour', compare_to: '-1d' })).toBe(false);
    expect(eligible({ date_from: '-2h', interval: 'hour', compare: true })).toBe(true);
  });

  it('computeTrendFromHourly refuses a query that needs raw events', () => {
    const query = parseTrendRequest({ events: [{ id: 'a', math: 'dau' }] });
    expect(() => computeTrendFromHourly(query, { hourly: [new Map()], project: project(), now: NOW })).toThrow(
      /raw events/,
    );
  });
});
