import { describe, expect, it } from 'vitest';
import { computeTrend, parseTrendRequest, seriesId } from '#shared/trends/index.ts';
import { ev, expectValidation, project, trend } from './helpers.ts';

const parse = (raw: Record<string, unknown>) => parseTrendRequest({ events: [{ id: 'e' }], ...raw });
const NOW = '2020-01-10T12:00:00Z';

describe('series', () => {
  it('needs at least one event or action', () => {
    const err = expectValidation(() => parseTrendRequest({}), 'events', 'required');
    expect(err.detail).toBe('At least one of events or actions is required.');
    expectValidation(() => parseTrendRequest({ events: [], actions: '[]' }), 'events', 'required');
  });

  it('refuses an unknown math', () => {
    expectValidation(() => parse({ events: [{ id: 'e' }, { id: 'e', math: 'bogus' }] }), 'events__1__math');
    expectValidation(
      () => parse({ events: [], actions: [{ id: 1, math: 'unique_group' }] }),
      'actions__0__math_group_type_index',
      'required',
    );
  });

  it('property math without math_property is required', () => {
    expectValidation(() => parse({ events: [{ id: 'e', math: 'sum' }] }), 'events__0__math_property', 'required');
    expectValidation(
      () => parse({ events: [{ id: 'e', math: 'p90', math_property: 'x', math_property_type: 'group' }] }),
      'events__0__math_property_type',
    );
  });

  it('refuses events that are not a JSON list, entries that are not objects, actions without an integer id', () => {
    expectValidation(() => parseTrendRequest({ events: '[{' }), 'events');
    expectValidation(() => parseTrendRequest({ events: { id: 'e' } }), 'events');
    expectValidation(() => parseTrendRequest({ events: ['e'] }), 'events__0');
    expectValidation(() => parseTrendRequest({ actions: [{ id: 'abc' }] }), 'actions__0__id');
  });

  it('refuses an action the project does not have (at compute time)', () => {
    expectValidation(
      () =>
        computeTrend(parseTrendRequest({ actions: [{ id: 7 }] }), {
          events: [],
          project: project(),
          actions: [],
          now: new Date(NOW),
        }),
      'actions__0__id',
    );
  });

  it('orders series by `order` (0 read as none), else actions then events', () => {
    const q = parseTrendRequest({
      events: [
        { id: 'x', order: 2 },
        { id: 'y', order: 0 },
      ],
      actions: [{ id: 1, order: 1 }],
    });
    expect(q.series.map(seriesId)).toEqual(['y', 1, 'x']);
    expect(parseTrendRequest({ actions: [{ id: 1 }], events: [{ id: 'x' }] }).series.map(seriesId)).toEqual([1, 'x']);
  });
});

describe('options', () => {
  it('breakdown_type cohort takes a list of ids; group needs breakdown_group_type_index', () => {
    expect(parse({ breakdown: '[1]', breakdown_type: 'cohort' }).breakdownFilter?.cohorts).toEqual([1]);
    expectValidation(() => parse({ breakdown: '["x"]', breakdown_type: 'cohort' }), 'breakdown');
    expectValidation(
      () => parse({ breakdown: 'name', breakdown_type: 'group' }),
      'breakdown_group_type_index',
      'required',
    );
    expectValidation(() => parse({ breakdown: 'x', breakdown_type: 'nonsense' }), 'breakdown_type', 'invalid_choice');
  });

  it('refuses breakdowns it cannot evaluate', () => {
    expectValidation(() => parse({ breakdown: 'nope(properties.x)', breakdown_type: 'hogql' }), 'breakdown');
    expectValidation(() => parse({ breakdown: 'uuid', breakdown_type: 'hogql' }), 'breakdown');
    expectValidation(() => parse({ breakdown: '$session_id', breakdown_type: 'session' }), 'breakdown');
    expectValidation(() => parse({ breakdown: '["a","b"]' }), 'breakdown');
    expectValidation(() => parse({ breakdown: 'x', breakdown_limit: 0 }), 'breakdown_limit');
  });

  it('a formula must parse and name existing series', () => {
    expectValidation(() => parse({ events: [{ id: 'a' }, { id: 'b' }], formula: 'A+C' }), 'formula');
    expectValidation(() => parse({ formula: '(A+' }), 'formula');
    expectValidation(() => parse({ formula: 'AB' }), 'formula');
    expectValidation(() => parse({ formula: 'A $ 2' }), 'formula');
    expect(parse({ formula: '  ' }).trendsFilter.formula).toBeNull();
  });

  it('interval must be a known value; display any string up to 100 characters (the legacy endpoint took unknown displays)', () => {
    expect(parse({ display: 'Pie' }).trendsFilter.display).toBe('Pie');
    expectValidation(() => parse({ display: 'x'.repeat(101) }), 'display');
    expect(parse({ display: 'x'.repeat(100) }).trendsFilter.display).toHaveLength(100);
    expectValidation(() => parse({ display: 3 }), 'display');
    expectValidation(() => parse({ display: { toString: 'ActionsPie' } }), 'display');
    expectValidation(() => parse({ interval: 'year' }), 'interval', 'invalid_choice');
    expect(parse({ interval: 'minute' }).interval).toBe('hour');
  });

  it('dates must parse', () => {
    expectValidation(() => parse({ date_from: 'yesterday' }), 'date_from');
    expectValidation(() => parse({ date_from: '2024-02-30' }), 'date_from');
    expectValidation(() => parse({ date_to: 'all' }), 'date_to');
    expectValidation(() => parse({ compare_to: 'mStart' }), 'compare_to');
    expect(parse({ date_from: 'all', date_to: '-1dEnd' }).dateRange.date_from).toBe('all');
  });

  it('aggregation_group_type_index is a group type index (0-4)', () => {
    expect(parse({ aggregation_group_type_index: '2' }).aggregation_group_type_index).toBe(2);
    expectValidation(() => parse({ aggregation_group_type_index: 5 }), 'aggregation_group_type_index');
    expectValidation(() => parse({ aggregation_group_type_index: 'x' }), 'aggregation_group_type_index');
  });

  it('an hourly range too long to answer', () => {
    expectValidation(
      () => trend({ events: [{ id: 'e' }], date_from: '-5y', interval: 'hour' }, [], { now: NOW }),
      'interval',
    );
  });

  it('an unknown project time zone', () => {
    expectValidation(
      () => trend({ events: [{ id: 'e' }] }, [], { now: NOW, project: project('Mars/Olympus') }),
      'timezone',
    );
  });

  it('accepts the GET form: JSON strings and string booleans/numbers', () => {
    const q = parseTrendRequest({
      events: JSON.stringify([{ id: 'e', math: 'dau' }]),
      properties: JSON.stringify([{ key: 'x', value: 1 }]),
      compare: 'true',
      filter_test_accounts: 'false',
      breakdown: 'browser',
      breakdown_limit: '5',
      display: 'ActionsTable',
    });
    expect(q).toMatchObject({
      compareFilter: { compare: true },
      filterTestAccounts: false,
      trendsFilter: { display: 'ActionsTable' },
      breakdownFilter: { property: 'browser', breakdown_limit: 5, source: 'event' },
    });
    expect(q.series[0]!.math).toBe('dau');
    expect(q.properties.values).toHaveLength(1);
    expectValidation(() => parse({ compare: 'maybe' }), 'compare');
  });
});

describe('property filters', () => {
  it('an invalid regex is a 400 on its value', () => {
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'regex', value: '(' }] }),
      'properties__0__value',
    );
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'not_regex', value: '[a-' }] }),
      'properties__0__value',
    );
  });

  it('errors inside groups and series name their path', () => {
    const group = { type: 'AND', values: [{ type: 'OR', values: [{ key: 'x', operator: 'regex', value: '(' }] }] };
    expectValidation(() => parse({ properties: group }), 'properties__values__0__values__0__value');
    expectValidation(
      () => parse({ events: [{ id: 'e', properties: [{ key: 'x', operator: 'gt', value: 'abc' }] }] }),
      'events__0__properties__0__value',
    );
    expectValidation(() => parse({ properties: { type: 'XOR', values: [] } }), 'properties__type');
  });

  it('between needs [min, max] numbers', () => {
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'between', value: [5] }] }),
      'properties__0__value',
    );
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'between', value: [10, 5] }] }),
      'properties__0__value',
    );
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'between', value: ['a', 5] }] }),
      'properties__0__value',
    );
  });

  it('unknown operators, unsupported types, missing keys and values', () => {
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'like', value: 1 }] }),
      'properties__0__operator',
    );
    const element = expectValidation(
      () => parse({ properties: [{ key: 'tag_name', value: 'a', type: 'element' }] }),
      'properties__0__type',
    );
    expect(element.detail).toMatch(/element/i);
    expectValidation(() => parse({ properties: [{ key: 'id', value: 'x', type: 'cohort' }] }), 'properties__0__value');
    expectValidation(() => parse({ properties: [{ value: 3 }] }), 'properties__0__key', 'required');
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'exact' }] }),
      'properties__0__value',
      'required',
    );
    expectValidation(
      () => parse({ properties: [{ key: 'x', operator: 'is_date_before', value: 'soon' }] }),
      'properties__0__value',
    );
  });

  it('stored test-account and action-step filters are checked when used', () => {
    const bad = project('UTC', 0, [{ key: 'email', operator: 'regex', value: '(' }]);
    expectValidation(
      () => trend({ events: [{ id: 'e' }], filter_test_accounts: true }, [ev('e', NOW)], { now: NOW, project: bad }),
      'filter_test_accounts__0__value',
    );
    const actions = [
      { id: 1, name: 'A', steps: [{ event: 'e', properties: [{ key: 'x', type: 'cohort', value: 1 }] }] },
    ];
    expectValidation(
      () => trend({ actions: [{ id: 1 }] }, [], { now: NOW, actions }),
      'actions__0__steps__0__properties__0__type',
    );
  });
});
