import { describe, expect, it } from 'vitest';
import { ev, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const RANGE = { date_from: '2020-01-08', date_to: '2020-01-10' };
// Jan 8: one event, Jan 10: three.
const EVENTS = [
  ev('e', '2020-01-08T01:00:00Z'),
  ev('e', '2020-01-10T01:00:00Z'),
  ev('e', '2020-01-10T02:00:00Z'),
  ev('e', '2020-01-10T03:00:00Z'),
];
const run = (extra: Record<string, unknown>, events = EVENTS, entity: Record<string, unknown> = {}) =>
  trend({ events: [{ id: 'e', ...entity }], ...RANGE, ...extra }, events, { now: NOW });

describe('time-series displays', () => {
  it.each([
    'ActionsLineGraph',
    'ActionsBar',
    'ActionsAreaGraph',
    'ActionsStackedBar',
    'ActionsUnstackedBar',
    'SomeFutureChart',
    undefined,
  ])('%s returns per-bucket data; count is the sum of data', (display) => {
    const s = run({ display }).result[0]!;
    expect(s.data).toEqual([1, 0, 3]);
    expect(s.count).toBe(4);
    expect(s.aggregated_value).toBeUndefined();
    expect(s.filter.display).toBe(display ?? 'ActionsLineGraph');
  });

  it('cumulative: data is the running sum; count is the period total (= the last point)', () => {
    const s = run({ display: 'ActionsLineGraphCumulative' }).result[0]!;
    expect(s.data).toEqual([1, 1, 4]);
    expect(s.count).toBe(4);
  });

  it('cumulative dau counts each person once, at first appearance', () => {
    const evs = [
      ev('e', '2020-01-08T01:00:00Z', { person: 'P1' }),
      ev('e', '2020-01-09T01:00:00Z', { person: 'P1' }),
      ev('e', '2020-01-09T02:00:00Z', { person: 'P2' }),
      ev('e', '2020-01-10T01:00:00Z', { person: 'P2' }),
    ];
    const s = run({ display: 'ActionsLineGraphCumulative' }, evs, { math: 'dau' }).result[0]!;
    expect(s.data).toEqual([1, 2, 2]);
    expect(s.count).toBe(2);
  });
});

describe('aggregated displays', () => {
  it.each(['ActionsTable', 'ActionsPie', 'ActionsBarValue', 'BoldNumber'])(
    '%s returns aggregated_value over the whole range and empty data',
    (display) => {
      const s = run({ display }).result[0]!;
      expect(s).toMatchObject({ aggregated_value: 4, data: [], labels: [], days: [], count: 0 });
    },
  );

  it('CalendarHeatmap is aggregated; it and BoldNumber drop a requested breakdown', () => {
    const evs = [ev('e', '2020-01-08T01:00:00Z', { props: { browser: 'Chrome' } }), ...EVENTS.slice(1)];
    for (const display of ['CalendarHeatmap', 'BoldNumber']) {
      const res = run({ display, breakdown: 'browser' }, evs);
      expect(res.result).toHaveLength(1);
      expect(res.result[0]).toMatchObject({ label: 'e', aggregated_value: 4, data: [], count: 0 });
      expect(res.result[0]!.breakdown_value).toBeUndefined();
      expect(res.result[0]!.filter.breakdown).toBeUndefined();
    }
    // The breakdown is still checked before it is dropped.
    expect(() => run({ display: 'BoldNumber', breakdown: 'browser', breakdown_type: 'nope' }, evs)).toThrow(
      'not a valid choice',
    );
  });

  it('with compare each period has its own aggregate', () => {
    const evs = [...EVENTS, ev('e', '2020-01-06T01:00:00Z')];
    const res = run({ display: 'BoldNumber', compare: true }, evs);
    expect(res.result.map((s) => [s.compare_label, s.aggregated_value])).toEqual([
      ['current', 4],
      ['previous', 1],
    ]);
  });
});

describe('response shape', () => {
  it('echoes the series definition and the effective filter', () => {
    const res = run(
      { interval: 'day', properties: [{ key: 'x', value: 'y' }] },
      [ev('e', '2020-01-08T01:00:00Z', { props: { x: 'y' } })],
      {
        custom_name: 'My events',
        properties: [{ key: 'x', operator: 'is_set' }],
      },
    );
    expect(res.timezone).toBe('UTC');
    const s = res.result[0]!;
    expect(s.label).toBe('My events');
    expect(s.action).toEqual({
      id: 'e',
      type: 'events',
      order: 0,
      name: 'e',
      custom_name: 'My events',
      math: 'total',
      math_property: null,
      math_property_type: null,
      properties: [{ key: 'x', operator: 'is_set', type: 'event' }],
    });
    expect(s.filter).toMatchObject({
      insight: 'TRENDS',
      events: [s.action],
      actions: [],
      properties: { type: 'AND', values: [{ key: 'x', value: 'y', operator: 'exact', type: 'event' }] },
      filter_test_accounts: false,
      date_from: '2020-01-08T00:00:00+00:00',
      date_to: '2020-01-10T23:59:59.999+00:00',
      interval: 'day',
      display: 'ActionsLineGraph',
      compare: false,
    });
    expect(s.breakdown_value).toBeUndefined();
    expect(s.compare).toBeUndefined();
  });

  it('minute interval is answered hourly (as the legacy endpoint did)', () => {
    const s = run({ interval: 'minute', date_from: '-1h', date_to: undefined }, []).result[0]!;
    expect(s.filter.interval).toBe('hour');
    expect(s.days).toEqual(['2020-01-10 11:00:00', '2020-01-10 12:00:00']);
  });
});
