import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { compileRegex, MAX_REGEX_PROGRAM } from '#shared/regex.ts';

const detailOf = (pattern: string): string => {
  try {
    compileRegex(pattern, 'value');
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).message;
  }
  throw new Error(`${pattern} compiled`);
};

/** Milliseconds one call takes, the best of three (the machine is shared). */
function bestOf3(run: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let k = 0; k < 3; k++) {
    const started = performance.now();
    run();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

describe('compileRegex (re2js, loaded lazily)', () => {
  it('refuses what RE2 refuses, with its wording, as a 400 on the value', () => {
    for (const [p, message] of [
      ['(a)\\1', /invalid escape sequence: `\\1`/],
      ['(?=x)a', /invalid or unsupported Perl syntax/],
      ['(?!x)a', /invalid or unsupported Perl syntax/],
      ['(?<=x)a', /invalid named capture/],
      ['(?<!x)a', /invalid named capture/],
      ['a*+', /invalid nested repetition operator/],
      ['a**', /invalid nested repetition operator/],
      ['a{1001}', /invalid repeat count/],
      ['(a{100}){20}', /invalid repeat count/],
      ['\\C', /invalid escape sequence/],
      ['[z-a]', /invalid character class range/],
      ['\\p{Foo}', /invalid character class range/],
      ['[[:foo:]]', /invalid character class range/],
      ['(a', /missing closing \)/],
      ['a)', /unexpected \)/],
      ['[a', /missing closing \]/],
      ['*a', /missing argument to repetition operator/],
      ['(?P<n>a)(?P<n>b)', /duplicate capture group name/],
      ['a\\', /trailing backslash/],
    ] as const) {
      const detail = detailOf(p);
      expect(detail, p).toMatch(message);
      expect(detail, p).toMatch(/^Invalid regular expression: .*\(RE2 syntax: no backreferences or lookarounds\)\.$/);
    }
  });

  it('counts program instructions, so counted repetition is refused with its size', () => {
    expect(detailOf('(\\w){999}#')).toContain(`compiles to 3000 RE2 instructions, the limit is ${MAX_REGEX_PROGRAM}`);
    expect(() => compileRegex('^https?://[^/]+/(docs|blog)/.*$', null)).not.toThrow();
  });

  it('matches hostile patterns in time linear in the text (four times the text, about four times the time)', () => {
    for (const [p, unit, end, expected] of [
      ['(a*)*b', 'a', '!', false],
      ['(a*)*b', 'a', 'b', true],
      ['(a|a)*b', 'a', '!', false],
      ['(x+x+)+y', 'x', '!', false],
      ['^(a+)+$', 'a', '!', false],
      ['^(a+)+$', 'a', '', true],
      ['(?i)(\\w+\\s?)*$', 'a ', '!', true],
    ] as const) {
      const re = compileRegex(p, null);
      const text = (n: number) => `${unit.repeat(n / unit.length)}${end}`;
      expect(re.test(text(20_000)), p).toBe(expected);
      const small = bestOf3(() => re.test(text(20_000)));
      const large = bestOf3(() => re.test(text(80_000)));
      // A backtracking engine takes minutes on 30 characters; linear: 4x the text, ~4x the time (noise allowed).
      expect(small, p).toBeLessThan(500);
      expect(large, p).toBeLessThan(Math.max(50, 12 * small));
      // Successive find() too (extract, replaceRegexpAll).
      const m = re.matcher(text(20_000));
      let found = 0;
      while (m.find() && found < 3) found++;
      expect(found > 0, p).toBe(expected);
    }
  });
});
