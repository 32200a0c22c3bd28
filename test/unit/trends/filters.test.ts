import { describe, expect, it } from 'vitest';
import { ev, project, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const at = '2020-01-10T09:00:00Z';
// Five events; the comments give what each operator below must see.
const EVENTS = [
  ev('e', at, {
    person: 'p1',
    props: {
      browser: 'Chrome',
      count: 5,
      price: '10.5',
      flag: true,
      email: 'a@posthog.com',
      signup: '2024-01-10',
      version: 1,
    },
    personProps: { plan: 'pro' },
  }),
  ev('e', at, {
    person: 'p2',
    props: { browser: 'Firefox', count: 15, price: 'abc', flag: false, signup: '2024-01-12T10:00:00Z', version: '1' },
    personProps: { plan: 'free' },
  }),
  ev('e', at, { person: 'p3', props: { browser: 'chromium', count: '20', code: '007' } }),
  ev('e', at, { person: 'p4', props: {} }),
  ev('e', at, { person: 'p5', props: { browser: null } }),
];

const count = (properties: unknown, extra: Record<string, unknown> = {}, p = project()) =>
  trend({ events: [{ id: 'e' }], properties, ...extra }, EVENTS, { now: NOW, project: p }).result[0]!.count;
const f = (key: string, operator: string, value?: unknown, type = 'event') => [{ key, operator, value, type }];

describe('operators', () => {
  it('exact: equality; a list means any of', () => {
    expect(count(f('browser', 'exact', 'Chrome'))).toBe(1);
    expect(count(f('browser', 'exact', ['Chrome', 'Firefox']))).toBe(2);
    expect(count([{ key: 'browser', value: 'Chrome' }])).toBe(1); // exact is the default operator
  });

  it('is_not: not equal, a list means none of, a missing property counts as not equal', () => {
    expect(count(f('browser', 'is_not', 'Chrome'))).toBe(4);
    expect(count(f('browser', 'is_not', ['Chrome', 'Firefox']))).toBe(3);
  });

  it('icontains / not_icontains: case-insensitive substring; missing matches not_icontains', () => {
    expect(count(f('browser', 'icontains', 'chrom'))).toBe(2);
    expect(count(f('browser', 'icontains', 'CHROME'))).toBe(1);
    expect(count(f('browser', 'not_icontains', 'chrom'))).toBe(3);
  });

  it('regex / not_regex: RE2 (?i) flag supported; missing matches not_regex; a list means any of', () => {
    expect(count(f('browser', 'regex', '^Chr'))).toBe(1);
    expect(count(f('browser', 'regex', '(?i)^chr'))).toBe(2);
    expect(count(f('browser', 'regex', ['^Fire', '^chromium$']))).toBe(2);
    expect(count(f('browser', 'not_regex', '^Chr'))).toBe(4);
  });

  it('gt / gte / lt / lte: numeric, numeric strings coerced, non-numeric never matches', () => {
    expect(count(f('count', 'gt', 10))).toBe(2); // 15 and '20'
    expect(count(f('count', 'gte', '15'))).toBe(2);
    expect(count(f('count', 'lt', 15))).toBe(1);
    expect(count(f('count', 'lte', 15))).toBe(2);
    expect(count(f('price', 'gt', 5))).toBe(1); // '10.5' yes, 'abc' no
    expect(count(f('price', 'lt', 100))).toBe(1);
    expect(count(f('code', 'gt', 5))).toBe(1); // '007' is 7
  });

  it('min / max: inclusive bounds', () => {
    expect(count(f('count', 'min', 15))).toBe(2);
    expect(count(f('count', 'max', 5))).toBe(1);
  });

  it('between / not_between: inclusive [min, max]; missing matches neither', () => {
    expect(count(f('count', 'between', [5, 15]))).toBe(2);
    expect(count(f('count', 'between', ['16', '20']))).toBe(1);
    expect(count(f('count', 'not_between', [5, 15]))).toBe(1);
  });

  it('is_set / is_not_set: null counts as not set', () => {
    expect(count(f('browser', 'is_set'))).toBe(3);
    expect(count(f('browser', 'is_not_set'))).toBe(2);
  });

  it('is_date_before / is_date_after / is_date_exact: a date covers its whole day, a datetime is an instant', () => {
    expect(count(f('signup', 'is_date_before', '2024-01-11'))).toBe(1);
    expect(count(f('signup', 'is_date_after', '2024-01-11'))).toBe(1);
    expect(count(f('signup', 'is_date_after', '2024-01-10'))).toBe(1); // after the END of Jan 10
    expect(count(f('signup', 'is_date_exact', '2024-01-10'))).toBe(1);
    expect(count(f('signup', 'is_date_exact', '2024-01-12T10:00:00'))).toBe(1);
    expect(count(f('signup', 'is_date_before', '2024-01-12T10:00:01'))).toBe(2);
  });

  it('string comparisons of numbers follow the property type', () => {
    expect(count(f('version', 'exact', '1'))).toBe(2); // number 1 and string '1'
    expect(count(f('version', 'exact', 1))).toBe(2);
    expect(count(f('count', 'exact', '5'))).toBe(1);
    expect(count(f('count', 'exact', 20))).toBe(1); // string property '20'
    expect(count(f('code', 'exact', 7))).toBe(0); // string property '007' compares as text
    expect(count(f('code', 'exact', '007'))).toBe(1);
    expect(count(f('flag', 'exact', 'true'))).toBe(1);
    expect(count(f('flag', 'exact', true))).toBe(1);
    expect(count(f('flag', 'exact', false))).toBe(1);
  });

  it('type person reads the person properties, type event the event properties', () => {
    expect(count(f('plan', 'exact', 'pro', 'person'))).toBe(1);
    expect(count(f('plan', 'exact', 'pro', 'event'))).toBe(0);
    expect(count(f('plan', 'is_not', 'free', 'person'))).toBe(4);
  });
});

describe('groups', () => {
  it('nest AND / OR groups', () => {
    const or = {
      type: 'OR',
      values: [
        {
          type: 'AND',
          values: [
            { key: 'browser', value: 'Chrome' },
            { key: 'count', operator: 'gt', value: 1 },
          ],
        },
        { type: 'AND', values: [{ key: 'browser', value: 'Firefox' }] },
      ],
    };
    expect(count(or)).toBe(2);
    const and = {
      type: 'AND',
      values: [
        {
          type: 'OR',
          values: [
            { key: 'browser', value: 'Chrome' },
            { key: 'browser', value: 'chromium' },
          ],
        },
        { key: 'count', operator: 'gte', value: 10 },
      ],
    };
    expect(count(and)).toBe(1);
  });

  it('an empty AND matches everything (and so does an empty OR)', () => {
    expect(count({ type: 'AND', values: [] })).toBe(5);
    expect(count({ type: 'OR', values: [] })).toBe(5);
    expect(count([])).toBe(5);
  });

  it('a plain array means AND', () => {
    expect(count([...f('browser', 'icontains', 'chrom'), ...f('count', 'gt', 10)])).toBe(1);
  });

  it("accepts PostHog's old dict form", () => {
    expect(count({ browser__icontains: 'chrom' })).toBe(2);
    expect(count({ browser: 'Chrome' })).toBe(1);
  });

  it('GET sends properties as a JSON string', () => {
    expect(count(JSON.stringify(f('browser', 'icontains', 'chrom')))).toBe(2);
  });
});

describe('where filters apply', () => {
  it('per-series filters AND the global ones, and only touch their series', () => {
    const res = trend(
      {
        events: [{ id: 'e', properties: f('browser', 'icontains', 'chrom') }, { id: 'e' }],
        properties: f('count', 'gte', 10),
      },
      EVENTS,
      { now: NOW },
    );
    expect(res.result.map((s) => s.count)).toEqual([1, 2]);
  });

  it("filter_test_accounts ANDs the project's test account filters", () => {
    const testFilters = [
      { key: 'email', operator: 'not_icontains', value: 'posthog.com', type: 'event' },
      { key: 'plan', operator: 'is_not', value: 'free', type: 'person' },
    ];
    const p = project('UTC', 0, testFilters);
    expect(count([], { filter_test_accounts: true }, p)).toBe(3);
    expect(count([], { filter_test_accounts: false }, p)).toBe(5);
    expect(count([], { filter_test_accounts: 'true' }, project())).toBe(5);
  });

  it('actions match when any step matches (step event null = any event), ANDed with series filters', () => {
    const events = [...EVENTS, ev('other', at), ev('x', at)];
    const actions = [
      {
        id: 1,
        name: 'Chrome or other',
        steps: [{ event: 'e', properties: [{ key: 'browser', value: 'Chrome' }] }, { event: 'other' }],
      },
      { id: 2, name: 'Has browser', steps: [{ event: null, properties: [{ key: 'browser', operator: 'is_set' }] }] },
    ];
    const res = trend({ actions: [{ id: 1 }, { id: 2 }, { id: '1', properties: f('count', 'gt', 1) }] }, events, {
      now: NOW,
      actions,
    });
    expect(res.result.map((s) => [s.label, s.count])).toEqual([
      ['Chrome or other', 2],
      ['Has browser', 3],
      ['Chrome or other', 1],
    ]);
    expect(res.result[0]!.action).toMatchObject({ id: 1, type: 'actions', name: 'Chrome or other' });
  });
});
