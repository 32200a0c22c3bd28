import { describe, expect, it } from 'vitest';
import { compileRegex, MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM } from '#shared/trends/properties.ts';
import { ev, expectValidation, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const at = '2020-01-10T09:00:00Z';
const matches = (pattern: string, text: string) => compileRegex(pattern, 'x').test(text);
const parse = (operator: string, value: unknown) => () =>
  trend({ events: [{ id: 'e' }], properties: [{ key: 'k', operator, value }] }, [], { now: NOW });

describe('regex filters follow RE2 (ClickHouse match()) semantics', () => {
  it('inline flags, anchors, unanchored search', () => {
    expect(matches('(?i)^chr', 'Chromium')).toBe(true);
    expect(matches('^chr', 'Chromium')).toBe(false);
    expect(matches('rom', 'Chromium')).toBe(true);
    expect(matches('^Chrome$', 'Chrome 120')).toBe(false);
    expect(matches('(?i)é', 'É')).toBe(true);
  });

  it('unicode classes match letters (a JS RegExp without the u flag read \\p{L} as the literal text "p{L}")', () => {
    expect(matches('^\\p{L}+$', 'héllo')).toBe(true);
    expect(matches('^\\pL+$', 'Ωmega')).toBe(true);
    expect(matches('^\\p{L}+$', 'a1')).toBe(false);
    expect(matches('\\p{L}', 'p{L}')).toBe(true);
    expect(matches('^\\p{L}$', 'p{L}')).toBe(false);
  });

  it('. stops at a newline unless (?s); $ is the end of the text unless (?m)', () => {
    expect(matches('^a.b$', 'a\nb')).toBe(false);
    expect(matches('(?s)^a.b$', 'a\nb')).toBe(true);
    expect(matches('^a$', 'a\nb')).toBe(false);
    expect(matches('(?m)^a$', 'a\nb')).toBe(true);
    expect(matches('^.$', '😀')).toBe(true); // one code point
  });

  it('refuses what RE2 cannot run (backreferences, lookarounds) with a 400 on the value', () => {
    for (const pattern of ['(a)\\1', '(?=x)a', '(?!x)a', '(?<=x)a', '(?<!x)a']) {
      const error = expectValidation(parse('regex', pattern), 'properties__0__value');
      expect(error.detail).toMatch(/^Invalid regular expression: .*RE2/);
    }
    expectValidation(parse('not_regex', ['^ok$', '(a)\\1']), 'properties__0__value');
  });

  it(`caps a pattern at ${MAX_REGEX_LENGTH} characters and its compiled size at ${MAX_REGEX_PROGRAM} instructions`, () => {
    expect(() => parse('regex', 'a'.repeat(MAX_REGEX_LENGTH))()).not.toThrow();
    const long = expectValidation(parse('regex', 'a'.repeat(MAX_REGEX_LENGTH + 1)), 'properties__0__value');
    expect(long.detail).toContain(String(MAX_REGEX_LENGTH));
    // 10 characters, 3,000 instructions: counted repetition multiplies the work per character matched.
    const big = expectValidation(parse('regex', '(\\w){999}#'), 'properties__0__value');
    expect(big.detail).toContain(String(MAX_REGEX_PROGRAM));
  });

  it("answers ^(a+)+$ against 10,000 a's and a ! at once (a backtracking engine takes minutes)", () => {
    const hostile = `${'a'.repeat(10_000)}!`;
    const events = [ev('e', at, { props: { k: hostile } }), ev('e', at, { props: { k: 'aaa' } })];
    const started = performance.now();
    const count = (operator: string) =>
      trend({ events: [{ id: 'e' }], properties: [{ key: 'k', operator, value: '^(a+)+$' }] }, events, { now: NOW })
        .result[0]!.count;
    expect(count('regex')).toBe(1);
    expect(count('not_regex')).toBe(1);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
