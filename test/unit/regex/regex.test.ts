import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { Regex, RegexSyntaxError, RegexTooLarge } from '#shared/regex/index.ts';
import { pattern, rng, text } from './grammar.ts';

interface Engine {
  test(s: string): boolean;
  groupCount(): number;
  matcher(s: string): { find(): boolean; start(): number; end(): number; group(i: number): string | null };
}

/** test(), then every successive find() with its span and groups, as one comparable string. */
function trace(re: Engine, s: string): string {
  const m = re.matcher(s);
  const out = [String(re.test(s))];
  for (let k = 0; k < 40 && m.find(); k++) {
    const groups = Array.from({ length: re.groupCount() + 1 }, (_, i) => m.group(i));
    out.push(`${m.start()}-${m.end()}${JSON.stringify(groups)}`);
  }
  return out.join(' ');
}

const compile = <T>(make: () => T): T | null => {
  try {
    return make();
  } catch {
    return null;
  }
};

describe('shared/regex answers as re2js does (differential, fixed seed)', () => {
  it('accepts and refuses the same patterns, and finds the same matches, spans and groups', () => {
    const r = rng(20261127);
    let cases = 0;
    let matched = 0;
    let refused = 0;
    let patterns = 0;
    for (; patterns < 1500; patterns++) {
      const p = pattern(r);
      const mine = compile(() => new Regex(p));
      const ref = compile(() => RE2JS.compile(p));
      expect(mine === null, `accepts ${JSON.stringify(p)}`).toBe(ref === null);
      if (!mine || !ref) {
        refused++;
        continue;
      }
      for (let k = 0; k < 8; k++) {
        const t = text(r);
        const expected = trace(ref, t);
        expect(trace(mine, t), `${JSON.stringify(p)} on ${JSON.stringify(t)}`).toBe(expected);
        cases++;
        if (expected.startsWith('true')) matched++;
      }
    }
    // Not vacuous: most patterns compile, and a good share of the texts match.
    expect(cases).toBeGreaterThan(10_000);
    expect(matched / cases).toBeGreaterThan(0.3);
    expect(refused).toBeGreaterThan(20);
    expect(refused / patterns).toBeLessThan(0.2);
  });

  it('pinned: flags, anchors, folding, Unicode classes, astral text, lazy and counted repetition', () => {
    const same = (p: string, t: string) =>
      expect(trace(new Regex(p), t), `${p} on ${t}`).toBe(trace(RE2JS.compile(p), t));
    same('(?i)^chr', 'Chromium');
    same('^Chrome$', 'Chrome 120');
    same('(?i)é', 'É');
    same('^\\p{L}+$', 'héllo');
    same('^\\pL+$', 'Ωmega');
    same('\\p{L}', 'p{L}');
    same('(?s)^a.b$', 'a\nb');
    same('(?m)^a$', 'a\nb');
    same('^a$', 'a\n');
    same('^.$', '😀');
    same('x*', '😀a😀');
    same('a*', 'baaa');
    same('(?i)k', '\u212a');
    same('(?i)\\W', '\u212aſ!');
    same('(?i)[^k]', 'kK\u212ax');
    // Simple case folding as RE2 has it: ß/ẞ, µ/μ/Μ, θ/ϑ/ϴ are one orbit; ı and İ are alone.
    for (const p of ['(?i)ß', '(?i)µ', '(?i)ϑ', '(?i)ı', '(?i)İ', '(?i)\\P{Lu}', '(?i)[[:^lower:]]', '(?i)ǅ'])
      same(p, 'ẞßμΜθϴΘiIǄǆx');
    same('\\p{Greek}+|\\p{^Greek}', 'abγδε');
    same('a{2,4}?', 'aaaaa');
    same('(?U)a+', 'aaa');
    same('(|a)*', 'aa');
    same('(a|)*', 'aa');
    same('(a*)+', 'b');
    same('(a|ab)(c|bcd)(d*)', 'abcd');
    same('^https?://[^/]+/(docs|blog)/.*$', 'https://example.com/docs/start');
    same('(?i)chrome|firefox', 'Mozilla/5.0 Firefox/120');
    same('[[:alpha:]]+\\b', '12abc def');
    same('\\Q.*\\E+', 'a.**');
    same('(?P<x>\\d+)-(?<y>\\d+)', 'id 12-345');
    same('.|x*', 'a\udc00b\ud800');
    same('[^a]\\x{D800}', '\ud800\ud800');
    same('\\p{Yi}|\\p{Thai}+|\\p{Nko}', 'aก꒐');
  });

  it('refuses what RE2 refuses, with its wording', () => {
    const refuse = (p: string, message: RegExp) => {
      expect(() => RE2JS.compile(p)).toThrow();
      expect(() => new Regex(p)).toThrow(RegexSyntaxError);
      expect(() => new Regex(p)).toThrow(message);
      // Word for word what re2js said, so a user's 400 reads as before.
      const said = (make: () => unknown) => {
        try {
          make();
        } catch (error) {
          return (error as Error).message;
        }
      };
      expect(said(() => new Regex(p))).toBe(said(() => RE2JS.compile(p)));
    };
    refuse('(a)\\1', /invalid escape sequence: `\\1`/);
    refuse('(?=x)a', /invalid or unsupported Perl syntax/);
    refuse('(?!x)a', /invalid or unsupported Perl syntax/);
    refuse('(?<=x)a', /invalid named capture/);
    refuse('(?<!x)a', /invalid named capture/);
    refuse('a*+', /invalid nested repetition operator/);
    refuse('a**', /invalid nested repetition operator/);
    refuse('a{1001}', /invalid repeat count/);
    refuse('(a{100}){20}', /invalid repeat count/);
    refuse('\\C', /invalid escape sequence/);
    refuse('[z-a]', /invalid character class range/);
    refuse('\\p{Foo}', /invalid character class range/);
    refuse('\\p{Grek}', /invalid character class range/);
    refuse('\\p{Letter}', /invalid character class range/);
    refuse('[[:foo:]]', /invalid character class range/);
    refuse('(a', /missing closing \)/);
    refuse('a)', /unexpected \)/);
    refuse('[a', /missing closing \]/);
    refuse('*a', /missing argument to repetition operator/);
    refuse('(?P<n>a)(?P<n>b)', /duplicate capture group name/);
    refuse('a\\', /trailing backslash/);
  });
});

describe('shared/regex: bounded work whatever the pattern', () => {
  it('counts program instructions before building, so counted repetition is refused early', () => {
    expect(() => new Regex('(\\w){999}#', 2_000)).toThrow(RegexTooLarge);
    const sized = (p: string) => new Regex(p, 2_000).size;
    expect(sized('^https?://[^/]+/(docs|blog)/.*$')).toBeLessThan(40);
    expect(sized('(?i)chrome|firefox')).toBeLessThan(20);
    // As large as re2js counts, within a few instructions (re2js: 3,000).
    try {
      new Regex('(\\w){999}#', 2_000);
    } catch (error) {
      expect((error as RegexTooLarge).size).toBeGreaterThan(2_990);
    }
  });

  it('matches hostile patterns against 20,000 characters in steps linear in text x program', () => {
    // Each against a text it does not match (the DFA answers) and one it matches at the very end (the Pike VM runs).
    for (const [p, unit, end] of [
      ['(a*)*b', 'a', '!'],
      ['(a*)*b', 'a', 'b'],
      ['(a|a)*b', 'a', '!'],
      ['(a|a)*b', 'a', 'b'],
      ['(x+x+)+y', 'x', '!'],
      ['(x+x+)+y', 'x', 'y'],
      ['^(a+)+$', 'a', '!'],
      ['^(a+)+$', 'a', ''],
      ['(?i)(\\w+\\s?)*$', 'a ', '!'],
    ] as const) {
      const s = `${unit.repeat(20_000 / unit.length)}${end}`;
      const re = new Regex(p);
      const ref = RE2JS.compile(p);
      expect(re.test(s), p).toBe(ref.test(s));
      const m = re.matcher(s);
      let found = 0;
      while (m.find() && found < 3) found++;
      // Every position visits each instruction at most a few times (an ALT is reached from two sides).
      expect(re.steps, p).toBeLessThanOrEqual(4 * (s.length + 1) * re.size * (1 + found + 1));
      expect(re.steps, p).toBeGreaterThan(s.length);
    }
  });

  it('keeps test() in bounded memory: a pattern with more DFA states than the cache holds still answers right', () => {
    // The 13th character from the end decides: 4,096 subsets of threads, over the 2,000-state cache.
    const p = 'a[ab]{12}$';
    const r = rng(7);
    let s = '';
    for (let k = 0; k < 20_000; k++) s += r() < 0.5 ? 'a' : 'b';
    const re = new Regex(p);
    const ref = RE2JS.compile(p);
    for (const t of [`${s}b${'a'.repeat(12)}`, `${s}a${'b'.repeat(12)}`, s.slice(0, 5_000), s.slice(5_000)]) {
      expect(re.test(t)).toBe(ref.test(t));
      expect(re.test(t)).toBe(re.matcher(t).find());
      expect(re.cachedStates).toBeLessThanOrEqual(2_000);
    }
    expect(re.cacheResets).toBeGreaterThan(0);
    expect(re.steps).toBeLessThanOrEqual(4 * 4 * 25_001 * re.size * 2);
    // 60,000 distinct Han code points (BMP and astral): one transition each, over the 50,000-edge cap beyond ASCII.
    const han = Array.from({ length: 60_000 }, (_, k) =>
      String.fromCodePoint(k < 20_000 ? 0x4e00 + k : 0x20000 + k),
    ).join('');
    const wide = new Regex('[^a]{3}z|\\p{Han}{4}$');
    const answer = RE2JS.compile('[^a]{3}z|\\p{Han}{4}$').test(han);
    for (let k = 0; k < 2; k++) expect(wide.test(han)).toBe(answer);
    expect(wide.cacheResets).toBeGreaterThan(0);
    // Large states: ~200 threads each, over the 250,000 thread entries the cache holds before 2,000 states.
    const big = new Regex('a[ab]{400}$', 2_000);
    const many = `${s.slice(0, 3_000)}b${'a'.repeat(400)}`;
    expect(big.test(many)).toBe(RE2JS.compile('a[ab]{400}$').test(many));
    expect(big.cacheResets).toBeGreaterThan(0);
    expect(big.cachedStates).toBeLessThan(1_500);
  });
});
