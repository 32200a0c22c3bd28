import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { Expr } from '#shared/hogql/ast.ts';
import { parseExpr, printHogQL, withoutSpans } from '#shared/hogql/index.ts';

const ATTR = 'query__select';
const parse = (text: string): Expr => withoutSpans(parseExpr(text, ATTR));

function roundTrips(text: string): string {
  const first = parse(text);
  const printed = printHogQL(first);
  expect(parse(printed)).toEqual(first);
  return printed;
}

describe('printHogQL', () => {
  it.each([
    ['1 + 2 * 3', '1 + 2 * 3'],
    ['(1 + 2) * 3', '(1 + 2) * 3'],
    ['1 - (2 - 3)', '1 - (2 - 3)'],
    ['(1 - 2) - 3', '1 - 2 - 3'],
    ['-(-x)', '-(-x)'],
    ['- -1', '-(-1)'],
    ['-(1)', '-(1)'],
    ['NOT (a) = b', '(NOT a) = b'],
    ['NOT ((a OR b) = c)', 'NOT ((a OR b) = c)'],
    ['NOT ((1, 2))', 'NOT ((1, 2))'],
    ['2 - -1', '2 - -1'],
    ['-(a + b) * 2', '-(a + b) * 2'],
    ['NOT (a AND b)', 'NOT (a AND b)'],
    ['NOT a = b', 'NOT a = b'],
    ['(NOT a) = b', '(NOT a) = b'],
    ['(a OR b) AND c', '(a OR b) AND c'],
    ['(a AND b) AND c', '(a AND b) AND c'],
    ['a OR b AND c', 'a OR b AND c'],
    ['x IS NOT NULL', 'x != null'],
    ['a ? b : c', 'if(a, b, c)'],
    ['a || b || c', 'concat(a, b, c)'],
    ["CASE x WHEN 1 THEN 'a' END", "multiIf(x = 1, 'a', null)"],
    ['arr[1]', 'arrayElement(arr, 1)'],
    ["properties['a b'].c", 'properties.`a b`.c'],
    ['`not`', '`not`'],
    ['properties.not', 'properties.not'],
    ['"desc"', '`desc`'],
    ["'it''s\\n\\x01\u0001'", "'it\\'s\\n\\\\x01\u0001'"],
    ['quantile(0.5)(x)', 'quantile(0.5)(x)'],
    ['COUNT(distinct x)', 'COUNT(DISTINCT x)'],
    ['x not between 1 and 2', 'x NOT BETWEEN 1 AND 2'],
    ['(x = 1) = (y = 2)', 'x = 1 = (y = 2)'],
    ['(a AS b) + 1', '(a AS b) + 1'],
    ["x AS 'my label'", 'x AS `my label`'],
    ["x AS ''", 'x AS ``'],
    ['`a``b`(properties.`c``d`)', '`a``b`(properties.`c``d`)'],
    ['(1,)', '(1,)'],
    ['1e21', '1e+21'],
    ['1e20', '1e+20'],
    ['9007199254740993.0', '9.007199254740992e+15'],
    ['9007199254740991', '9007199254740991'],
    ['1e999', 'inf'],
    ['-0', '-0'],
    ['nan', 'nan'],
    ["x NOT IN ('a', 'b')", "x NOT IN ('a', 'b')"],
    ["x !~* 'a'", "x !~* 'a'"],
  ])('%s prints as %s and parses back to the same tree', (text, printed) => {
    expect(roundTrips(text)).toBe(printed);
  });

  // Random expression text from the grammar: whatever parses prints back to the same tree.
  const word = fc.constantFrom('event', 'x', 'properties.$os', "properties['a b']", 'person.properties.email', '`and`');
  const literal = fc.oneof(
    fc.integer({ min: -1_000, max: 1_000 }).map(String),
    fc.double({ noNaN: false }).map((d) => (Number.isNaN(d) ? 'nan' : String(d).replace('Infinity', 'inf'))),
    fc.string({ maxLength: 6 }).map((s) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`),
    fc.constantFrom('true', 'false', 'null'),
  );
  const { expr } = fc.letrec<{ expr: string }>((tie) => ({
    expr: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      word,
      literal,
      fc
        .tuple(
          tie('expr'),
          fc.constantFrom(
            '+',
            '-',
            '*',
            '/',
            '%',
            '||',
            '=',
            '!=',
            '<',
            '>=',
            'LIKE',
            'NOT ILIKE',
            '=~',
            '!~*',
            'AND',
            'OR',
            'IN',
            'NOT IN',
            '??',
          ),
          tie('expr'),
        )
        .map(([a, op, b]) => `${a} ${op} ${b}`),
      tie('expr').map((a) => `(${a})`),
      tie('expr').map((a) => `-${a}`),
      tie('expr').map((a) => `NOT ${a}`),
      tie('expr').map((a) => `${a} IS NOT NULL`),
      tie('expr').map((a) => `${a}[2]`),
      fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([a, b, c]) => `${a} BETWEEN ${b} AND ${c}`),
      fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([a, b, c]) => `${a} ? ${b} : ${c}`),
      fc.tuple(tie('expr'), tie('expr')).map(([a, b]) => `CASE WHEN ${a} THEN ${b} END`),
      fc.array(tie('expr'), { maxLength: 3 }).map((xs) => `f(${xs.join(', ')})`),
      fc.array(tie('expr'), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
      fc.array(tie('expr'), { minLength: 2, maxLength: 3 }).map((xs) => `(${xs.join(', ')})`),
      tie('expr').map((a) => `quantile(0.5)(${a})`),
      tie('expr').map((a) => `count(DISTINCT ${a})`),
      tie('expr').map((a) => `(${a} AS y)`),
    ),
  }));

  it('round-trips random expressions (property)', () => {
    fc.assert(
      fc.property(expr, (text) => {
        let first: Expr;
        try {
          first = parse(text);
        } catch (e) {
          // Random text may break a cap or be ill-formed (`- -x` is fine, `1 --x` is a comment).
          expect(e).toBeInstanceOf(ValidationError);
          return;
        }
        expect(parse(printHogQL(first))).toEqual(first);
      }),
      { numRuns: 2_000 },
    );
  });
});
