/** Operators, NULL handling, the property type rule and aggregates of the HogQL evaluator. */
import { describe, expect, it } from 'vitest';
import type { Expr } from '#shared/hogql/ast.ts';
import { compileAggregate, compileScalar } from '#shared/hogql/evaluate.ts';
import { HogDateTime } from '#shared/hogql/values.ts';
import {
  ATTR,
  aggregate,
  and,
  arith,
  call,
  cmp,
  ctx,
  ev,
  failure,
  field,
  fn,
  lit,
  not,
  or,
  prop,
  tuple,
} from './evaluate-helpers.ts';

const x = prop('x');
const withX = (value: unknown) => ({ 'properties.x': value as never });

describe('comparison and the property type rule', () => {
  it('numbers compare numerically, strings by text', () => {
    expect(ev(cmp('lt', 2, 10))).toBe(true);
    expect(ev(cmp('lt', '2', '10'))).toBe(false);
    expect(ev(cmp('eq', 'a', 'a'))).toBe(true);
    expect(ev(cmp('notEq', 1, 2))).toBe(true);
  });
  it('a string property against a number is read as a number when the whole string is one', () => {
    expect(ev(cmp('gt', x, 9), withX('10'))).toBe(true);
    expect(ev(cmp('eq', x, 10), withX(' 10 '))).toBe(true);
    expect(ev(cmp('eq', x, 10), withX(10))).toBe(true);
    expect(ev(cmp('gtEq', x, 1.5), withX('1.5'))).toBe(true);
  });
  it('otherwise the comparison is false (and != is true)', () => {
    expect(ev(cmp('eq', x, 1), withX('abc'))).toBe(false);
    expect(ev(cmp('lt', x, 1), withX('abc'))).toBe(false);
    expect(ev(cmp('gt', x, 1), withX('10abc'))).toBe(false);
    expect(ev(cmp('notEq', x, 1), withX('abc'))).toBe(true);
  });
  it('a number property against a string constant reads the constant as a number', () => {
    expect(ev(cmp('eq', x, '5'), withX(5))).toBe(true);
    expect(ev(cmp('eq', x, '5.0'), withX(5))).toBe(true);
  });
  it('booleans against true/false text and numbers', () => {
    expect(ev(cmp('eq', x, 'true'), withX(true))).toBe(true);
    expect(ev(cmp('eq', x, true), withX(true))).toBe(true);
    expect(ev(cmp('eq', x, 1), withX(true))).toBe(true);
    expect(ev(cmp('eq', x, 'yes'), withX(true))).toBe(false);
  });
  it('a string against a DateTime is parsed as a date-time in the project zone', () => {
    const ts = field('timestamp');
    const row = { timestamp: new HogDateTime(Date.parse('2024-01-01T12:00:00Z'), 'Europe/Berlin') };
    const berlin = { ...ctx, timezone: 'Europe/Berlin' };
    expect(ev(cmp('gtEq', ts, '2024-01-01 13:00:00'), row, berlin)).toBe(true);
    expect(ev(cmp('gt', ts, '2024-01-01 13:00:00'), row, berlin)).toBe(false);
    expect(ev(cmp('lt', ts, '2024-01-02'), row, berlin)).toBe(true);
    expect(ev(cmp('eq', ts, 'not a date'), row, berlin)).toBe(false);
    expect(ev(cmp('gt', call('toDate', ts), '2023-12-31'), row, berlin)).toBe(true);
  });
  it('operators never give NULL, as PostHog prints them (ifNull(equals(x, c), 0), ifNull(notEquals(x, c), 1), ifNull(less(...), 0))', () => {
    expect(ev(cmp('eq', x, 1))).toBe(false);
    expect(ev(cmp('notEq', x, 1))).toBe(true);
    expect(ev(cmp('lt', 1, x))).toBe(false);
    expect(ev(cmp('gtEq', x, 1))).toBe(false);
    expect(ev(not(cmp('eq', x, 'a')))).toBe(true);
    expect(ev(cmp('eq', null, null))).toBe(true);
  });
  it('x = NULL is isNull(x), x != NULL isNotNull(x) (PostHog: eq_null_becomes_is_null)', () => {
    expect(ev(cmp('eq', x, null))).toBe(true);
    expect(ev(cmp('eq', x, null), withX(0))).toBe(false);
    expect(ev(cmp('notEq', x, null), withX(0))).toBe(true);
    expect(ev(cmp('eq', null, x))).toBe(true);
  });
  it('two nullable sides: = is true when both are NULL, != when only one is', () => {
    const y = prop('y');
    expect(ev(cmp('eq', x, y))).toBe(true);
    expect(ev(cmp('eq', x, y), withX(1))).toBe(false);
    expect(ev(cmp('notEq', x, y))).toBe(false);
    expect(ev(cmp('notEq', x, y), withX(1))).toBe(true);
  });
  it("the function forms keep ClickHouse's NULL: equals(NULL, 1), less(1, NULL) are NULL", () => {
    expect(ev(call('equals', x, 1))).toBeNull();
    expect(ev(call('less', 1, x))).toBeNull();
    expect(ev(call('notEquals', x, 1))).toBeNull();
  });
  it('IS NULL is a comparison with null in the AST, read as isNull by the parser; isNull works on missing fields', () => {
    expect(ev(call('isNull', x))).toBe(true);
    expect(ev(call('isNotNull', x), withX(0))).toBe(true);
  });
  it('arrays and tuples compare element by element', () => {
    expect(ev(cmp('eq', [1, 2], [1, 2]))).toBe(true);
    expect(ev(cmp('lt', [1, 2], [1, 3]))).toBe(true);
    expect(ev(cmp('eq', tuple(1, 'a'), tuple(1, 'a')))).toBe(true);
  });
});

describe('IN / NOT IN', () => {
  it('members of an array or tuple, with the property type rule', () => {
    expect(ev(cmp('in', x, tuple('a', 'b')), withX('b'))).toBe(true);
    expect(ev(cmp('in', x, ['a', 'b']), withX('c'))).toBe(false);
    expect(ev(cmp('in', x, tuple(1, 2)), withX('2'))).toBe(true);
    expect(ev(cmp('notIn', x, tuple('a')), withX('c'))).toBe(true);
    expect(ev(cmp('in', x, 'a'), withX('a'))).toBe(true);
  });
  it('NULL on the left is false for IN and NOT IN; NULL members never match (transform_null_in = 0)', () => {
    expect(ev(cmp('in', x, tuple('a', null)))).toBe(false);
    expect(ev(cmp('notIn', x, tuple('a')))).toBe(false);
    expect(ev(cmp('in', 'b', tuple('a', null)))).toBe(false);
  });
});

describe('LIKE', () => {
  const like = (s: string, p: string) => ev(cmp('like', s, p));
  it('% is any run, _ one character, the whole string must match', () => {
    expect(like('hello', 'h%o')).toBe(true);
    expect(like('hello', 'h_llo')).toBe(true);
    expect(like('hello', 'h_lo')).toBe(false);
    expect(like('hello', 'ell')).toBe(false);
    expect(like('hello', '%ell%')).toBe(true);
    expect(like('', '%')).toBe(true);
    expect(like('abcabc', '%b_a%')).toBe(true);
    expect(like('aXbXc', 'a%b%c')).toBe(true);
    expect(like('ab', 'a%b%c')).toBe(false);
  });
  it('backslash escapes %, _ and itself', () => {
    expect(like('50%', '50\\%')).toBe(true);
    expect(like('500', '50\\%')).toBe(false);
    expect(like('a_b', 'a\\_b')).toBe(true);
    expect(like('axb', 'a\\_b')).toBe(false);
    expect(like('a\\b', 'a\\\\b')).toBe(true);
  });
  it('_ matches one character, also outside the BMP', () => {
    expect(like('a😀b', 'a_b')).toBe(true);
    expect(like('😀', '_')).toBe(true);
  });
  it('ILIKE ignores case; NOT LIKE / NOT ILIKE negate; a NULL text is not like (PostHog: ifNull(like, 0)), and is not-like', () => {
    expect(ev(cmp('ilike', 'https://X.com/PRICING', '%/pricing%'))).toBe(true);
    expect(ev(cmp('notLike', 'abc', 'a%'))).toBe(false);
    expect(ev(cmp('notILike', 'ABC', 'x%'))).toBe(true);
    expect(ev(cmp('like', x, 'a%'))).toBe(false);
    expect(ev(cmp('notLike', x, 'a%'))).toBe(true);
    expect(ev(call('like', x, 'a%'))).toBeNull();
  });
  it('regex characters in a LIKE pattern are literal', () => {
    expect(like('a.c', 'a.c')).toBe(true);
    expect(like('abc', 'a.c')).toBe(false);
    expect(like('(a+)*', '(a+)*')).toBe(true);
  });
  it('a long adversarial pattern over a long text stays fast (no backtracking)', () => {
    const text = 'a'.repeat(20_000);
    const started = Date.now();
    expect(like(text, `%${'a%'.repeat(200)}b`)).toBe(false);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('regex operators', () => {
  it('=~, !~, =~* and !~* with RE2', () => {
    expect(ev(cmp('regex', 'Chrome 120', '^Chrome \\d+$'))).toBe(true);
    expect(ev(cmp('notRegex', 'Chrome', '^Fire'))).toBe(true);
    expect(ev(cmp('iRegex', 'CHROME', '^chrome'))).toBe(true);
    expect(ev(cmp('notIRegex', 'CHROME', '^chrome'))).toBe(false);
    expect(ev(cmp('regex', x, 'a'))).toBe(false);
    expect(ev(cmp('notRegex', x, 'a'))).toBe(false);
  });
  it('a bad or oversized constant pattern is a 400 when compiling, before any row', () => {
    failure(() => compileScalar(cmp('regex', x, '(a'), ctx, ATTR));
    expect(failure(() => compileScalar(cmp('regex', x, 'a'.repeat(1_001)), ctx, ATTR)).detail).toContain('1000');
    failure(() => compileScalar(call('match', x, '(?<=a)b'), ctx, ATTR));
    failure(() => compileScalar(call('formatDateTime', field('timestamp'), '%Ö'), ctx, ATTR));
    failure(() => compileScalar(call('toTimeZone', field('timestamp'), 'Nowhere/Else'), ctx, ATTR));
  });
});

describe('arithmetic', () => {
  it('+ - * on ints and floats; numeric strings read as numbers; others NULL', () => {
    expect(ev(arith('+', 1, 2))).toBe(3);
    expect(ev(arith('-', 1.5, 2))).toBe(-0.5);
    expect(ev(arith('*', x, 3), withX('4'))).toBe(12);
    expect(ev(arith('+', x, 1), withX('abc'))).toBeNull();
    expect(ev(arith('+', x, 1))).toBeNull();
  });
  it('/ is always a float division: x/0 is inf or -inf, 0/0 nan', () => {
    expect(ev(arith('/', 7, 2))).toBe(3.5);
    expect(ev(arith('/', 1, 0))).toBe(Number.POSITIVE_INFINITY);
    expect(ev(arith('/', -1, 0))).toBe(Number.NEGATIVE_INFINITY);
    expect(ev(arith('/', 0, 0))).toBeNaN();
  });
  it("% keeps the dividend's sign; integer % 0 is a 400 at run time, float % 0 nan", () => {
    expect(ev(arith('%', -7, 3))).toBe(-1);
    expect(ev(arith('%', 7, -3))).toBe(1);
    expect(ev(arith('%', 5.5, 0))).toBeNaN();
    const f = compileScalar(arith('%', 7, x), ctx, ATTR);
    expect(f(() => 2)).toBe(1);
    expect(failure(() => f(() => 0)).detail).toContain('Division by zero');
  });
  it('DateTime + seconds, Date + days', () => {
    const t = new HogDateTime(Date.parse('2024-01-01T00:00:00Z'), 'UTC');
    expect((ev(arith('+', field('timestamp'), 60), { timestamp: t }) as HogDateTime).ms).toBe(t.ms + 60_000);
    expect(ev(call('toString', arith('+', call('toDate', '2024-01-31'), 1)))).toBe('2024-02-01');
  });
  it('integer results beyond 2^53 are a 400 naming it, not rounded; floats round as Float64', () => {
    const max = Number.MAX_SAFE_INTEGER;
    expect(ev(arith('+', max - 1, 1))).toBe(max);
    expect(failure(() => ev(arith('+', max, 2))).detail).toMatch(/9007199254740991 \+ 2 is beyond ±\(2\^53 - 1\)/);
    expect(failure(() => ev(arith('-', -max, 1))).detail).toMatch(/2\^53/);
    expect(failure(() => ev(arith('*', 4_294_967_296, 4_294_967_296))).detail).toMatch(/2\^53/);
    expect(failure(() => ev(call('plus', max, max))).detail).toMatch(/2\^53/);
    // Per row too: a property's integer text reads as an integer.
    const f = compileScalar(arith('*', x, 1_000_000), ctx, ATTR);
    expect(f(() => '9007199254')).toBe(9_007_199_254_000_000);
    expect(failure(() => f(() => '9007199255')).detail).toMatch(/2\^53/);
    expect(ev(arith('+', 1e20, 1))).toBe(1e20);
    expect(ev(arith('*', 0.5, max))).toBe(max / 2);
  });
  it('a property holding an integer past 2^53 as text compares exactly with any literal we take', () => {
    // Literals stop at 2^53 - 1; reading the text as a double rounds it to 2^53 or more, never below: the order holds.
    const big = withX('9007199254740993');
    expect(ev(cmp('eq', x, Number.MAX_SAFE_INTEGER), big)).toBe(false);
    expect(ev(cmp('gt', x, Number.MAX_SAFE_INTEGER), big)).toBe(true);
    expect(ev(cmp('lt', x, Number.MAX_SAFE_INTEGER), big)).toBe(false);
    // As strings, exact digit for digit.
    expect(ev(cmp('eq', x, '9007199254740993'), big)).toBe(true);
    expect(ev(cmp('eq', x, '9007199254740992'), big)).toBe(false);
  });
  it('toInt of text beyond 2^53 and sum past it are 400s, not rounded', () => {
    expect(fn('toInt', '9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(failure(() => fn('toInt', '9007199254740993')).detail).toMatch(/toInt\('9007199254740993'\) is beyond/);
    const rows = [{ 'properties.n': Number.MAX_SAFE_INTEGER - 1 }, { 'properties.n': 1 }];
    expect(aggregate(call('sum', prop('n')), rows)).toBe(Number.MAX_SAFE_INTEGER);
    expect(failure(() => aggregate(call('sum', prop('n')), [...rows, { 'properties.n': 1 }])).detail).toMatch(
      /the sum of these integers is beyond/,
    );
    expect(aggregate(call('sum', prop('n')), [{ 'properties.n': 1e300 }, { 'properties.n': 1 }])).toBe(1e300);
  });
  it('negation', () => {
    expect(ev({ kind: 'negate', expr: lit(3) })).toBe(-3);
    expect(ev({ kind: 'negate', expr: x })).toBeNull();
  });
});

describe('three-valued logic', () => {
  const T = lit(true);
  const F = lit(false);
  const N = lit(null);
  it('AND: false wins over NULL, NULL over true', () => {
    expect(ev(and(T, T))).toBe(true);
    expect(ev(and(T, N))).toBeNull();
    expect(ev(and(F, N))).toBe(false);
    expect(ev(and(N, F))).toBe(false);
  });
  it('OR: true wins over NULL, NULL over false', () => {
    expect(ev(or(F, F))).toBe(false);
    expect(ev(or(F, N))).toBeNull();
    expect(ev(or(T, N))).toBe(true);
    expect(ev(or(N, T))).toBe(true);
  });
  it('NOT NULL is NULL', () => {
    expect(ev(not(N))).toBeNull();
    expect(ev(not(T))).toBe(false);
    expect(ev(not(x), withX(0))).toBe(true);
  });
  it('AND/OR stop at the deciding operand (a later one is not evaluated)', () => {
    const boom = call('intDiv', 1, x);
    expect(ev(and(cmp('eq', x, 1), boom), withX(0))).toBe(false);
    expect(ev(or(cmp('eq', x, 0), boom), withX(0))).toBe(true);
  });
  it('truthiness: numbers, true/false text; other text is NULL', () => {
    expect(ev(and(x, T), withX('true'))).toBe(true);
    expect(ev(and(x, T), withX('0'))).toBe(false);
    expect(ev(and(x, T), withX('hello'))).toBeNull();
  });
  it('BETWEEN and NOT BETWEEN, with NULL', () => {
    const between = (v: unknown, negated = false): Expr => ({
      kind: 'between',
      expr: lit(v as never),
      low: lit(1),
      high: lit(3),
      negated,
    });
    expect(ev(between(2))).toBe(true);
    expect(ev(between(3))).toBe(true);
    expect(ev(between(4))).toBe(false);
    expect(ev(between(4, true))).toBe(true);
    expect(ev(between(2, true))).toBe(false);
    expect(ev(between(null))).toBeNull();
  });
});

describe('compiling', () => {
  it('constant subtrees fold: a constant expression never reads the row', () => {
    let reads = 0;
    const f = compileScalar(call('concat', call('upper', 'a'), '-', call('toString', arith('*', 6, 7))), ctx, ATTR);
    expect(
      f(() => {
        reads++;
        return null;
      }),
    ).toBe('A-42');
    expect(reads).toBe(0);
  });
  it('aliases evaluate their expression', () => {
    expect(ev({ kind: 'alias', alias: 'n', expr: lit(1) })).toBe(1);
  });
  it('an aggregate where a scalar is expected is a 400', () => {
    expect(failure(() => compileScalar(call('sum', x), ctx, ATTR)).detail).toContain('"sum"');
  });
  it('DISTINCT only in count', () => {
    failure(() => compileAggregate({ kind: 'call', name: 'sum', args: [x], distinct: true }, ctx, ATTR));
  });
});

describe('aggregates', () => {
  const rows = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((v) => ({ 'properties.v': v, event: v % 2 ? 'odd' : 'even' }));
  const v = prop('v');
  it('count, count(x) skips NULLs, countIf', () => {
    expect(aggregate(call('count'), rows)).toBe(10);
    expect(aggregate(call('count', x), [withX(1), withX(null), {}])).toBe(1);
    expect(aggregate(call('countIf', cmp('eq', field('event'), 'odd')), rows)).toBe(5);
    expect(aggregate(call('COUNT'), rows)).toBe(10);
  });
  it('countIf(x, cond) counts rows passing cond where x is not NULL; uniqIf', () => {
    const data = [withX(1), withX(null), withX(2), withX(2)];
    expect(aggregate(call('countIf', x, cmp('notEq', x, 1)), data)).toBe(2);
    expect(aggregate(call('uniqIf', x, cmp('notEq', x, 1)), data)).toBe(1);
    expect(aggregate(call('avgIf', x, cmp('gt', x, 100)), data)).toBeNaN();
  });
  it('sum, sumIf, avg, avgIf', () => {
    expect(aggregate(call('sum', v), rows)).toBe(55);
    expect(aggregate(call('sumIf', v, cmp('gt', v, 5)), rows)).toBe(40);
    expect(aggregate(call('avg', v), rows)).toBe(5.5);
    expect(aggregate(call('avgIf', v, cmp('eq', field('event'), 'even')), rows)).toBe(6);
  });
  it('numeric strings are summed; other values skipped', () => {
    expect(aggregate(call('sum', x), [withX('2'), withX(3), withX('abc'), withX(null)])).toBe(5);
  });
  it('min, max, any, argMin, argMax', () => {
    expect(aggregate(call('min', v), rows)).toBe(1);
    expect(aggregate(call('max', v), rows)).toBe(10);
    expect(aggregate(call('max', x), [withX('b'), withX('a')])).toBe('b');
    expect(aggregate(call('any', x), [withX(null), withX('first'), withX('second')])).toBe('first');
    expect(aggregate(call('argMax', field('event'), v), rows)).toBe('even');
    expect(aggregate(call('argMin', field('event'), v), rows)).toBe('odd');
  });
  it('uniq, uniqExact and count(DISTINCT x) count distinct non-NULL values', () => {
    expect(aggregate(call('uniq', field('event')), rows)).toBe(2);
    expect(aggregate(call('uniqExact', x), [withX(1), withX(1.0), withX('1'), withX(null)])).toBe(2);
    expect(aggregate({ kind: 'call', name: 'count', args: [field('event')], distinct: true }, rows)).toBe(2);
  });
  it('median and quantile: exact, linear interpolation (p90 of 1..10 is 9.1)', () => {
    expect(aggregate(call('median', v), rows)).toBe(5.5);
    expect(aggregate({ kind: 'call', name: 'quantile', params: [lit(0.9)], args: [v] }, rows)).toBeCloseTo(9.1);
    failure(() => compileAggregate({ kind: 'call', name: 'quantile', params: [lit(2)], args: [v] }, ctx, ATTR));
    failure(() => compileAggregate(call('quantile', v), ctx, ATTR));
  });
  it('an empty group: count 0, sum 0, avg and quantile nan, min/max/any NULL', () => {
    expect(aggregate(call('count'), [])).toBe(0);
    expect(aggregate(call('sum', v), [])).toBe(0);
    expect(aggregate(call('avg', v), [])).toBeNaN();
    expect(aggregate(call('median', v), [])).toBeNaN();
    expect(aggregate(call('min', v), [])).toBeNull();
    expect(aggregate(call('argMax', v, v), [])).toBeNull();
    expect(aggregate(call('uniq', v), [])).toBe(0);
  });
  it('expressions over aggregates: sum(x) / count(), round(avg(toFloat(price)), 2)', () => {
    expect(aggregate(arith('/', call('sum', v), call('count')), rows)).toBe(5.5);
    const prices = [{ 'properties.price': '1.005' }, { 'properties.price': '2' }, { 'properties.price': 'n/a' }];
    expect(aggregate(call('round', call('avg', call('toFloat', prop('price'))), 2), prices)).toBe(1.5);
  });
  it("a field outside aggregates takes the group's value (the caller groups by it)", () => {
    expect(aggregate(call('concat', field('event'), ': ', call('toString', call('count'))), rows.slice(0, 1))).toBe(
      'odd: 1',
    );
  });
  it('each factory call is a separate group', () => {
    const make = compileAggregate(call('sum', v), ctx, ATTR);
    const a = make();
    const b = make();
    a.add(() => 5);
    b.add(() => 7);
    expect([a.result(), b.result()]).toEqual([5, 7]);
  });
  it('nested aggregates are a 400', () => {
    expect(failure(() => compileAggregate(call('sum', call('count')), ctx, ATTR)).detail).toContain('count');
  });
});
