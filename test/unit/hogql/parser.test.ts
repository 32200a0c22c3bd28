import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { CompareOp, Expr } from '#shared/hogql/ast.ts';
import { parseExpr, parseOrderExpr, parseSelectColumn, withoutSpans } from '#shared/hogql/index.ts';

const ATTR = 'query__breakdownFilter__breakdown';
const p = (text: string): Expr => withoutSpans(parseExpr(text, ATTR));

const c = (value: null | boolean | number | string): Expr => ({ kind: 'constant', value });
const f = (...chain: string[]): Expr => ({ kind: 'field', chain });
const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args });
const cmp = (op: CompareOp, left: Expr, right: Expr): Expr => ({ kind: 'compare', op, left, right });
const ar = (op: '+' | '-' | '*' | '/' | '%', left: Expr, right: Expr): Expr => ({
  kind: 'arithmetic',
  op,
  left,
  right,
});
const and = (...exprs: Expr[]): Expr => ({ kind: 'and', exprs });
const or = (...exprs: Expr[]): Expr => ({ kind: 'or', exprs });
const not = (expr: Expr): Expr => ({ kind: 'not', expr });

function rejects(text: string, detail: RegExp): void {
  let caught: unknown;
  try {
    parseExpr(text, ATTR);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  expect((caught as ValidationError).attr).toBe(ATTR);
  expect((caught as ValidationError).detail).toMatch(detail);
}

describe('HogQL literals', () => {
  it.each([
    ['42', c(42)],
    ['3.25', c(3.25)],
    ['1e3', c(1000)],
    ['2.5E-2', c(0.025)],
    ['.5', c(0.5)],
    ['0x1F', c(31)],
    ['0b101', c(5)],
    ['-7', c(-7)],
    ["'abc'", c('abc')],
    ["'it''s'", c("it's")],
    ["'it\\'s'", c("it's")],
    // PostHog's escapes: \xHH and upper-case letters kept as written, \0 dropped (its parser's reading).
    ["'a\\nb\\t\\\\\\x41\\N\\0'", c('a\nb\t\\\\x41\\N')],
    ["'\\\\d+'", c('\\d+')],
    ['true', c(true)],
    ['FALSE', c(false)],
    ['Null', c(null)],
    ['[1, 2]', { kind: 'array', items: [c(1), c(2)] }],
    ['[]', { kind: 'array', items: [] }],
    ["(1, 'a')", { kind: 'tuple', items: [c(1), c('a')] }],
    ['(1,)', { kind: 'tuple', items: [c(1)] }],
    ['[1, 2,]', { kind: 'array', items: [c(1), c(2)] }],
  ])('%s', (text, expected) => {
    expect(p(text)).toEqual(expected);
  });
});

describe('HogQL integer literals beyond 2^53', () => {
  it('are refused, naming 2^53, rather than rounded to a neighbour', () => {
    rejects('9007199254740993', /the integer 9007199254740993 at position 0 is beyond ±\(2\^53 - 1\)/);
    rejects('properties.id = 9007199254740993', /at position 16 .*9,007,199,254,740,991/);
    rejects('-9007199254740992', /2\^53/);
    rejects('0x20000000000001', /the integer 0x20000000000001/);
    rejects('1' + '0'.repeat(400), /beyond/);
  });

  it('up to 2^53 - 1 they are exact, and floats of any size stay floats', () => {
    expect(p('9007199254740991')).toEqual(c(9_007_199_254_740_991));
    expect(p('-9007199254740991')).toEqual(c(-9_007_199_254_740_991));
    expect(p('1e30')).toEqual(c(1e30));
    expect(p('9007199254740993.0')).toEqual(c(9_007_199_254_740_992));
  });
});

describe('HogQL fields', () => {
  it.each([
    ['event', f('event')],
    ['timestamp', f('timestamp')],
    ['$session_id', f('$session_id')],
    ['elements_chain', f('elements_chain')],
    ['properties.$os', f('properties', '$os')],
    ['properties.$a.b', f('properties', '$a', 'b')],
    ["properties['a b']", f('properties', 'a b')],
    ["properties.a['b']", f('properties', 'a', 'b')],
    ['properties.`a b`', f('properties', 'a b')],
    ['properties."a b"', f('properties', 'a b')],
    ['person.properties.email', f('person', 'properties', 'email')],
    ['person.created_at', f('person', 'created_at')],
    ['`event`', f('event')],
    ['"and"', f('and')],
  ])('%s', (text, expected) => {
    expect(p(text)).toEqual(expected);
  });

  it('indexes a non-property expression with arrayElement, and a field with a number likewise', () => {
    expect(p("splitByChar('/', x)[2]")).toEqual(call('arrayElement', call('splitByChar', c('/'), f('x')), c(2)));
    expect(p('properties.list[1]')).toEqual(call('arrayElement', f('properties', 'list'), c(1)));
  });

  it('keeps spans on nodes', () => {
    const e = parseExpr('a + properties.$os', ATTR);
    expect(e.span).toEqual([0, 18]);
    expect(e.kind === 'arithmetic' && e.right.span).toEqual([4, 18]);
  });
});

describe('HogQL operator precedence', () => {
  it.each([
    ['1 + 2 * 3', ar('+', c(1), ar('*', c(2), c(3)))],
    ['(1 + 2) * 3', ar('*', ar('+', c(1), c(2)), c(3))],
    ['1 - 2 - 3', ar('-', ar('-', c(1), c(2)), c(3))],
    ['10 / 2 % 3', ar('%', ar('/', c(10), c(2)), c(3))],
    ['-x * 2', ar('*', { kind: 'negate', expr: f('x') }, c(2))],
    ['-(1 + 2)', { kind: 'negate', expr: ar('+', c(1), c(2)) }],
    ['2 - -1', ar('-', c(2), c(-1))],
    ['NOT a = b', not(cmp('eq', f('a'), f('b')))],
    ['NOT a AND b', and(not(f('a')), f('b'))],
    ['a OR b AND c', or(f('a'), and(f('b'), f('c')))],
    ['a AND b AND c OR d', or(and(f('a'), f('b'), f('c')), f('d'))],
    ['(a AND b) AND c', and(and(f('a'), f('b')), f('c'))],
    ['a or b Or c', or(f('a'), f('b'), f('c'))],
    ['a + 1 = b * 2', cmp('eq', ar('+', f('a'), c(1)), ar('*', f('b'), c(2)))],
    ['a = 1 AND b != 2', and(cmp('eq', f('a'), c(1)), cmp('notEq', f('b'), c(2)))],
    ['a || b || c', call('concat', f('a'), f('b'), f('c'))],
    ['(a || b) || c', call('concat', call('concat', f('a'), f('b')), f('c'))],
    ["a || 'x' = 'y'", cmp('eq', call('concat', f('a'), c('x')), c('y'))],
    ['x IS NULL', cmp('eq', f('x'), c(null))],
    ['x is not null', cmp('notEq', f('x'), c(null))],
    ['NOT x IS NULL', not(cmp('eq', f('x'), c(null)))],
    ['a ?? b', call('ifNull', f('a'), f('b'))],
    ['a ?? b IS NULL', call('ifNull', f('a'), cmp('eq', f('b'), c(null)))],
    // PostHog's readings (test/unit/hogql/posthog-parser-oracle.test.ts holds the parsers to the same trees).
    ['a ?? b ?? c', call('ifNull', call('ifNull', f('a'), f('b')), f('c'))],
    ['NOT (a) = b', cmp('eq', not(f('a')), f('b'))],
    ['NOT (a)[1]', call('arrayElement', not(f('a')), c(1))],
    ['NOT (a, b)', call('NOT', f('a'), f('b'))],
    ['-(1)', { kind: 'negate', expr: c(1) }],
    ['- 1', c(-1)],
    ['+1', c(1)],
    ['-inf', c(-Infinity)],
    ['- -1', { kind: 'negate', expr: c(-1) }],
    ['-1[2]', call('arrayElement', c(-1), c(2))],
    ['CASE WHEN a THEN 1 END', call('if', f('a'), c(1), c(null))],
    ['NOT a ?? b', not(call('ifNull', f('a'), f('b')))],
    ['a = 1 ? b : c', call('if', cmp('eq', f('a'), c(1)), f('b'), f('c'))],
    ['a ? b : c ? d : e', call('if', f('a'), f('b'), call('if', f('c'), f('d'), f('e')))],
    ['a OR b ? 1 : 2', call('if', or(f('a'), f('b')), c(1), c(2))],
  ])('%s', (text, expected) => {
    expect(p(text)).toEqual(expected);
  });
});

describe('HogQL comparisons', () => {
  it.each([
    ['a = 1', 'eq'],
    ['a == 1', 'eq'],
    ['a != 1', 'notEq'],
    ['a <> 1', 'notEq'],
    ['a < 1', 'lt'],
    ['a <= 1', 'ltEq'],
    ['a > 1', 'gt'],
    ['a >= 1', 'gtEq'],
    ["a LIKE '%x'", 'like'],
    ["a ilike '%x'", 'ilike'],
    ["a NOT LIKE '%x'", 'notLike'],
    ["a not ILIKE '%x'", 'notILike'],
    ["a =~ 'x'", 'regex'],
    ["a ~ 'x'", 'regex'],
    ["a !~ 'x'", 'notRegex'],
    ["a =~* 'x'", 'iRegex'],
    ["a ~* 'x'", 'iRegex'],
    ["a !~* 'x'", 'notIRegex'],
    ['a IN (1, 2)', 'in'],
    ['a NOT IN [1, 2]', 'notIn'],
  ])('%s', (text, op) => {
    const e = p(text);
    expect(e.kind === 'compare' && e.op).toBe(op);
  });

  it('reads IN with a tuple, an array or one value on the right', () => {
    expect(p("event IN ('a', 'b')")).toEqual(cmp('in', f('event'), { kind: 'tuple', items: [c('a'), c('b')] }));
    expect(p("event IN ['a']")).toEqual(cmp('in', f('event'), { kind: 'array', items: [c('a')] }));
    expect(p("event IN ('a')")).toEqual(cmp('in', f('event'), c('a')));
  });

  it('reads BETWEEN with bounds that stop at AND', () => {
    expect(p('x BETWEEN 1 AND 2 AND y')).toEqual(
      and({ kind: 'between', expr: f('x'), low: c(1), high: c(2), negated: false }, f('y')),
    );
    expect(p('x NOT BETWEEN a + 1 AND 5')).toEqual({
      kind: 'between',
      expr: f('x'),
      low: ar('+', f('a'), c(1)),
      high: c(5),
      negated: true,
    });
  });
});

describe('HogQL calls and sugar', () => {
  it('reads calls, parametric aggregates, DISTINCT and count(*)', () => {
    expect(p("concat(properties.$os, ' ', properties.$browser)")).toEqual(
      call('concat', f('properties', '$os'), c(' '), f('properties', '$browser')),
    );
    expect(p('quantile(0.9)(toFloat(properties.price))')).toEqual({
      kind: 'call',
      name: 'quantile',
      params: [c(0.9)],
      args: [call('toFloat', f('properties', 'price'))],
    });
    expect(p('count(DISTINCT person_id)')).toEqual({
      kind: 'call',
      name: 'count',
      args: [f('person_id')],
      distinct: true,
    });
    expect(p('count(*)')).toEqual(call('count'));
    expect(p('count()')).toEqual(call('count'));
    expect(p('f(a, b,)')).toEqual(call('f', f('a'), f('b')));
    expect(p('f(distinct)')).toEqual(call('f', f('distinct')));
  });

  it('reads CASE as multiIf, with null when ELSE is absent', () => {
    expect(p("CASE WHEN a THEN 'x' WHEN b THEN 'y' ELSE 'z' END")).toEqual(
      call('multiIf', f('a'), c('x'), f('b'), c('y'), c('z')),
    );
    expect(p("case event when '$pageview' then 1 end")).toEqual(
      call('multiIf', cmp('eq', f('event'), c('$pageview')), c(1), c(null)),
    );
  });

  it('reads INTERVAL as PostHog does', () => {
    expect(p('now() - INTERVAL 7 DAY')).toEqual(ar('-', call('now'), call('toIntervalDay', c(7))));
    expect(p('interval = 1')).toEqual(cmp('eq', f('interval'), c(1)));
  });

  it('reads aliases and skips comments', () => {
    expect(p('count() AS total')).toEqual({ kind: 'alias', alias: 'total', expr: call('count') });
    expect(p("x as 'my label'")).toEqual({ kind: 'alias', alias: 'my label', expr: f('x') });
    expect(p('1 /* one */ + -- comment\n 2 // more')).toEqual(ar('+', c(1), c(2)));
  });

  it('reads keywords case-insensitively and whitespace of any kind', () => {
    expect(p('a\u00A0AnD\tb\nOR\u2003c')).toEqual(or(and(f('a'), f('b')), f('c')));
  });
});

describe('select columns and orderBy entries', () => {
  it('takes the label from a trailing -- comment, else from AS', () => {
    expect(withoutSpans(parseSelectColumn('count() -- Total', ATTR).expr)).toEqual(call('count'));
    expect(parseSelectColumn('count() -- Total', ATTR).label).toBe('Total');
    expect(parseSelectColumn('count() AS total', ATTR).label).toBe('total');
    expect(withoutSpans(parseSelectColumn('count() AS total', ATTR).expr)).toEqual(call('count'));
    expect(parseSelectColumn('count() AS total -- Total', ATTR).label).toBe('Total');
    expect(parseSelectColumn('event', ATTR).label).toBeUndefined();
    expect(parseSelectColumn('(a -- inner\n)', ATTR).label).toBeUndefined();
  });

  it('reads a direction, ASC by default', () => {
    expect(parseOrderExpr('count() DESC', ATTR).direction).toBe('DESC');
    expect(parseOrderExpr('timestamp asc', ATTR).direction).toBe('ASC');
    expect(parseOrderExpr('timestamp', ATTR).direction).toBe('ASC');
    expect(withoutSpans(parseOrderExpr('toHour(timestamp) + 1 desc', ATTR).expr)).toEqual(
      ar('+', call('toHour', f('timestamp')), c(1)),
    );
    expect(() => parseOrderExpr('x DESC DESC', ATTR)).toThrow(ValidationError);
  });
});

describe('HogQL syntax errors are 400s naming the caller field', () => {
  it.each([
    ["'abc", /unterminated string starting at position 0/],
    ['`abc', /unterminated quoted identifier/],
    ['/* x', /unterminated comment/],
    ['a ! b', /unexpected character "!" at position 2/],
    ['a & b', /unexpected character "&"/],
    ['a b', /unexpected "b" at position 2, expected end of expression/],
    ['1 +', /unexpected end of expression, expected an expression/],
    ['f(a b)', /expected "," or "\)"/],
    ['(a', /expected "," or "\)"/],
    ['()', /unexpected "\)"/],
    ['1abc', /invalid number at position 0/],
    ['1.2.3', /invalid number/],
    ['0x', /invalid number/],
    ['CASE END', /expected WHEN/],
    ['CASE WHEN a THEN b', /expected END/],
    ['x BETWEEN 1', /expected AND/],
    ['x IS 1', /expected NULL/],
    ['AND a', /unexpected "AND" at position 0/],
    ['f(x).y', /cannot follow a call/],
    ['a.1', /expected a name after "."/],
    ['*', /only supported as count\(\*\)/],
    ['x IN COHORT 5', /IN COHORT is not supported/],
    ['now() - INTERVAL 1 fortnight', /expected an interval unit/],
    ['', /empty/],
    ['  -- only a comment', /empty/],
    // PostHog's grammar, not ClickHouse's: these are its syntax errors too (test/unit/hogql/posthog-parser-oracle.test.ts).
    ["'\\d+'", /unsupported escape "\\d" at position 1/],
    ['`a\\`b`', /unsupported escape/],
    ['"a\\\'b"', /unsupported escape/],
    ['+x', /expected a number after "\+"/],
    ['+(1)', /expected a number after "\+"/],
  ])('%s', (text, detail) => {
    rejects(text, detail);
  });

  it('refuses a non-string', () => {
    expect(() => parseExpr(42, ATTR)).toThrow(/must be a string/);
  });
});

describe('HogQL caps', () => {
  it('length: 10,000 characters', () => {
    rejects(`'${'a'.repeat(10_000)}'`, /too long: 10,002 characters \(the limit is 10,000\)/);
    expect(() => parseExpr(`${'1 + '.repeat(50)}1`, ATTR)).not.toThrow();
  });

  it('depth: 64 levels, of parentheses, unary operators or left-nested chains', () => {
    expect(() => parseExpr(`${'('.repeat(60)}1${')'.repeat(60)}`, ATTR)).not.toThrow();
    rejects(`${'('.repeat(65)}1${')'.repeat(65)}`, /nests too deeply \(the limit is 64 levels\)/);
    rejects(`${'NOT '.repeat(100)}x`, /nests too deeply/);
    rejects(`${'- '.repeat(100)}x`, /nests too deeply/);
    rejects(`${'f('.repeat(100)}${')'.repeat(100)}`, /nests too deeply/);
    rejects(`x${' + 1'.repeat(70)}`, /nests too deeply/);
    rejects(`x${'[1]'.repeat(70)}`, /nests too deeply/);
  });

  it('nodes: 2,000', () => {
    rejects(`[${'[1,1,1,1,1,1,1,1,1],'.repeat(250)}]`, /too many nodes \(the limit is 2,000\)/);
    rejects(`a${' OR a'.repeat(1_999)}`, /too many nodes/);
    rejects(`x${'.a'.repeat(2_001)}`, /too many nodes/);
  });

  it('string literals: 2,000 characters', () => {
    rejects(`'${'a'.repeat(2_001)}'`, /string literal is too long \(the limit is 2,000 characters\)/);
    expect(p(`'${'a'.repeat(2_000)}'`)).toEqual(c('a'.repeat(2_000)));
  });

  it('arguments: 100 per call; items: 1,000 per array or tuple', () => {
    rejects(`f(${'1, '.repeat(100)}1)`, /Function "f" has too many arguments \(the limit is 100\)/);
    rejects(`x IN (${'1, '.repeat(1_000)}1)`, /Tuple has too many items \(the limit is 1,000\)/);
    expect(() => parseExpr(`x IN (${'1, '.repeat(998)}1)`, ATTR)).not.toThrow();
  });
});
