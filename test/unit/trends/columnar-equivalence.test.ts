/**
 * The columnar engine (shared/trends/columnar/) against the row engine it replaced (kept as the
 * reference in test/support/row-engine/): random events, persons, filters, breakdowns, maths,
 * intervals, time zones, compare and formulas, through the same request parser. Answers must be
 * equal (numbers within 1e-9 relative: sums are folded per value, so their rounding may differ), and
 * refusals the same 400.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { encodeSegment } from '#shared/segments/codec.ts';
import {
  batchOfRows,
  batchOfSegment,
  computeTrendFromColumns,
  distinctIdsOnly,
  type ColumnSource,
  type EventRow,
  type PersonJoin,
} from '#shared/trends/columnar/index.ts';
import {
  computeTrend,
  parseTrendRequest,
  type ActionDefinition,
  type ProjectSettings,
  type TrendEvent,
  type TrendResponse,
} from '#shared/trends/index.ts';
import { computeTrendByRows } from '../../support/row-engine/compute.ts';

type Infer<A> = A extends fc.Arbitrary<infer T> ? T : never;

const NOW = Date.parse('2024-03-20T15:30:00Z');
const DAY = 86_400_000;
const NAMES = ['$pageview', 'signup', 'click'];
const PEOPLE = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];
const TIMEZONES = ['UTC', 'America/New_York', 'Europe/London', 'Asia/Kolkata', 'Asia/Tokyo'];

const propertyValue = fc.constantFrom<unknown>(
  'Chrome',
  'Firefox',
  'Safari',
  'chrome',
  '',
  null,
  1,
  '1',
  true,
  'true',
  2.5,
  { a: 1 },
  undefined,
);
const amount = fc.constantFrom<unknown>(1, 2, 3.5, '4', '-2', 'x', true, null, undefined, 0, 1e3);
const session = fc.constantFrom<unknown>('s1', 's2', 's3', '', 7, undefined, null);

const eventArb = fc.record({
  event: fc.constantFrom(...NAMES),
  offset: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: -16 * DAY, max: DAY }) },
    { weight: 1, arbitrary: fc.integer({ min: -100 * DAY, max: DAY }) },
  ),
  distinct: fc.constantFrom(...PEOPLE),
  browser: propertyValue,
  os: fc.constantFrom<unknown>('Mac', 'Windows', 'Linux', undefined, ''),
  amount,
  session,
});

/** Persons: some distinct ids merged into one person; current properties per person. */
const personsArb = fc.record({
  merged: fc.boolean(),
  plans: fc.array(fc.constantFrom<unknown>('free', 'pro', undefined, 3), {
    minLength: PEOPLE.length,
    maxLength: PEOPLE.length,
  }),
  ages: fc.array(fc.constantFrom<unknown>(20, 30, '41', undefined, 'old'), {
    minLength: PEOPLE.length,
    maxLength: PEOPLE.length,
  }),
});

// ---------------------------------------------------------------------------------------------
// Random HogQL expressions over the events above (strings, numbers, booleans, several columns,
// timestamp), each evaluated by the columnar engine per dictionary entry / tuple / row and by the row
// engine per event. Functions that fail on a row's value are left out: the columnar engine evaluates
// every dictionary entry, including rows no series keeps, so a failure would differ by design.

const letrec = fc.letrec((tie) => ({
  str: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(
      'properties.$browser',
      'properties.$os',
      'event',
      'distinct_id',
      'person_id',
      'person.properties.plan',
      'properties.$session_id',
      "'Chrome'",
      "''",
    ),
    tie('str').map((s) => `lower(${s})`),
    tie('str').map((s) => `upper(${s})`),
    fc.tuple(tie('str'), tie('str')).map(([a, b]) => `concat(${a}, ' ', ${b})`),
    tie('num').map((n) => `toString(${n})`),
    tie('str').map((s) => `coalesce(${s}, 'none')`),
    fc.tuple(tie('bool'), tie('str'), tie('str')).map(([c, a, b]) => `if(${c}, ${a}, ${b})`),
    tie('str').map((s) => `substring(${s}, 1, 3)`),
    tie('str').map((s) => `replaceAll(${s}, 'o', '0')`),
  ),
  num: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(
      'properties.amount',
      'toFloat(properties.amount)',
      'person.properties.age',
      'toHour(timestamp)',
      'toDayOfWeek(timestamp)',
      'toDayOfMonth(timestamp)',
      '1',
      '2.5',
    ),
    tie('str').map((s) => `length(${s})`),
    fc.tuple(tie('num'), tie('num')).map(([a, b]) => `(${a} + ${b})`),
    tie('num').map((n) => `(${n} * 2)`),
    tie('num').map((n) => `round(toFloat(${n}), 1)`),
    fc.tuple(tie('num'), tie('num')).map(([a, b]) => `greatest(${a}, ${b})`),
  ),
  bool: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('str').map((s) => `${s} = 'Chrome'`),
    tie('str').map((s) => `${s} ILIKE '%fi%'`),
    tie('str').map((s) => `${s} IN ('Mac', 'Linux', 'pro')`),
    tie('str').map((s) => `${s} IS NULL`),
    tie('str').map((s) => `${s} IS NOT NULL`),
    tie('str').map((s) => `${s} =~ '^[CS]'`),
    tie('num').map((n) => `${n} > 2`),
    tie('num').map((n) => `${n} <= 3.5`),
    fc.constantFrom("event = 'signup'", 'toHour(timestamp) >= 9', "properties.$browser != ''"),
    fc.tuple(tie('bool'), tie('bool')).map(([a, b]) => `(${a} AND ${b})`),
    fc.tuple(tie('bool'), tie('bool')).map(([a, b]) => `(${a} OR ${b})`),
    tie('bool').map((b) => `NOT (${b})`),
  ),
}));

const hogqlValue = fc.oneof(letrec.str, letrec.num, letrec.bool);
const hogqlBoolean = letrec.bool;
const hogqlAggregate = fc.oneof(
  fc.constant('count()'),
  letrec.num.map((n) => `sum(toFloat(${n}))`),
  letrec.num.map((n) => `avg(toFloat(${n}))`),
  letrec.num.map((n) => `max(toFloat(${n}))`),
  letrec.num.map((n) => `min(toFloat(${n})) - 1`),
  letrec.num.map((n) => `median(toFloat(${n}))`),
  letrec.num.map((n) => `quantile(0.9)(toFloat(${n}))`),
  letrec.str.map((s) => `uniq(${s})`),
  fc.constant('count(DISTINCT person_id)'),
  letrec.bool.map((b) => `countIf(${b})`),
  fc.tuple(letrec.num, letrec.bool).map(([n, b]) => `sumIf(toFloat(${n}), ${b})`),
  letrec.num.map((n) => `round(avg(toFloat(${n})), 2)`),
  letrec.num.map((n) => `sum(toFloat(${n})) / count()`),
);

const filterArb = fc.oneof(
  { weight: 2, arbitrary: hogqlBoolean.map((key) => ({ type: 'hogql', key })) },
  fc.record({
    key: fc.constantFrom('$browser', '$os', 'amount'),
    value: fc.constantFrom<unknown>('Chrome', ['Chrome', 'Safari'], 1, 'true', 'Mac'),
    operator: fc.constantFrom('exact', 'is_not'),
  }),
  fc.record({
    key: fc.constantFrom('$browser', '$os'),
    value: fc.constantFrom('chr', 'i', 'fire'),
    operator: fc.constantFrom('icontains', 'not_icontains'),
  }),
  fc.record({
    key: fc.constantFrom('$browser', '$os'),
    value: fc.constantFrom('^C', 'i.*x$', '(?i)saf'),
    operator: fc.constantFrom('regex', 'not_regex'),
  }),
  fc.record({
    key: fc.constantFrom('amount'),
    value: fc.constantFrom(0, 1, '2', 3.5),
    operator: fc.constantFrom('gt', 'gte', 'lt', 'lte'),
  }),
  fc.record({
    key: fc.constantFrom('$browser', 'amount', '$session_id'),
    operator: fc.constantFrom('is_set', 'is_not_set'),
  }),
  fc.record({
    key: fc.constantFrom('plan', 'age'),
    value: fc.constantFrom<unknown>('pro', 'free', 30, ['free', 3]),
    operator: fc.constantFrom('exact', 'is_not'),
    type: fc.constant('person'),
  }),
  fc.record({
    key: fc.constant('age'),
    value: fc.constantFrom(25, '30'),
    operator: fc.constantFrom('gt', 'lte'),
    type: fc.constant('person'),
  }),
);

const groupArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.array(filterArb, { maxLength: 2 }) },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constantFrom('AND', 'OR'),
      values: fc.array(
        fc.oneof(
          filterArb,
          fc.record({ type: fc.constantFrom('AND', 'OR'), values: fc.array(filterArb, { maxLength: 2 }) }),
        ),
        { maxLength: 3 },
      ),
    }),
  },
);

const MATHS = [
  'total',
  'hogql',
  'hogql',
  'dau',
  'weekly_active',
  'monthly_active',
  'unique_session',
  'sum',
  'avg',
  'min',
  'max',
  'median',
  'p75',
  'p90',
  'p95',
  'p99',
  'avg_count_per_actor',
  'max_count_per_actor',
  'min_count_per_actor',
  'median_count_per_actor',
  'p90_count_per_actor',
];

const seriesArb = fc.record({
  id: fc.constantFrom<string | null>('$pageview', 'signup', 'click', null),
  math: fc.constantFrom(...MATHS),
  personMath: fc.boolean(),
  mathHogql: hogqlAggregate,
  properties: groupArb,
});

const queryArb = fc.record({
  series: fc.array(seriesArb, { minLength: 1, maxLength: 3 }),
  action: fc.option(fc.record({ math: fc.constantFrom(...MATHS), mathHogql: hogqlAggregate, properties: groupArb }), {
    nil: undefined,
  }),
  properties: groupArb,
  range: fc.constantFrom<Record<string, unknown>>(
    { date_from: '-7d' },
    { date_from: '-14d', interval: 'day' },
    { date_from: '-30d', interval: 'week' },
    { date_from: '-24h', interval: 'hour' },
    { date_from: '-48h', interval: 'hour' },
    { date_from: '-3m', interval: 'month' },
    { date_from: '-24h', interval: 'day' },
    { date_from: 'mStart' },
    { date_from: '2024-02-25', date_to: '2024-03-12', interval: 'day' },
    { date_from: '-2w', interval: 'day' },
  ),
  breakdown: fc
    .constantFrom<Record<string, unknown> | undefined>(
      undefined,
      { breakdown: '$browser' },
      { breakdown: '$os', breakdown_limit: 2 },
      { breakdown: '$browser', breakdown_limit: 1, breakdown_hide_other_aggregation: true },
      { breakdown: 'plan', breakdown_type: 'person' },
      { breakdown: '$session_duration', breakdown_type: 'session' },
      { breakdown: 'amount', breakdown_limit: 3 },
    )
    .chain((plain) =>
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(plain) },
        {
          weight: 2,
          arbitrary: fc
            .tuple(hogqlValue, fc.constantFrom(undefined, 2, 4))
            .map(([breakdown, limit]) => ({ breakdown, breakdown_type: 'hogql', breakdown_limit: limit })),
        },
      ),
    ),
  compare: fc.boolean(),
  display: fc.constantFrom(
    'ActionsLineGraph',
    'ActionsLineGraph',
    'ActionsLineGraphCumulative',
    'ActionsTable',
    'BoldNumber',
  ),
  formula: fc.boolean(),
  testAccounts: fc.boolean(),
});

function buildEvents(raw: Infer<typeof eventArb>[], persons: Infer<typeof personsArb>): TrendEvent[] {
  const personOf = (d: string) => (persons.merged && (d === 'u2' || d === 'u3') ? 'p-merged' : d);
  const propsOf = PEOPLE.map((_, i) => {
    const props: Record<string, unknown> = {};
    if (persons.plans[i] !== undefined) props.plan = persons.plans[i];
    if (persons.ages[i] !== undefined) props.age = persons.ages[i];
    return props;
  });
  return raw.map((r, i) => {
    const properties: Record<string, unknown> = {};
    if (r.browser !== undefined) properties.$browser = r.browser;
    if (r.os !== undefined) properties.$os = r.os;
    if (r.amount !== undefined) properties.amount = r.amount;
    if (r.session !== undefined) properties.$session_id = r.session;
    const timestamp = i % 3 === 0 ? NOW + r.offset : new Date(NOW + r.offset).toISOString();
    // Merged persons share the properties of the merged person (the first id's).
    const personIndex = personOf(r.distinct) === 'p-merged' ? 1 : PEOPLE.indexOf(r.distinct);
    return {
      event: r.event,
      distinct_id: r.distinct,
      person_id: personOf(r.distinct),
      timestamp,
      properties,
      person_properties: propsOf[personIndex]!,
    };
  });
}

function request(q: Infer<typeof queryArb>): Record<string, unknown> {
  const events = q.series.map((s, order) => ({
    id: s.id,
    order,
    math: s.math,
    ...(s.math === 'hogql' ? { math_hogql: s.mathHogql } : {}),
    ...(['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'].includes(s.math)
      ? {
          math_property: s.personMath ? 'age' : 'amount',
          ...(s.personMath ? { math_property_type: 'person_properties' } : {}),
        }
      : {}),
    ...(s.properties === undefined ? {} : { properties: s.properties }),
  }));
  const actions = q.action
    ? [
        {
          id: 1,
          order: events.length,
          math: q.action.math,
          ...(q.action.math === 'hogql' ? { math_hogql: q.action.mathHogql } : {}),
          ...(['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'].includes(q.action.math)
            ? { math_property: 'amount' }
            : {}),
          ...(q.action.properties === undefined ? {} : { properties: q.action.properties }),
        },
      ]
    : [];
  return {
    events,
    actions,
    ...(q.properties === undefined ? {} : { properties: q.properties }),
    ...q.range,
    ...(q.breakdown ?? {}),
    compare: q.compare,
    display: q.display,
    filter_test_accounts: q.testAccounts,
    ...(q.formula && events.length + actions.length >= 2 ? { formula: 'A + B * 2 - A / B' } : {}),
  };
}

const ACTIONS: ActionDefinition[] = [
  {
    id: 1,
    name: 'Signed up or clicked on Chrome',
    steps: [
      { event: 'signup' },
      { event: 'click', properties: [{ key: '$browser', value: 'Chrome' }] },
      { event: null, properties: [{ key: 'amount', operator: 'gt', value: 2 }] },
    ],
  },
];

function outcome(run: () => TrendResponse): { ok: TrendResponse } | { error: string } {
  try {
    return { ok: run() };
  } catch (error) {
    if (error instanceof ValidationError) return { error: `${error.attr}: ${error.message}` };
    throw error;
  }
}

/** Deep equality with numbers equal within 1e-9 relative. */
function expectSame(actual: unknown, expected: unknown, path = '$'): void {
  if (typeof actual === 'number' && typeof expected === 'number') {
    const close =
      actual === expected || Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(actual), Math.abs(expected));
    if (!close) throw new Error(`${path}: columnar ${actual}, rows ${expected}`);
    return;
  }
  if (Array.isArray(actual) && Array.isArray(expected)) {
    if (actual.length !== expected.length)
      throw new Error(`${path}: columnar has ${actual.length} entries, rows ${expected.length}`);
    for (const [i, v] of actual.entries()) expectSame(v, expected[i], `${path}[${i}]`);
    return;
  }
  if (actual && expected && typeof actual === 'object' && typeof expected === 'object') {
    expect(Object.keys(actual).sort(), path).toEqual(Object.keys(expected).sort());
    for (const k of Object.keys(actual))
      expectSame((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], `${path}.${k}`);
    return;
  }
  expect(actual, path).toEqual(expected);
}

describe('the columnar engine answers like the row engine', () => {
  it('on random events, filters, breakdowns, maths, HogQL expressions, intervals, time zones, compare and formulas', () => {
    fc.assert(
      fc.property(
        fc.array(eventArb, { maxLength: 80 }),
        personsArb,
        queryArb,
        fc.constantFrom(...TIMEZONES),
        fc.constantFrom<0 | 1>(0, 1),
        fc.option(hogqlBoolean, { nil: undefined }),
        (raw, persons, q, timezone, weekStart, hogqlTestAccounts) => {
          const events = buildEvents(raw, persons);
          const project: ProjectSettings = {
            timezone,
            week_start_day: weekStart,
            test_account_filters: [
              { key: '$os', value: 'Linux', operator: 'is_not' },
              { key: 'plan', value: 'free', operator: 'is_not', type: 'person' },
              ...(hogqlTestAccounts === undefined ? [] : [{ type: 'hogql', key: hogqlTestAccounts }]),
            ] as ProjectSettings['test_account_filters'],
          };
          const req = request(q);
          const input = {
            events,
            project,
            actions: ACTIONS,
            now: new Date(NOW),
            firstEventAt: new Date(NOW - 45 * DAY),
          };
          const byRows = outcome(() => computeTrendByRows(parseTrendRequest(req), input));
          const columnar = outcome(() => computeTrend(parseTrendRequest(req), input));
          (globalThis as any).stats ??= { ok: 0, err: 0, rows: 0, nonzero: 0 };
          const st = (globalThis as any).stats;
          if ('error' in byRows) st.err++;
          else {
            st.ok++;
            st.rows += byRows.ok.result.length;
            if (byRows.ok.result.some((r) => r.count || r.aggregated_value)) st.nonzero++;
          }
          if (st.ok + st.err === 3000) console.log('STATS', JSON.stringify(st));
          if ('error' in byRows || 'error' in columnar) {
            expect(columnar).toEqual(byRows);
            return;
          }
          expectSame(columnar.ok, byRows.ok);
        },
      ),
      { numRuns: 2000 },
    );
  }, 180_000);

  it('storage reads through the same engine: encoded day segments per name and in-memory batches of raw rows, day by day, dense or hashed cells', () => {
    fc.assert(
      fc.property(
        fc.array(eventArb, { maxLength: 80 }),
        queryArb,
        fc.constantFrom(...TIMEZONES),
        fc.boolean(),
        fc.constantFrom(0, 100, undefined),
        (raw, q, timezone, merged, denseCells) => {
          const events = buildEvents(raw, {
            merged,
            plans: PEOPLE.map((_, i) => (i % 2 ? 'pro' : 'free')),
            ages: PEOPLE.map((_, i) => 20 + i),
          });
          const project: ProjectSettings = { timezone, week_start_day: 0, test_account_filters: [] };
          const req = { ...request(q), filter_test_accounts: false };
          const rows: EventRow[] = events.map((e) => ({
            event: e.event,
            distinct_id: e.distinct_id,
            t: typeof e.timestamp === 'number' ? e.timestamp : Date.parse(e.timestamp),
            properties: e.properties,
          }));
          const projection = { properties: ['$browser', '$os', 'amount', '$session_id'], distinctIds: true };
          // Segments for '$pageview' and 'click', raw rows for the rest, one UTC day at a time.
          const byDay = new Map<number, EventRow[]>();
          for (const r of rows) byDay.set(Math.floor(r.t / DAY), [...(byDay.get(Math.floor(r.t / DAY)) ?? []), r]);
          const personOf = new Map(
            events.map((e) => [e.distinct_id, { person: e.person_id, properties: e.person_properties }]),
          );
          const join: PersonJoin = (d) => personOf.get(d) ?? distinctIdsOnly(d);
          const source: ColumnSource = {
            from: -Infinity,
            to: Infinity,
            forEachBatch: (visit) => {
              for (const [day, dayRows] of byDay) {
                for (const name of ['$pageview', 'click']) {
                  const named = dayRows.filter((r) => r.event === name).sort((a, b) => a.t - b.t);
                  if (named.length)
                    visit(
                      batchOfSegment(
                        name,
                        encodeSegment(
                          named.map((r) => ({ distinct_id: r.distinct_id, t: r.t, properties: r.properties })),
                          day * DAY,
                        ),
                        projection,
                        join,
                      ),
                    );
                }
                const rest = dayRows.filter((r) => r.event !== '$pageview' && r.event !== 'click');
                if (rest.length) visit(batchOfRows(rest, projection.properties, join));
              }
            },
          };
          const input = { project, actions: ACTIONS, now: new Date(NOW), firstEventAt: new Date(NOW - 45 * DAY) };
          // denseCells 0 or 100: breakdown cells in the hash table from the start, or after a few groups.
          const perDay = outcome(() =>
            computeTrendFromColumns(parseTrendRequest(req), { ...input, source, denseCells }),
          );
          const reference = outcome(() => computeTrendByRows(parseTrendRequest(req), { ...input, events }));
          if ('error' in perDay || 'error' in reference) expect(perDay).toEqual(reference);
          else expectSame(perDay.ok, reference.ok);
        },
      ),
      { numRuns: 1000 },
    );
  }, 180_000);
});
