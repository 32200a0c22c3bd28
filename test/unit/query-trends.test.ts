import { describe, expect, it } from 'vitest';
import type { ComputedTrend } from '#shared/domain/trends.ts';
import { formulaLabelOf, trendsModelOf } from '#shared/domain/query/trends-model.ts';
import { trendsQueryResponse } from '#shared/domain/query/trends.ts';
import { ValidationError } from '#shared/errors.ts';
import { parseWith } from '#shared/http/validation.ts';
import { queryBody } from '#shared/schemas/query/index.ts';
import type { TrendsQuery } from '#shared/schemas/query/trends.ts';
import { computeTrend, parseTrendRequest, resolveDateRange, seriesId, type TrendsModel } from '#shared/trends/index.ts';
import { ev, project } from './trends/helpers.ts';

/** The query as the validation middleware hands it to the runner (the body schema, attr paths from `query`). */
function validated(query: Record<string, unknown>): TrendsQuery {
  return parseWith(queryBody, { query: { kind: 'TrendsQuery', ...query } }, null).query as TrendsQuery;
}

const modelOf = (query: Record<string, unknown>) => trendsModelOf(validated(query));

/** The question the engine answers, without the names its errors give the caller's fields (they differ by front end by design). */
function question(model: TrendsModel) {
  const { attrs: _, ...rest } = model;
  const breakdown = model.breakdownFilter && { ...model.breakdownFilter, attr: undefined };
  return {
    ...rest,
    breakdownFilter: breakdown,
    series: model.series.map(({ attr: _a, idAttr: _i, ...series }) => series),
  };
}

/** The model of the legacy request, as a question. */
const legacyQuestion = (request: Record<string, unknown>) => question(parseTrendRequest(request));

function errorOf(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('expected a ValidationError');
}

/** A query the schema takes and the model refuses. */
function engineErrorOf(query: Record<string, unknown>): { attr: string | null; detail: string } {
  const valid = validated(query);
  const error = errorOf(() => trendsModelOf(valid));
  return { attr: error.attr, detail: error.detail };
}

const pageviews = { kind: 'EventsNode', event: '$pageview' };

describe('TrendsQuery -> the engine model', () => {
  it('maps every supported field: the same question as the legacy request with those fields', () => {
    const model = modelOf({
      series: [
        {
          kind: 'EventsNode',
          event: '$pageview',
          custom_name: 'Views',
          math: 'sum',
          math_property: 'amount',
          math_property_type: 'event_properties',
          properties: [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }],
        },
        { kind: 'ActionsNode', id: 7, math: 'dau' },
        { kind: 'EventsNode', event: null },
      ],
      dateRange: { date_from: '-30d', date_to: '2024-03-12', explicitDate: true },
      interval: 'week',
      properties: { type: 'AND', values: [{ type: 'OR', values: [{ key: 'plan', value: 'pro', type: 'person' }] }] },
      filterTestAccounts: true,
      breakdownFilter: {
        breakdown: '$os',
        breakdown_type: 'event',
        breakdown_limit: 10,
        breakdown_hide_other_aggregation: true,
      },
      compareFilter: { compare: true, compare_to: '-1w' },
      trendsFilter: { display: 'ActionsTable', formula: 'A + B' },
    });
    expect(question(model)).toEqual(
      legacyQuestion({
        events: [
          {
            id: '$pageview',
            type: 'events',
            order: 0,
            custom_name: 'Views',
            math: 'sum',
            math_property: 'amount',
            math_property_type: 'event_properties',
            properties: [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }],
          },
          { id: null, type: 'events', order: 2 },
        ],
        actions: [{ id: 7, type: 'actions', order: 1, math: 'dau' }],
        date_from: '-30d',
        date_to: '2024-03-12',
        explicit_date: true,
        interval: 'week',
        properties: { type: 'AND', values: [{ type: 'OR', values: [{ key: 'plan', value: 'pro', type: 'person' }] }] },
        filter_test_accounts: true,
        display: 'ActionsTable',
        formula: 'A + B',
        breakdown: '$os',
        breakdown_type: 'event',
        breakdown_limit: 10,
        breakdown_hide_other_aggregation: true,
        compare: true,
        compare_to: '-1w',
      }),
    );
  });

  it('takes an action id given as digits, as PostHog does', () => {
    expect(modelOf({ series: [{ kind: 'ActionsNode', id: '12' }] }).series.map(seriesId)).toEqual([12]);
  });

  it('keeps the series order of the query across events and actions, so formula letters follow it', () => {
    const model = modelOf({
      series: [{ kind: 'ActionsNode', id: 3 }, pageviews, { kind: 'ActionsNode', id: 4 }],
    });
    expect(model.series.map((s) => [s.kind, seriesId(s)])).toEqual([
      ['ActionsNode', 3],
      ['EventsNode', '$pageview'],
      ['ActionsNode', 4],
    ]);
  });

  it('asks the engine the same question as the equivalent legacy request', () => {
    const model = modelOf({
      series: [{ ...pageviews, math: 'dau', properties: [{ key: '$browser', value: 'Chrome' }] }],
      dateRange: { date_from: '-14d' },
      interval: 'day',
      properties: [{ key: 'plan', value: 'pro', type: 'person' }],
      breakdownFilter: { breakdowns: [{ property: 'plan', type: 'person' }], breakdown_limit: 5 },
      compareFilter: { compare: true },
      trendsFilter: { display: 'ActionsLineGraphCumulative', showLegend: true },
    });
    const legacy = {
      events: [{ id: '$pageview', math: 'dau', properties: [{ key: '$browser', value: 'Chrome' }] }],
      date_from: '-14d',
      interval: 'day',
      properties: [{ key: 'plan', value: 'pro', type: 'person' }],
      breakdown: 'plan',
      breakdown_type: 'person',
      breakdown_limit: 5,
      compare: true,
      display: 'ActionsLineGraphCumulative',
    };
    expect(question(model)).toEqual(legacyQuestion(legacy));
  });

  it('leaves out what the query leaves out, so the engine applies its defaults (-7d, day, total)', () => {
    expect(question(modelOf({ series: [pageviews] }))).toEqual(legacyQuestion({ events: [{ id: '$pageview' }] }));
  });

  it('appends fixedProperties to the series filters (both must match)', () => {
    const model = modelOf({
      series: [{ ...pageviews, properties: [{ key: 'a', value: 1 }], fixedProperties: [{ key: 'b', value: 2 }] }],
    });
    expect(question(model)).toEqual(
      legacyQuestion({
        events: [
          {
            id: '$pageview',
            properties: [
              { key: 'a', value: 1 },
              { key: 'b', value: 2 },
            ],
          },
        ],
      }),
    );
  });

  it('ignores compare_to unless compare is on, as PostHog does (the legacy engine would compare)', () => {
    expect(modelOf({ series: [pageviews], compareFilter: { compare_to: '-1y' } }).compareFilter).toEqual({
      compare: false,
      compare_to: null,
    });
  });

  it('takes formulaNodes over formulas over formula, and labels the row with its custom_name', () => {
    const bothQuery = {
      series: [pageviews, pageviews],
      trendsFilter: { formula: 'A', formulas: ['B'], formulaNodes: [{ formula: 'A / B', custom_name: 'Ratio' }] },
    };
    expect(modelOf(bothQuery).trendsFilter.formula).toBe('A / B');
    expect(formulaLabelOf(validated(bothQuery))).toBe('Ratio');
    const listQuery = { series: [pageviews, pageviews], trendsFilter: { formula: 'A', formulas: ['A - B'] } };
    expect([modelOf(listQuery).trendsFilter.formula, formulaLabelOf(validated(listQuery))]).toEqual([
      'A - B',
      'Formula (A - B)',
    ]);
    expect(modelOf({ series: [pageviews], trendsFilter: { formula: ' ' } }).trendsFilter.formula).toBeNull();
  });

  it('uses a breakdowns entry as the breakdown (it wins over breakdown), and refuses two', () => {
    const one = modelOf({
      series: [pageviews],
      breakdownFilter: { breakdown: '$browser', breakdowns: [{ property: '$os' }] },
    });
    expect([one.breakdownFilter?.breakdown, one.breakdownFilter?.breakdown_type]).toEqual(['$os', 'event']);
    const two = errorOf(() =>
      modelOf({
        series: [pageviews],
        breakdownFilter: { breakdowns: [{ property: '$os' }, { property: '$browser', type: 'event' }] },
      }),
    );
    expect(two.attr).toBe('query__breakdownFilter__breakdowns');
    expect(two.detail).toMatch(/more than one property.*2 entries, at most 1/);
  });

  it.each([
    [{ trendsFilter: { formulas: ['A', 'A * 2'] } }, 'query__trendsFilter__formulas', /one formula per query.*has 2/],
    [
      { trendsFilter: { formulaNodes: [{ formula: 'A' }, { formula: 'A' }] } },
      'query__trendsFilter__formulaNodes',
      /one formula/,
    ],
    [{ interval: 'minute' }, 'query__interval', /Minute intervals/],
    [{ samplingFactor: 0.1 }, 'query__samplingFactor', /Sampling/],
    [{ conversionGoal: { actionId: 1 } }, 'query__conversionGoal', /Conversion goals/],
    [{ trendsFilter: { smoothingIntervals: 7 } }, 'query__trendsFilter__smoothingIntervals', /moving average/],
    [{ trendsFilter: { display: 'BoxPlot' } }, 'query__trendsFilter__display', /BoxPlot/],
    [
      { breakdownFilter: { breakdown: '$current_url', breakdown_normalize_url: true } },
      'query__breakdownFilter__breakdown_normalize_url',
      /normalize_url/,
    ],
    [
      { breakdownFilter: { breakdown: 'n', breakdown_histogram_bin_count: 10 } },
      'query__breakdownFilter__breakdown_histogram_bin_count',
      /Histogram/,
    ],
    [
      { trendsFilter: { breakdown_histogram_bin_count: 10 } },
      'query__trendsFilter__breakdown_histogram_bin_count',
      /Histogram/,
    ],
    [
      { breakdownFilter: { breakdowns: [{ property: '$current_url', normalize_url: true }] } },
      'query__breakdownFilter__breakdowns__0__normalize_url',
      /normalize_url/,
    ],
    [
      { breakdownFilter: { breakdowns: [{ property: 'n', histogram_bin_count: 5 }] } },
      'query__breakdownFilter__breakdowns__0__histogram_bin_count',
      /Histogram/,
    ],
    [
      { series: [pageviews, { ...pageviews, math_multiplier: 100 }] },
      'query__series__1__math_multiplier',
      /math_multiplier/,
    ],
    [
      {
        series: [
          { ...pageviews, math: 'sum', math_property: 'price', math_property_revenue_currency: { static: 'EUR' } },
        ],
      },
      'query__series__0__math_property_revenue_currency',
      /currency/,
    ],
  ])('refuses a field that would change the numbers: %j -> %s', (patch, attr, detail) => {
    const error = errorOf(() => modelOf({ series: [pageviews], ...patch }));
    expect(error).toMatchObject({ status: 400, attr });
    expect(error.detail).toMatch(detail);
  });

  it('accepts the neutral values of those fields', () => {
    expect(
      question(
        modelOf({
          series: [{ ...pageviews, math_multiplier: 1, math_group_type_index: 0 }],
          samplingFactor: 1,
          conversionGoal: null,
          trendsFilter: { smoothingIntervals: 1 },
          breakdownFilter: { breakdown_normalize_url: false },
        }),
      ),
    ).toEqual(question(modelOf({ series: [pageviews] })));
  });

  it('ignores presentation fields and unknown fields (PostHog clients send many)', () => {
    const plain = modelOf({ series: [pageviews], trendsFilter: { display: 'ActionsBar' } });
    const decorated = modelOf({
      series: [{ ...pageviews, name: '$pageview', math_hogql: 'count()', limit: 100, response: {} }],
      trendsFilter: {
        display: 'ActionsBar',
        showLegend: true,
        showValuesOnSeries: true,
        aggregationAxisFormat: 'numeric',
        decimalPlaces: 2,
        hiddenLegendIndexes: [0],
        showPercentStackView: true,
        yAxisScaleType: 'log10',
        resultCustomizations: { x: { color: 'red' } },
        goalLines: [{ label: 'goal', value: 10 }],
      },
      dataColorTheme: 1,
      modifiers: { debug: true },
      tags: { productKey: 'x' },
      version: 2,
      aFieldFromTheFuture: { nested: true },
    });
    expect(decorated).toEqual(plain);
  });
});

describe('TrendsQuery validation errors point into the query', () => {
  it.each([
    [{ series: [{ ...pageviews, math: 5 }] }, 'query__series__0__math', 'Not a valid string.'],
    [
      { series: [pageviews, { kind: 'ActionsNode', id: 'seven' }] },
      'query__series__1__id',
      'A valid integer is required.',
    ],
    [
      { series: [{ kind: 'DataWarehouseNode', table_name: 't' }] },
      'query__series__0__kind',
      /Unsupported series kind "DataWarehouseNode".*EventsNode, ActionsNode/,
    ],
    [{}, 'query__series', 'This field is required.'],
    [{ series: [] }, 'query__series', 'A TrendsQuery needs at least one series.'],
    [{ series: [{ kind: 'ActionsNode', id: 1.5 }] }, 'query__series__0__id', 'A valid integer is required.'],
    [{ series: [pageviews], properties: 'x' }, 'query__properties', /list of property filters or a property group/],
    [{ series: [pageviews], dateRange: { date_from: 7 } }, 'query__dateRange__date_from', 'Not a valid string.'],
    [
      { series: [pageviews], breakdownFilter: { breakdowns: [{ type: 'event' }] } },
      'query__breakdownFilter__breakdowns__0__property',
      'This field is required.',
    ],
    [
      { series: [pageviews], compareFilter: { compare: 'yes' } },
      'query__compareFilter__compare',
      'Must be a valid boolean.',
    ],
    [{ series: Array.from({ length: 51 }, () => pageviews) }, 'query__series', /at most 50 series/],
    [
      { series: [{ ...pageviews, properties: { type: 'AND', values: [] } }] },
      'query__series__0__properties',
      'Must be a list of property filters.',
    ],
    [
      { series: [pageviews], trendsFilter: { formulaNodes: [{ formula: 'A', custom_name: 'x'.repeat(1001) }] } },
      'query__trendsFilter__formulaNodes__0__custom_name',
      'Ensure this field has no more than 1000 characters.',
    ],
  ])('%j -> 400 on %s', (query, attr, detail) => {
    const error = errorOf(() => validated(query));
    expect(error.attr).toBe(attr);
    expect(error.detail).toMatch(detail);
  });

  it.each([
    [{ series: [pageviews, { ...pageviews, math: 'nonsense' }] }, 'query__series__1__math'],
    [
      {
        series: [
          { kind: 'ActionsNode', id: 1 },
          { ...pageviews, math: 'unique_group' },
        ],
      },
      'query__series__1__math_group_type_index',
    ],
    [{ series: [{ ...pageviews, math: 'dau', math_group_type_index: 5 }] }, 'query__series__0__math_group_type_index'],
    [{ series: [{ ...pageviews, math: 'sum' }] }, 'query__series__0__math_property'],
    [
      { series: [{ ...pageviews, math: 'sum', math_property: 'x', math_property_type: 'group' }] },
      'query__series__0__math_property_type',
    ],
    [
      { series: [pageviews, { ...pageviews, properties: [{ key: 'a', value: 1, operator: 'nearly' }] }] },
      'query__series__1__properties__0__operator',
    ],
    [
      {
        series: [
          {
            ...pageviews,
            properties: [{ key: 'a', value: 1 }],
            fixedProperties: [{ key: 'b', type: 'cohort', value: 'x' }],
          },
        ],
      },
      'query__series__0__fixedProperties__0__value',
    ],
    [
      {
        series: [pageviews],
        properties: { type: 'AND', values: [{ type: 'OR', values: [{ key: 'c', type: 'cohort' }] }] },
      },
      'query__properties__values__0__values__0__value',
    ],
    [{ series: [pageviews], properties: [{ value: 1 }] }, 'query__properties__0__key'],
    [{ series: [pageviews], dateRange: { date_from: 'yesterday-ish' } }, 'query__dateRange__date_from'],
    [{ series: [pageviews], dateRange: { date_to: 'all' } }, 'query__dateRange__date_to'],
    [{ series: [pageviews], interval: 'fortnight' }, 'query__interval'],
    [{ series: [pageviews], trendsFilter: { formula: 'A + C' } }, 'query__trendsFilter__formula'],
    [{ series: [pageviews], trendsFilter: { formulas: ['A +'] } }, 'query__trendsFilter__formulas__0'],
    [
      { series: [pageviews], trendsFilter: { formulaNodes: [{ formula: 'B' }] } },
      'query__trendsFilter__formulaNodes__0__formula',
    ],
    [
      { series: [pageviews], breakdownFilter: { breakdown: 'x', breakdown_type: 'cohort' } },
      'query__breakdownFilter__breakdown',
    ],
    [
      { series: [pageviews], breakdownFilter: { breakdowns: [{ property: 'x', type: 'group' }] } },
      'query__breakdownFilter__breakdowns__0__group_type_index',
    ],
    [{ series: [pageviews], breakdownFilter: { breakdown: ['a', 'b'] } }, 'query__breakdownFilter__breakdown'],
    [
      { series: [pageviews], breakdownFilter: { breakdowns: [{ property: 'email', type: 'hogql' }] } },
      'query__breakdownFilter__breakdowns__0__property',
    ],
    [
      { series: [pageviews], breakdownFilter: { breakdown: 'x', breakdown_limit: 5000 } },
      'query__breakdownFilter__breakdown_limit',
    ],
    [{ series: [pageviews], compareFilter: { compare: true, compare_to: '+1w' } }, 'query__compareFilter__compare_to'],
    [{ series: [pageviews], aggregation_group_type_index: 7 }, 'query__aggregation_group_type_index'],
  ])('the engine refuses %j: 400 on %s', (query, attr) => {
    expect(engineErrorOf(query).attr).toBe(attr);
  });

  it('names the query in the engine errors about a series, the store, or nothing', () => {
    const model = modelOf({
      series: [pageviews, { kind: 'ActionsNode', id: 9 }, { kind: 'EventsNode', event: 'x' }],
      filterTestAccounts: true,
    });
    expect(model.series.map((s) => s.idAttr)).toEqual([
      'query__series__0__event',
      'query__series__1__id',
      'query__series__2__event',
    ]);
    expect(model.attrs.series).toBe('query__series');
    const at = new Date('2024-03-12T12:00:00Z');
    const run =
      (settings = project(), actions = [{ id: 9, name: 'a', steps: [{ event: 'x' }] }]) =>
      () =>
        computeTrend(model, { events: [], project: settings, actions, now: at });
    expect(errorOf(run(project(), [])).attr).toBe('query__series__1__id');
    const badStep = [{ id: 9, name: 'a', steps: [{ event: 'x' }, { event: 'y', properties: [{ value: 1 } as any] }] }];
    expect(errorOf(run(project(), badStep)).attr).toBe('query__series__1__steps__1__properties__0__key');
    const badTestFilter = project('UTC', 0, [
      { key: 'a', value: 1 },
      { key: 'b', value: 1 },
      { key: 'c', operator: 'gt', value: 'x' },
    ]);
    expect(errorOf(run(badTestFilter)).attr).toBe('query__filterTestAccounts');
    expect(errorOf(run(project('Mars/Olympus'))).attr).toBeNull();
    expect(engineErrorOf({ series: [pageviews, { ...pageviews, event: 'x', properties: [{}] }] }).attr).toBe(
      'query__series__1__properties__0__key',
    );
  });
});

describe('TrendsQuery response', () => {
  const now = new Date('2024-03-12T12:00:00Z');
  const events = [
    ev('$pageview', '2024-03-11T10:00:00Z', { props: { $browser: 'Chrome' } }),
    ev('$pageview', '2024-03-11T11:00:00Z', { props: { $browser: 'Chrome' } }),
    ev('$pageview', '2024-03-12T10:00:00Z', { props: { $browser: 'Safari' } }),
    ev('$pageview', '2024-03-12T10:00:00Z', { props: { $browser: 'Firefox' } }),
    ev('signup', '2024-03-04T10:00:00Z'),
  ];

  function respond(query: Record<string, unknown>) {
    const validQuery = validated(query);
    const model = trendsModelOf(validQuery);
    const parsed = model.breakdownFilter
      ? { ...model, breakdownFilter: { ...model.breakdownFilter, breakdown_hide_other_aggregation: false } }
      : model;
    const settings = project();
    const computed: ComputedTrend = {
      query: parsed,
      range: resolveDateRange(parsed, settings, now),
      response: computeTrend(parsed, { events, project: settings, actions: [], now }),
      source: 'events',
      timings: [{ k: 'compute', t: 0.001 }],
    };
    return trendsQueryResponse(validQuery, computed) as any;
  }

  it('answers PostHog TrendsQueryResponse fields: results, timezone, hasMore, resolved_date_range, timings', () => {
    const body = respond({
      series: [{ ...pageviews, custom_name: 'Views' }],
      dateRange: { date_from: '2024-03-11', date_to: '2024-03-12' },
    });
    expect(Object.keys(body).sort()).toEqual(['hasMore', 'resolved_date_range', 'results', 'timezone', 'timings']);
    expect(body.resolved_date_range).toEqual({
      date_from: '2024-03-11T00:00:00+00:00',
      date_to: '2024-03-12T23:59:59.999+00:00',
    });
    expect(body.hasMore).toBe(false);
    const [row] = body.results;
    expect(row).toMatchObject({
      data: [2, 2],
      labels: ['11-Mar-2024', '12-Mar-2024'],
      days: ['2024-03-11', '2024-03-12'],
      count: 4,
      label: '$pageview',
      order: 0,
      action: { id: '$pageview', order: 0, custom_name: 'Views', math: 'total', math_group_type_index: null },
      filter: { insight: 'TRENDS', date_from: '2024-03-11T00:00:00+00:00', interval: 'day', entity_type: 'events' },
    });
  });

  it('lists every current-period row before the previous-period rows, as PostHog does', () => {
    const body = respond({
      series: [pageviews, { kind: 'EventsNode', event: 'signup' }],
      dateRange: { date_from: '-1d' },
      compareFilter: { compare: true },
    });
    expect(body.results.map((r: any) => [r.label, r.compare_label])).toEqual([
      ['$pageview', 'current'],
      ['signup', 'current'],
      ['$pageview', 'previous'],
      ['signup', 'previous'],
    ]);
  });

  it('labels breakdown rows by value (one series) or "name - value", and says hasMore when values were left out', () => {
    const query = {
      series: [pageviews],
      dateRange: { date_from: '2024-03-11', date_to: '2024-03-12' },
      breakdownFilter: { breakdown: '$browser', breakdown_limit: 1 },
    };
    const body = respond(query);
    expect(body.results.map((r: any) => [r.label, r.breakdown_value, r.count])).toEqual([
      ['Chrome', 'Chrome', 2],
      ['Other (i.e. all remaining values)', '$$_posthog_breakdown_other_$$', 2],
    ]);
    expect(body.hasMore).toBe(true);
    const hidden = respond({
      ...query,
      breakdownFilter: { ...query.breakdownFilter, breakdown_hide_other_aggregation: true },
    });
    expect(hidden.results.map((r: any) => r.breakdown_value)).toEqual(['Chrome']);
    expect(hidden.hasMore).toBe(true);
    const two = respond({ ...query, series: [pageviews, { kind: 'EventsNode', event: 'signup' }] });
    expect(two.results[0].label).toBe('$pageview - Chrome');
  });

  it('labels a formula row with its custom_name, and answers aggregated displays without labels', () => {
    const body = respond({
      series: [pageviews, pageviews],
      dateRange: { date_from: '2024-03-11', date_to: '2024-03-12' },
      trendsFilter: { display: 'ActionsPie', formulaNodes: [{ formula: 'A + B', custom_name: 'Double' }] },
    });
    expect(body.results).toHaveLength(1);
    expect(body.results[0]).toMatchObject({ label: 'Double', aggregated_value: 8, action: null, order: 0, count: 0 });
    expect(body.results[0]).not.toHaveProperty('labels');
  });
});
