import { describe, expect, it } from 'vitest';
import {
  eventPropertiesUsed,
  needsPersons,
  parseTrendRequest,
  type ActionDefinition,
  type ProjectSettings,
  type TrendEvent,
} from '#shared/trends/index.ts';
import { ev, project, trend } from './helpers.ts';

const NOW = '2024-05-10T12:00:00Z';
const pro = { plan: 'pro', email: 'a@example.com', amount: 100 };
// Two distinct ids of one person (merged), a second person, and events with event properties.
const EVENTS: TrendEvent[] = [
  ev('$pageview', '2024-05-08T10:00:00Z', {
    distinct: 'anon-1',
    person: 'p1',
    personProps: pro,
    props: { $browser: 'Chrome', amount: 3, $session_id: 's1' },
  }),
  ev('$pageview', '2024-05-08T11:00:00Z', {
    distinct: 'user-1',
    person: 'p1',
    personProps: pro,
    props: { $browser: 'Safari', amount: 5, $session_id: 's1' },
  }),
  ev('$pageview', '2024-05-09T10:00:00Z', {
    distinct: 'user-2',
    person: 'p2',
    personProps: { plan: 'free' },
    props: { $browser: 'Chrome', amount: 7, $session_id: 's2' },
  }),
  ev('signed up', '2024-05-09T11:00:00Z', {
    distinct: 'user-2',
    person: 'p2',
    personProps: { plan: 'free' },
    props: { $browser: 'Chrome', $session_id: 's2' },
  }),
];
/** What storage hands the engine when it skips person resolution: each distinct id its own person, no person properties. */
const WITHOUT_PERSONS = EVENTS.map((e) => ({ ...e, person_id: e.distinct_id, person_properties: {} }));

const ACTIONS: ActionDefinition[] = [
  {
    id: 1,
    name: 'pro views',
    steps: [{ event: '$pageview', properties: [{ key: 'plan', value: 'pro', type: 'person' }] }],
  },
  { id: 2, name: 'chrome views', steps: [{ event: '$pageview', properties: [{ key: '$browser', value: 'Chrome' }] }] },
];
const personTestFilters = project('UTC', 0, [
  { key: 'email', operator: 'not_icontains', value: 'example.com', type: 'person' },
]);
const eventTestFilters = project('UTC', 0, [{ key: '$browser', operator: 'is_not', value: 'Safari', type: 'event' }]);

const base = { date_from: '-7d', interval: 'day' };

/** What segments hand over: only the used event properties, and no distinct ids unless persons matter. */
function projected(request: Record<string, unknown>, settings: ProjectSettings): TrendEvent[] {
  const query = parseTrendRequest(request);
  const keys = eventPropertiesUsed(query, settings, ACTIONS);
  const persons = needsPersons(query, settings, ACTIONS);
  return EVENTS.map((e) => ({
    ...e,
    ...(persons ? {} : { distinct_id: '', person_id: '', person_properties: {} }),
    properties: Object.fromEntries(Object.entries(e.properties).filter(([k]) => keys.includes(k))),
  }));
}
const pageviews = (extra: Record<string, unknown> = {}) => ({ events: [{ id: '$pageview', ...extra }], ...base });

describe('which trends need persons', () => {
  it.each([
    ['dau', pageviews({ math: 'dau' })],
    ['weekly_active', pageviews({ math: 'weekly_active' })],
    ['monthly_active', pageviews({ math: 'monthly_active' })],
    ['avg_count_per_actor', pageviews({ math: 'avg_count_per_actor' })],
    ['max_count_per_actor', pageviews({ math: 'max_count_per_actor' })],
    [
      'a person property math',
      pageviews({ math: 'sum', math_property: 'amount', math_property_type: 'person_properties' }),
    ],
    ['a global person filter', { ...pageviews(), properties: [{ key: 'plan', value: 'pro', type: 'person' }] }],
    [
      'a person filter in a nested group',
      {
        ...pageviews(),
        properties: { type: 'AND', values: [{ type: 'OR', values: [{ key: 'plan', value: 'pro', type: 'person' }] }] },
      },
    ],
    ['a series person filter', pageviews({ properties: [{ key: 'plan', value: 'pro', type: 'person' }] })],
    ['a person breakdown', { ...pageviews(), breakdown: 'plan', breakdown_type: 'person' }],
    ['a hogql person breakdown', { ...pageviews(), breakdown: 'person.properties.plan', breakdown_type: 'hogql' }],
    ['an action step with a person filter', { actions: [{ id: 1 }], ...base }],
    [
      'a hogql filter on a person property',
      pageviews({ properties: [{ type: 'hogql', key: "person.properties.plan = 'pro'" }] }),
    ],
    [
      'a hogql breakdown over person_id',
      { ...pageviews(), breakdown: "concat('person ', person_id)", breakdown_type: 'hogql' },
    ],
    ['math hogql counting distinct persons', pageviews({ math: 'hogql', math_hogql: 'count(DISTINCT person_id)' })],
  ])('%s: needs persons, and the answer changes without them', (_name, request) => {
    const query = parseTrendRequest(request);
    expect(needsPersons(query, project(), ACTIONS)).toBe(true);
    const opts = { now: NOW, actions: ACTIONS };
    expect(trend(request, WITHOUT_PERSONS, opts).result).not.toEqual(trend(request, EVENTS, opts).result);
  });

  it('test-account filters on person properties need persons only when applied', () => {
    const request = { ...pageviews(), filter_test_accounts: true };
    expect(needsPersons(parseTrendRequest(request), personTestFilters, [])).toBe(true);
    expect(needsPersons(parseTrendRequest(pageviews()), personTestFilters, [])).toBe(false);
  });

  it.each([
    ['a total', pageviews()],
    [
      'the benchmark query (event filter, event breakdown)',
      pageviews({ properties: [{ key: '$browser', value: ['Chrome', 'Firefox'], operator: 'exact' }] }),
    ],
    ['an event breakdown', { ...pageviews(), breakdown: '$browser' }],
    ['a hogql event breakdown', { ...pageviews(), breakdown: 'properties.$browser', breakdown_type: 'hogql' }],
    ['unique sessions', pageviews({ math: 'unique_session' })],
    ['an event property math', pageviews({ math: 'p90', math_property: 'amount' })],
    ['a session breakdown', { ...pageviews(), breakdown: '$session_duration', breakdown_type: 'session' }],
    [
      'all events, compared, with a formula',
      { events: [{ id: null }, { id: 'signed up' }], formula: 'A - B', compare: true, ...base },
    ],
    ['an action step with event filters', { actions: [{ id: 2 }], ...base }],
  ])('%s: needs no persons, and skipping them changes nothing', (_name, request) => {
    expect(needsPersons(parseTrendRequest(request), project(), ACTIONS)).toBe(false);
    const opts = { now: NOW, actions: ACTIONS };
    expect(trend(request, WITHOUT_PERSONS, opts)).toEqual(trend(request, EVENTS, opts));
  });

  it('event test-account filters need no persons', () => {
    const request = { ...pageviews(), filter_test_accounts: true };
    expect(needsPersons(parseTrendRequest(request), eventTestFilters, [])).toBe(false);
    const opts = { now: NOW, project: eventTestFilters };
    expect(trend(request, WITHOUT_PERSONS, opts)).toEqual(trend(request, EVENTS, opts));
  });
});

describe('which event properties a trend uses', () => {
  const requests: [string, Record<string, unknown>, ProjectSettings][] = [
    [
      'event filter + breakdown',
      pageviews({ properties: [{ key: '$browser', value: ['Chrome'], operator: 'exact' }] }),
      project(),
    ],
    ['breakdown only', { ...pageviews(), breakdown: '$browser' }, project()],
    ['hogql event breakdown', { ...pageviews(), breakdown: 'properties.$browser', breakdown_type: 'hogql' }, project()],
    ['property math', pageviews({ math: 'p90', math_property: 'amount' }), project()],
    [
      'sum with a filter on another key',
      pageviews({
        math: 'sum',
        math_property: 'amount',
        properties: [{ key: '$browser', value: 'Safari', operator: 'is_not' }],
      }),
      project(),
    ],
    ['unique sessions', pageviews({ math: 'unique_session' }), project()],
    ['session breakdown', { ...pageviews(), breakdown: '$session_duration', breakdown_type: 'session' }, project()],
    [
      'global nested groups',
      {
        ...pageviews(),
        properties: {
          type: 'OR',
          values: [
            { type: 'AND', values: [{ key: 'amount', operator: 'gt', value: 4 }] },
            { key: '$browser', value: 'Safari' },
          ],
        },
      },
      project(),
    ],
    ['action with event filters', { actions: [{ id: 2 }], ...base }, project()],
    [
      'a hogql filter over two properties',
      pageviews({
        properties: [{ type: 'hogql', key: "properties.$browser = 'Chrome' AND toFloat(properties.amount) > 4" }],
      }),
      project(),
    ],
    [
      'a hogql breakdown over two properties',
      {
        ...pageviews(),
        breakdown: "concat(properties.$browser, '-', toString(properties.amount))",
        breakdown_type: 'hogql',
      },
      project(),
    ],
    ['math hogql', pageviews({ math: 'hogql', math_hogql: 'sum(toFloat(properties.amount))' }), project()],
    [
      'a hogql test-account filter',
      { ...pageviews(), filter_test_accounts: true },
      project('UTC', 0, [{ type: 'hogql', key: "properties.$browser != 'Safari'" }] as never),
    ],
    ['event test-account filters', { ...pageviews(), filter_test_accounts: true }, eventTestFilters],
    ['dau with a filter', pageviews({ math: 'dau', properties: [{ key: '$browser', value: 'Chrome' }] }), project()],
    [
      'person breakdown with an event filter',
      {
        ...pageviews({ properties: [{ key: 'amount', operator: 'lt', value: 6 }] }),
        breakdown: 'plan',
        breakdown_type: 'person',
      },
      project(),
    ],
    [
      'all events, formula, compare',
      {
        events: [{ id: null, math: 'sum', math_property: 'amount' }, { id: 'signed up' }],
        formula: 'A / B',
        compare: true,
        ...base,
      },
      project(),
    ],
  ];
  it.each(requests)(
    '%s: the used properties (and ids only when persons matter) give the same answer',
    (_name, request, settings) => {
      const opts = { now: NOW, actions: ACTIONS, project: settings };
      const full = trend(request, EVENTS, opts);
      expect(trend(request, projected(request, settings), opts)).toEqual(full);
      // Not vacuous: dropping every property changes each of these answers.
      const bare = EVENTS.map((e) => ({ ...e, properties: {} }));
      expect(trend(request, bare, opts)).not.toEqual(full);
    },
  );

  it('lists exactly the keys read', () => {
    const q = parseTrendRequest({
      ...pageviews({
        math: 'avg',
        math_property: 'amount',
        properties: [
          { key: '$os', value: 'iOS' },
          { key: 'plan', value: 'pro', type: 'person' },
        ],
      }),
      breakdown: '$browser',
    });
    expect(eventPropertiesUsed(q, project(), [])).toEqual(['$browser', '$os', 'amount']);
  });

  it('lists the columns HogQL expressions read: nested properties by their top-level key, $session_id, elements_chain', () => {
    const q = parseTrendRequest({
      ...pageviews({
        math: 'hogql',
        math_hogql: 'avg(toFloat(properties.price.amount))',
        properties: [{ type: 'hogql', key: "elements_chain != '' OR $session_id IS NOT NULL" }],
      }),
      breakdown: 'concat(properties.$os, person.properties.plan)',
      breakdown_type: 'hogql',
    });
    expect(eventPropertiesUsed(q, project(), [])).toEqual(['$elements_chain', '$os', '$session_id', 'price']);
    expect(needsPersons(q, project(), [])).toBe(true);
  });
});
