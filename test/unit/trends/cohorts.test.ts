import { describe, expect, it } from 'vitest';
import { trendToCsv } from '#shared/csv.ts';
import type { CohortSets } from '#shared/trends/cohort-filters.ts';
import { cohortRefs } from '#shared/trends/columnar/index.ts';
import { computeTrend, needsPersons, parseTrendRequest, type TrendEvent } from '#shared/trends/index.ts';
import { ev, expectValidation, project } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const at = '2020-01-10T09:00:00Z';
// p1 and p2 are in cohort 7, p2 and p3 in cohort 8; p4 in none. p1 has two distinct ids.
const EVENTS: TrendEvent[] = [
  ev('e', at, { person: '1', distinct: 'a' }),
  ev('e', at, { person: '1', distinct: 'a2' }),
  ev('e', at, { person: '2', distinct: 'b', props: { browser: 'Chrome' } }),
  ev('e', at, { person: '3', distinct: 'c', props: { browser: 'Chrome' } }),
  ev('e', at, { person: '4', distinct: 'd' }),
  ev('other', at, { person: '3', distinct: 'c' }),
];
const COHORTS: CohortSets = new Map([
  [7, { name: 'Power users', members: new Set([1, 2]) }],
  [8, { name: 'Chrome fans', members: new Set([2, 3]) }],
]);

function run(request: Record<string, unknown>, p = project()) {
  return computeTrend(parseTrendRequest({ date_from: '-1d', ...request }), {
    events: EVENTS,
    project: p,
    actions: [],
    now: new Date(NOW),
    cohorts: COHORTS,
  });
}
const count = (properties: unknown, extra: Record<string, unknown> = {}) =>
  run({ events: [{ id: 'e' }], properties, ...extra }).result[0]!.count;

describe('cohort property filters', () => {
  it('in (also when operator is absent), not_in, and the precalculated/static variants', () => {
    expect(count([{ type: 'cohort', key: 'id', value: 7, operator: 'in' }])).toBe(3);
    expect(count([{ type: 'cohort', key: 'id', value: 7 }])).toBe(3);
    expect(count([{ type: 'cohort', key: 'id', value: '8' }])).toBe(2);
    expect(count([{ type: 'cohort', key: 'id', value: 7, operator: 'not_in' }])).toBe(2);
    expect(count([{ type: 'precalculated-cohort', key: 'id', value: 8 }])).toBe(2);
    expect(count([{ type: 'static-cohort', key: 'id', value: 8, operator: 'not_in' }])).toBe(3);
  });

  it('combines with other filters in AND / OR groups, and in series filters', () => {
    const chrome = { type: 'event', key: 'browser', value: 'Chrome' };
    const in7 = { type: 'cohort', key: 'id', value: 7 };
    expect(count([in7, chrome])).toBe(1);
    expect(count({ type: 'OR', values: [in7, chrome] })).toBe(4);
    const series = run({ events: [{ id: 'e', properties: [{ type: 'cohort', key: 'id', value: 8 }] }] });
    expect(series.result[0]!.count).toBe(2);
  });

  it("applies in the project's test-account filters", () => {
    const p = project('UTC', 0, [{ type: 'cohort', key: 'id', value: 7, operator: 'not_in' }]);
    expect(run({ events: [{ id: 'e' }], filter_test_accounts: true }, p).result[0]!.count).toBe(2);
    expect(run({ events: [{ id: 'e' }], filter_test_accounts: false }, p).result[0]!.count).toBe(5);
  });

  it('counts distinct persons through the distinct-id join (dau)', () => {
    expect(count([{ type: 'cohort', key: 'id', value: 7 }], { events: [{ id: 'e', math: 'dau' }] })).toBe(2);
  });

  it('is echoed in PostHog shape and makes the query read persons', () => {
    const query = parseTrendRequest({
      events: [{ id: 'e' }],
      properties: [{ type: 'static-cohort', key: 'id', value: '7' }],
    });
    expect(needsPersons(query, project(), [])).toBe(true);
    const row = run({ events: [{ id: 'e' }], properties: [{ type: 'cohort', key: 'id', value: 7 }] }).result[0]!;
    expect(row.filter.properties).toEqual({
      type: 'AND',
      values: [{ key: 'id', value: 7, operator: 'in', type: 'cohort' }],
    });
  });

  it('needs a cohort id: 400 on the value', () => {
    expectValidation(
      () => parseTrendRequest({ events: [{ id: 'e' }], properties: [{ type: 'cohort', key: 'id', value: 'x' }] }),
      'properties__0__value',
    );
    expectValidation(
      () => parseTrendRequest({ events: [{ id: 'e', properties: [{ type: 'cohort', key: 'id' }] }] }),
      'events__0__properties__0__value',
    );
  });
});

describe('cohort breakdown', () => {
  it('one row per cohort, overlapping, labelled by name; "all" is all users; values are ids', () => {
    const res = run({ events: [{ id: 'e' }], breakdown_type: 'cohort', breakdown: [7, 8, 'all'] });
    expect(res.result.map((r) => [r.label, r.breakdown_value, r.count])).toEqual([
      ['Power users', 7, 3],
      ['Chrome fans', 8, 2],
      ['all users', 'all', 5],
    ]);
    expect(res.result[0]!.filter).toMatchObject({ breakdown: [7, 8, 'all'], breakdown_type: 'cohort' });
  });

  it('several series: cohort by cohort, each series in order, labelled "series - cohort"', () => {
    const res = run({
      events: [{ id: 'e' }, { id: 'other' }],
      breakdown_type: 'cohort',
      breakdown: '[8]',
    });
    expect(res.result.map((r) => [r.label, r.breakdown_value, r.count])).toEqual([
      ['e - Chrome fans', 8, 2],
      ['other - Chrome fans', 8, 1],
    ]);
  });

  it('keeps the other filters and maths in each row', () => {
    const res = run({
      events: [{ id: 'e', math: 'dau' }],
      properties: [{ key: 'browser', value: 'Chrome' }],
      breakdown_type: 'cohort',
      breakdown: [7, 'all'],
    });
    expect(res.result.map((r) => r.count)).toEqual([1, 2]);
  });

  it('refuses values that are not cohort ids, and more than 25 cohorts', () => {
    expectValidation(
      () => parseTrendRequest({ events: [{ id: 'e' }], breakdown_type: 'cohort', breakdown: ['x'] }),
      'breakdown',
    );
    expectValidation(
      () =>
        parseTrendRequest({
          events: [{ id: 'e' }],
          breakdown_type: 'cohort',
          breakdown: Array.from({ length: 26 }, (_, i) => i + 1),
        }),
      'breakdown',
    );
  });

  it('CSV rows name the series and the cohort', () => {
    const one = run({ events: [{ id: 'e' }], breakdown_type: 'cohort', breakdown: [7] });
    expect(trendToCsv({ ...one, is_cached: false, last_refresh: '', next: null } as never)).toContain(
      'e - Power users',
    );
    const two = run({ events: [{ id: 'e' }, { id: 'other' }], breakdown_type: 'cohort', breakdown: [8] });
    const csv = trendToCsv({ ...two, is_cached: false, last_refresh: '', next: null } as never);
    expect(csv).toContain('other - Chrome fans');
    expect(csv).not.toContain('other - other');
  });
});

describe('cohortRefs: every cohort a query names, with the field to name in a 400', () => {
  it('request, series and applied test-account filters, then the breakdown', () => {
    const query = parseTrendRequest({
      events: [{ id: 'e', properties: [{ type: 'cohort', key: 'id', value: 3 }] }],
      properties: { type: 'OR', values: [{ type: 'AND', values: [{ type: 'cohort', key: 'id', value: 2 }] }] },
      filter_test_accounts: true,
      breakdown_type: 'cohort',
      breakdown: [4, 'all'],
    });
    const p = project('UTC', 0, [{ type: 'cohort', key: 'id', value: 5, operator: 'not_in' }]);
    expect(cohortRefs(query, p)).toEqual([
      { id: 2, attr: 'properties__values__0__values__0__value' },
      { id: 3, attr: 'events__0__properties__0__value' },
      { id: 5, attr: 'filter_test_accounts__0__value' },
      { id: 4, attr: 'breakdown' },
    ]);
    expect(cohortRefs({ ...query, filterTestAccounts: false }, p).map((r) => r.id)).toEqual([2, 3, 4]);
  });
});

describe('cohorts beside groups (both lookups reach the engine)', () => {
  // Cohort 7: persons 1, 2; cohort 8: persons 2, 3, 5. acme is tech, globex retail, initech unidentified.
  const events: TrendEvent[] = [
    ev('e', at, { person: '1', distinct: 'a', props: { $group_0: 'acme' } }),
    ev('e', at, { person: '2', distinct: 'b', props: { $group_0: 'globex' } }),
    ev('e', at, { person: '3', distinct: 'c', props: { $group_0: 'acme' } }),
    ev('e', at, { person: '4', distinct: 'd' }),
    ev('e', at, { person: '5', distinct: 'f', props: { $group_0: 'initech' } }),
  ];
  const companies: Record<string, Record<string, unknown>> = {
    acme: { industry: 'tech' },
    globex: { industry: 'retail' },
  };
  const cohorts: CohortSets = new Map([
    [7, { name: 'Power users', members: new Set([1, 2]) }],
    [8, { name: 'Chrome fans', members: new Set([2, 3, 5]) }],
  ]);
  const compute = (request: Record<string, unknown>) =>
    computeTrend(parseTrendRequest({ date_from: '-1d', events: [{ id: 'e' }], ...request }), {
      events,
      project: project(),
      actions: [],
      now: new Date(NOW),
      groups: (index, key) => (index === 0 ? companies[key] : undefined),
      cohorts,
    });
  const tech = { type: 'group', group_type_index: 0, key: 'industry', value: 'tech' };

  it('a group filter ANDed with a cohort filter reads both', () => {
    expect(compute({ properties: [tech] }).result[0]!.count).toBe(2);
    expect(compute({ properties: [{ type: 'cohort', key: 'id', value: 7 }] }).result[0]!.count).toBe(2);
    expect(compute({ properties: [tech, { type: 'cohort', key: 'id', value: 7 }] }).result[0]!.count).toBe(1);
  });

  it('a cohort breakdown counts unique groups per cohort, group filters applied in each pass', () => {
    const uniqueGroups = [{ id: 'e', math: 'unique_group', math_group_type_index: 0 }];
    const byCohort = (properties: unknown[]) =>
      compute({ events: uniqueGroups, properties, breakdown: [7, 8], breakdown_type: 'cohort' }).result.map((r) => [
        r.breakdown_value,
        r.count,
      ]);
    expect(byCohort([])).toEqual([
      [7, 2],
      [8, 3],
    ]);
    expect(byCohort([tech])).toEqual([
      [7, 1],
      [8, 1],
    ]);
  });
});
