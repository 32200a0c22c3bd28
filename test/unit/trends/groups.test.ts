import { describe, expect, it } from 'vitest';
import { eventPropertiesUsed, groupTypesRead, needsPersons, parseTrendRequest } from '#shared/trends/index.ts';
import { ev, expectValidation, project, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const RANGE = { date_from: '2020-01-08', date_to: '2020-01-10' }; // 3 daily buckets: 8, 9, 10 Jan
const GROUPS = {
  '0:acme': { industry: 'tech', seats: 50 },
  '0:globex': { industry: 'retail', seats: 5 },
  '0:initech': { seats: 12 },
  '1:ws-1': { tier: 'gold' },
};
// Jan 8: acme (P1, P2), globex (P3), no company (P4); Jan 9: acme (P1), initech (P5), a company never identified (P6).
const events = [
  ev('e', '2020-01-08T01:00:00Z', { person: 'P1', props: { $group_0: 'acme', $group_1: 'ws-1' } }),
  ev('e', '2020-01-08T02:00:00Z', { person: 'P2', props: { $group_0: 'acme' } }),
  ev('e', '2020-01-08T03:00:00Z', { person: 'P3', props: { $group_0: 'globex' } }),
  ev('e', '2020-01-08T04:00:00Z', { person: 'P4', props: {} }),
  ev('e', '2020-01-09T01:00:00Z', { person: 'P1', props: { $group_0: 'acme' } }),
  ev('e', '2020-01-09T02:00:00Z', { person: 'P5', props: { $group_0: 'initech' } }),
  ev('e', '2020-01-09T03:00:00Z', { person: 'P6', props: { $group_0: 'hooli', $group_1: '' } }),
];
const run = (request: Record<string, unknown>) =>
  trend({ events: [{ id: 'e' }], ...RANGE, ...request }, events, { now: NOW, groups: GROUPS });

describe('group property filters', () => {
  const filtered = (filter: Record<string, unknown>) =>
    run({ properties: [{ type: 'group', group_type_index: 0, ...filter }] }).result[0]!.data;

  it('reads the property of the event’s group of that type', () => {
    expect(filtered({ key: 'industry', value: 'tech' })).toEqual([2, 1, 0]);
    expect(filtered({ key: 'seats', value: 10, operator: 'gt' })).toEqual([2, 2, 0]);
    expect(filtered({ key: 'industry', operator: 'icontains', value: 'TAIL' })).toEqual([1, 0, 0]);
    expect(filtered({ key: 'industry', operator: 'regex', value: '^t' })).toEqual([2, 1, 0]);
  });

  it('events without the group, or with a group never identified, lack the property', () => {
    expect(filtered({ key: 'industry', operator: 'is_not_set' })).toEqual([1, 2, 0]);
    expect(filtered({ key: 'industry', operator: 'is_not', value: 'tech' })).toEqual([2, 2, 0]);
    expect(filtered({ key: 'industry', operator: 'is_set' })).toEqual([3, 1, 0]);
  });

  it('in a series and in the test-account filters too', () => {
    const series = trend(
      {
        events: [{ id: 'e', properties: [{ type: 'group', group_type_index: 1, key: 'tier', value: 'gold' }] }],
        ...RANGE,
      },
      events,
      { now: NOW, groups: GROUPS },
    );
    expect(series.result[0]!.data).toEqual([1, 0, 0]);
    const testAccounts = trend({ events: [{ id: 'e' }], ...RANGE, filter_test_accounts: true }, events, {
      now: NOW,
      groups: GROUPS,
      project: project('UTC', 0, [
        { type: 'group', group_type_index: 0, key: 'industry', value: 'retail', operator: 'is_not' },
      ]),
    });
    expect(testAccounts.result[0]!.data).toEqual([3, 3, 0]);
  });

  it('needs a group_type_index from 0 to 4', () => {
    expectValidation(
      () => parseTrendRequest({ events: [{ id: 'e' }], properties: [{ type: 'group', key: 'x', value: 1 }] }),
      'properties__0__group_type_index',
      'required',
    );
    expectValidation(
      () =>
        parseTrendRequest({
          events: [{ id: 'e' }],
          properties: [{ type: 'group', group_type_index: 5, key: 'x', value: 1 }],
        }),
      'properties__0__group_type_index',
    );
  });
});

describe('group breakdown', () => {
  it('one row per value of the group property; events without the group are None', () => {
    const res = run({ breakdown_type: 'group', breakdown: 'industry', breakdown_group_type_index: 0 });
    // Equal volumes (3) rank by label: "None (i.e. no value)" before "tech".
    expect(res.result.map((r) => [r.breakdown_value, r.data])).toEqual([
      ['$$_posthog_breakdown_null_$$', [1, 2, 0]],
      ['tech', [2, 1, 0]],
      ['retail', [1, 0, 0]],
    ]);
    expect(res.result[0]!.filter).toMatchObject({ breakdown_type: 'group', breakdown_group_type_index: 0 });
  });

  it('needs breakdown_group_type_index', () => {
    expectValidation(
      () => parseTrendRequest({ events: [{ id: 'e' }], breakdown_type: 'group', breakdown: 'industry' }),
      'breakdown_group_type_index',
      'required',
    );
  });
});

describe('counting groups', () => {
  it('unique_group counts distinct $group_N, events without the group left out', () => {
    const s = run({ events: [{ id: 'e', math: 'unique_group', math_group_type_index: 0 }] }).result[0]!;
    expect(s.data).toEqual([2, 3, 0]);
    const bold = run({
      events: [{ id: 'e', math: 'unique_group', math_group_type_index: 0 }],
      display: 'BoldNumber',
    }).result[0]!;
    expect(bold.aggregated_value).toBe(4);
    // Type 1: one group; the empty `$group_1` is no group.
    expect(run({ events: [{ id: 'e', math: 'unique_group', math_group_type_index: 1 }] }).result[0]!.data).toEqual([
      1, 0, 0,
    ]);
  });

  it('unique_group cumulative counts each group once, at its first bucket (as dau)', () => {
    const s = run({
      events: [{ id: 'e', math: 'unique_group', math_group_type_index: 0 }],
      display: 'ActionsLineGraphCumulative',
    }).result[0]!;
    expect(s.data).toEqual([2, 4, 4]);
  });

  it('unique_group needs math_group_type_index', () => {
    expectValidation(
      () => parseTrendRequest({ events: [{ id: 'e', math: 'unique_group' }] }),
      'events__0__math_group_type_index',
      'required',
    );
  });

  it('aggregation_group_type_index: dau counts groups, total only events with the group', () => {
    const agg = { aggregation_group_type_index: 0 };
    expect(run({ ...agg, events: [{ id: 'e', math: 'dau' }] }).result[0]!.data).toEqual([2, 3, 0]);
    expect(run({ ...agg, events: [{ id: 'e' }] }).result[0]!.data).toEqual([3, 3, 0]);
    // Per-actor counts per group: Jan 8 acme 2, globex 1 → max 2.
    expect(run({ ...agg, events: [{ id: 'e', math: 'max_count_per_actor' }] }).result[0]!.data).toEqual([2, 1, 0]);
    // weekly_active over groups: by Jan 9, acme, globex, initech, hooli.
    expect(run({ ...agg, events: [{ id: 'e', math: 'weekly_active' }] }).result[0]!.data).toEqual([2, 4, 4]);
    // Without it, persons.
    expect(run({ events: [{ id: 'e', math: 'dau' }] }).result[0]!.data).toEqual([4, 3, 0]);
  });

  it('math_group_type_index on dau counts that type’s groups (PostHog’s is_groups_math)', () => {
    expect(run({ events: [{ id: 'e', math: 'dau', math_group_type_index: 0 }] }).result[0]!.data).toEqual([2, 3, 0]);
  });
});

describe('what storage reads', () => {
  const settings = project();
  it('group filters, breakdowns and group counts read $group_N columns; group properties are loaded by type', () => {
    const query = parseTrendRequest({
      events: [{ id: 'e', math: 'unique_group', math_group_type_index: 2 }],
      properties: [{ type: 'group', group_type_index: 1, key: 'tier', value: 'gold' }],
      breakdown_type: 'group',
      breakdown: 'industry',
      breakdown_group_type_index: 0,
    });
    expect(eventPropertiesUsed(query, settings, [])).toEqual(['$group_0', '$group_1', '$group_2']);
    expect(groupTypesRead(query, settings, [])).toEqual([0, 1]);
    expect(needsPersons(query, settings, [])).toBe(false);
    expect(
      needsPersons(
        parseTrendRequest({ events: [{ id: 'e', math: 'dau' }], aggregation_group_type_index: 0 }),
        settings,
        [],
      ),
    ).toBe(false);
  });
});
