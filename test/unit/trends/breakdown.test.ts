import { describe, expect, it } from 'vitest';
import { BREAKDOWN_NULL_VALUE, BREAKDOWN_OTHER_VALUE } from '#shared/trends/index.ts';
import { ev, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const RANGE = { date_from: '2020-01-08', date_to: '2020-01-10' };
const browser = (b: unknown, day = 8, hour = 1, opts: Parameters<typeof ev>[2] = {}) =>
  ev('e', `2020-01-${String(day).padStart(2, '0')}T${String(hour).padStart(2, '0')}:00:00Z`, {
    ...opts,
    props: b === undefined ? {} : { browser: b, ...opts.props },
  });
const run = (extra: Record<string, unknown>, events: ReturnType<typeof ev>[]) =>
  trend({ events: [{ id: 'e' }], ...RANGE, breakdown: 'browser', ...extra }, events, { now: NOW });
const rows = (res: ReturnType<typeof trend>) => res.result.map((s) => [s.label, s.breakdown_value, s.count]);

describe('event breakdown', () => {
  const events = [
    browser('Chrome', 8),
    browser('Chrome', 8, 2),
    browser('Chrome', 10),
    browser('Firefox', 9),
    browser('Firefox', 9, 2),
    browser(undefined, 8),
  ];

  it('one row per value, largest first; with one series the label is the value', () => {
    const res = run({}, events);
    expect(rows(res)).toEqual([
      ['Chrome', 'Chrome', 3],
      ['Firefox', 'Firefox', 2],
      ['None (i.e. no value)', BREAKDOWN_NULL_VALUE, 1],
    ]);
    expect(res.result.map((s) => s.data)).toEqual([
      [2, 0, 1],
      [0, 2, 0],
      [1, 0, 0],
    ]);
  });

  it('missing, null and empty-string values are one None row', () => {
    expect(rows(run({}, [browser(undefined), browser(null), browser('')]))).toEqual([
      ['None (i.e. no value)', BREAKDOWN_NULL_VALUE, 3],
    ]);
  });

  it('breakdown_limit keeps the top values and puts the rest in Other, which is sorted by its volume like any row', () => {
    const more = [...events, browser('Edge'), browser('Safari')];
    // Volumes: Chrome 3, Firefox 2, and None, Edge, Safari 1 each (ties by label: 'Edge' < 'None (i.e. no value)' < 'Safari').
    // Limit 2: Other = None + Edge + Safari = 3, level with Chrome: 'Chrome' < 'Other (i.e. ...)' by label.
    expect(rows(run({ breakdown_limit: 2 }, more))).toEqual([
      ['Chrome', 'Chrome', 3],
      ['Other (i.e. all remaining values)', BREAKDOWN_OTHER_VALUE, 3],
      ['Firefox', 'Firefox', 2],
    ]);
    // Limit 3: the top 3 are Chrome, Firefox, Edge; Other = None + Safari = 2, after Firefox (2) by label.
    expect(rows(run({ breakdown_limit: 3 }, more))).toEqual([
      ['Chrome', 'Chrome', 3],
      ['Firefox', 'Firefox', 2],
      ['Other (i.e. all remaining values)', BREAKDOWN_OTHER_VALUE, 2],
      ['Edge', 'Edge', 1],
    ]);
    expect(rows(run({ breakdown_limit: '2', breakdown_hide_other_aggregation: true }, more)).map((r) => r[1])).toEqual([
      'Chrome',
      'Firefox',
    ]);
  });

  it('None and Other have no special place: ordered by volume, ties by label', () => {
    // None 3, Chrome 2, Edge/Firefox/Opera 1 each; limit 2 keeps None and Chrome, Other = 3 (ties with None:
    // 'None (i.e. no value)' < 'Other (i.e. all remaining values)').
    const evs = [
      browser(undefined, 8, 1),
      browser(undefined, 8, 2),
      browser(null, 9),
      browser('Chrome', 8, 3),
      browser('Chrome', 10),
      browser('Edge'),
      browser('Firefox'),
      browser('Opera'),
    ];
    expect(rows(run({ breakdown_limit: 2 }, evs))).toEqual([
      ['None (i.e. no value)', BREAKDOWN_NULL_VALUE, 3],
      ['Other (i.e. all remaining values)', BREAKDOWN_OTHER_VALUE, 3],
      ['Chrome', 'Chrome', 2],
    ]);
    // Other above every value: Chrome 2, Firefox, Edge, Safari 1 each, limit 1 -> Other 3, Chrome 2.
    const other = [browser('Chrome'), browser('Chrome', 9), browser('Firefox'), browser('Edge'), browser('Safari')];
    expect(rows(run({ breakdown_limit: 1 }, other)).map((r) => [r[1], r[2]])).toEqual([
      [BREAKDOWN_OTHER_VALUE, 3],
      ['Chrome', 2],
    ]);
    // A None row level with values sits among them by its label.
    const tied = [browser('Chrome'), browser('Chrome', 9), browser(undefined), browser('Edge'), browser('Safari')];
    expect(rows(run({}, tied)).map((r) => r[0])).toEqual(['Chrome', 'Edge', 'None (i.e. no value)', 'Safari']);
  });

  it('the default limit is 25', () => {
    // v00 x3, v01..v26 x1: the top 25 are v00..v24, Other holds v25 and v26 (2) and sorts right after v00.
    const many = [
      browser('v00', 8, 2),
      browser('v00', 8, 3),
      ...Array.from({ length: 27 }, (_, i) => browser(`v${String(i).padStart(2, '0')}`)),
    ];
    const res = run({}, many);
    expect(res.result).toHaveLength(26);
    expect(res.result[0]).toMatchObject({ breakdown_value: 'v00', count: 3 });
    expect(res.result[1]).toMatchObject({ breakdown_value: BREAKDOWN_OTHER_VALUE, count: 2 });
    expect(res.result[2]!.breakdown_value).toBe('v01');
    expect(res.result[25]!.breakdown_value).toBe('v24');
  });

  it('Other applies the math to its events: one person on two other values is one daily user', () => {
    const evs = [
      browser('Chrome', 8, 1, { person: 'P2' }),
      browser('Chrome', 8, 2, { person: 'P2' }),
      browser('Chrome', 8, 3, { person: 'P2' }),
      browser('Firefox', 8, 1, { person: 'P3' }),
      browser('Firefox', 8, 2, { person: 'P3' }),
      browser('Edge', 8, 1, { person: 'P1' }),
      browser('Safari', 8, 2, { person: 'P1' }),
    ];
    const res = trend({ events: [{ id: 'e', math: 'dau' }], ...RANGE, breakdown: 'browser', breakdown_limit: 2 }, evs, {
      now: NOW,
    });
    expect(res.result.map((s) => [s.breakdown_value, s.data])).toEqual([
      ['Chrome', [1, 0, 0]],
      ['Firefox', [1, 0, 0]],
      [BREAKDOWN_OTHER_VALUE, [1, 0, 0]],
    ]);
  });

  it('with several series rows are grouped by series and labelled "<series> - <value>"', () => {
    const evs = [
      ev('$pageview', '2020-01-08T01:00:00Z', { props: { browser: 'Chrome' } }),
      ev('$pageview', '2020-01-08T02:00:00Z', { props: { browser: 'Chrome' } }),
      ev('$pageview', '2020-01-08T03:00:00Z', { props: { browser: 'Firefox' } }),
      ev('signup', '2020-01-08T01:00:00Z', { props: { browser: 'Safari' } }),
      ev('signup', '2020-01-08T02:00:00Z', { props: { browser: 'Chrome' } }),
    ];
    const res = trend(
      { events: [{ id: '$pageview', custom_name: 'Views' }, { id: 'signup' }], ...RANGE, breakdown: 'browser' },
      evs,
      { now: NOW },
    );
    expect(res.result.map((s) => [s.label, s.count])).toEqual([
      ['Views - Chrome', 2],
      ['Views - Firefox', 1],
      ['signup - Chrome', 1],
      ['signup - Safari', 1],
    ]);
  });

  it('with several series each sorts its own rows (None and Other included) and series keep the request order', () => {
    // signup is listed first, $pageview second; $pageview's None row (2) outranks its Chrome row (1).
    const evs = [
      ev('$pageview', '2020-01-08T01:00:00Z'),
      ev('$pageview', '2020-01-08T02:00:00Z'),
      ev('$pageview', '2020-01-08T03:00:00Z', { props: { browser: 'Chrome' } }),
      ev('signup', '2020-01-08T01:00:00Z', { props: { browser: 'Safari' } }),
      ev('signup', '2020-01-08T02:00:00Z', { props: { browser: 'Safari' } }),
      ev('signup', '2020-01-08T03:00:00Z'),
    ];
    const res = trend({ events: [{ id: 'signup' }, { id: '$pageview' }], ...RANGE, breakdown: 'browser' }, evs, {
      now: NOW,
    });
    expect(res.result.map((s) => [s.label, s.count])).toEqual([
      ['signup - Safari', 2],
      ['signup - None (i.e. no value)', 1],
      ['$pageview - None (i.e. no value)', 2],
      ['$pageview - Chrome', 1],
    ]);
  });

  it('booleans break down as "true"/"false" and numbers as their text', () => {
    const evs = [
      ev('e', '2020-01-08T01:00:00Z', { props: { flag: true } }),
      ev('e', '2020-01-08T02:00:00Z', { props: { flag: true } }),
      ev('e', '2020-01-08T03:00:00Z', { props: { flag: false } }),
    ];
    expect(rows(run({ breakdown: 'flag' }, evs)).map((r) => r[1])).toEqual(['true', 'false']);
    const nums = [
      ev('e', '2020-01-08T01:00:00Z', { props: { n: 2.5 } }),
      ev('e', '2020-01-08T01:00:00Z', { props: { n: 1 } }),
    ];
    expect(rows(run({ breakdown: 'n' }, nums)).map((r) => r[1])).toEqual(['1', '2.5']);
  });

  it('a breakdown with no matching events returns an empty result', () => {
    expect(run({}, []).result).toEqual([]);
    expect(run({ formula: 'A' }, []).result).toEqual([]);
  });

  it('WorldMap without a breakdown breaks down by country, up to 300 values, as aggregates', () => {
    const evs = ['US', 'US', 'DE'].map((c, i) =>
      ev('e', `2020-01-08T0${i}:00:00Z`, { props: { $geoip_country_code: c } }),
    );
    const res = trend({ events: [{ id: 'e' }], ...RANGE, display: 'WorldMap' }, evs, { now: NOW });
    expect(res.result.map((s) => [s.breakdown_value, s.aggregated_value])).toEqual([
      ['US', 2],
      ['DE', 1],
    ]);
    expect(res.result[0]!.filter).toMatchObject({
      breakdown: '$geoip_country_code',
      breakdown_type: 'event',
      breakdown_limit: 300,
    });
  });
});

describe('other breakdown types', () => {
  it('person breakdowns use the current person properties', () => {
    const evs = [
      ev('e', '2020-01-08T01:00:00Z', { props: { plan: 'event-level' }, personProps: { plan: 'pro' } }),
      ev('e', '2020-01-09T01:00:00Z', { personProps: { plan: 'pro' } }),
      ev('e', '2020-01-09T02:00:00Z', { personProps: { plan: 'free' } }),
    ];
    expect(rows(run({ breakdown: 'plan', breakdown_type: 'person' }, evs))).toEqual([
      ['pro', 'pro', 2],
      ['free', 'free', 1],
    ]);
  });

  it('session breakdown: each event gets its session duration (first to last event of the session, any event)', () => {
    const evs = [
      ev('e', '2020-01-08T10:00:00Z', { props: { $session_id: 's1' } }),
      ev('e', '2020-01-08T10:02:30Z', { props: { $session_id: 's1' } }),
      ev('other', '2020-01-08T10:05:00Z', { props: { $session_id: 's1' } }),
      ev('e', '2020-01-08T11:00:00Z', { props: { $session_id: 's2' } }),
      ev('e', '2020-01-08T12:00:00Z'),
    ];
    // None and '0' both hold one event: by label '0' < 'None (i.e. no value)'.
    expect(rows(run({ breakdown: '$session_duration', breakdown_type: 'session' }, evs))).toEqual([
      ['300', '300', 2],
      ['0', '0', 1],
      ['None (i.e. no value)', BREAKDOWN_NULL_VALUE, 1],
    ]);
  });

  it('hogql breakdowns read properties.X and person.properties.X', () => {
    const evs = [ev('e', '2020-01-08T01:00:00Z', { props: { browser: 'Chrome' }, personProps: { plan: 'pro' } })];
    expect(rows(run({ breakdown: 'properties.browser', breakdown_type: 'hogql' }, evs))).toEqual([
      ['Chrome', 'Chrome', 1],
    ]);
    expect(rows(run({ breakdown: "properties['browser']", breakdown_type: 'hogql' }, evs))).toEqual([
      ['Chrome', 'Chrome', 1],
    ]);
    expect(rows(run({ breakdown: 'person.properties.plan', breakdown_type: 'hogql' }, evs))).toEqual([
      ['pro', 'pro', 1],
    ]);
  });

  it('a single-element JSON list breakdown (GET) is that property', () => {
    const evs = [browser('Chrome')];
    expect(rows(run({ breakdown: '["browser"]' }, evs))).toEqual([['Chrome', 'Chrome', 1]]);
    expect(rows(run({ breakdown: '"browser"' }, evs))).toEqual([['Chrome', 'Chrome', 1]]);
  });
});
