import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { parseExpr, parseOrderExpr, parseSelectColumn } from '#shared/hogql/index.ts';

const ATTR = 'query__where__0';

/** Parses with every entry point; anything thrown must be a 400 naming the caller's field. */
function onlyValidationErrors(text: string): void {
  for (const entry of [parseExpr, parseSelectColumn, parseOrderExpr]) {
    try {
      entry(text, ATTR);
    } catch (e) {
      if (!(e instanceof ValidationError) || e.attr !== ATTR) throw e;
    }
  }
}

const TOKENS = [
  '(',
  ')',
  '[',
  ']',
  ',',
  '.',
  '?',
  ':',
  '+',
  '-',
  '*',
  '/',
  '%',
  '||',
  '??',
  '=',
  '==',
  '!=',
  '<>',
  '<',
  '<=',
  '>',
  '>=',
  '=~',
  '!~',
  '=~*',
  '!~*',
  '~',
  '~*',
  'AND',
  'OR',
  'NOT',
  'IN',
  'LIKE',
  'ILIKE',
  'BETWEEN',
  'IS',
  'NULL',
  'true',
  'CASE',
  'WHEN',
  'THEN',
  'ELSE',
  'END',
  'AS',
  'DISTINCT',
  'INTERVAL',
  'DAY',
  'ASC',
  'DESC',
  'count',
  'quantile',
  'properties',
  '$os',
  'person',
  'event',
  "'s'",
  "''",
  "'\\'",
  '`q`',
  '"q"',
  '1',
  '0x',
  '1e',
  '.5',
  'inf',
  'nan',
  '--',
  '/*',
  '*/',
  '\n',
  '!',
  '&',
  '\u00A0',
  '\u0000',
];

describe('HogQL parser under hostile input', () => {
  it('random strings never throw anything but a ValidationError (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200, unit: 'binary' }), (text) => onlyValidationErrors(text)),
      { numRuns: 1_000 },
    );
  });

  it('token soups never throw anything but a ValidationError (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 60 }), fc.constantFrom(' ', ''), (tokens, sep) =>
        onlyValidationErrors(tokens.join(sep)),
      ),
      { numRuns: 5_000 },
    );
  });

  it('10,000-character pathological inputs finish quickly (linear parse)', () => {
    const inputs = [
      '('.repeat(10_000),
      `${'('.repeat(5_000)}${')'.repeat(5_000)}`,
      '['.repeat(10_000),
      `1${' + 1'.repeat(2_499)}`,
      `a${' OR a'.repeat(1_999)}`,
      `x${'.a'.repeat(4_999)}`,
      `x${"['a']".repeat(1_428)}`,
      'NOT '.repeat(2_500),
      '- '.repeat(5_000),
      `f(${'1,'.repeat(4_990)})`,
      `x IN (${'1,'.repeat(4_990)})`,
      `'${'\\x41'.repeat(2_499)}'`,
      `${'/**/'.repeat(2_499)}1`,
      `${'--\n'.repeat(3_333)}1`,
      `1${' '.repeat(9_998)}`,
      `${'a ? '.repeat(2_500)}`,
      `${'CASE WHEN '.repeat(1_000)}`,
      `${'1 BETWEEN '.repeat(1_000)}`,
    ];
    const started = performance.now();
    for (const text of inputs) {
      expect(text.length).toBeLessThanOrEqual(10_000);
      onlyValidationErrors(text);
    }
    // Generous: each input is ~1 ms when linear; a quadratic parse would take seconds.
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});
