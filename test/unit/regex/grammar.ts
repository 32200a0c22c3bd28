/**
 * Random RE2 patterns and texts for the differential test against re2js: a small grammar over the
 * features the service accepts (and some it must refuse), with a fixed-seed generator.
 */
import { prng } from '../../support/prng.ts';

export const rng = prng;

/** Text characters: ASCII, case-folding specials (Kelvin sign, long s, final sigma), accents, astral. */
const TEXT = [
  'a',
  'a',
  'a',
  'b',
  'b',
  'c',
  '1',
  '_',
  ' ',
  'A',
  'B',
  'k',
  'K',
  's',
  'S',
  'ſ',
  'K',
  'é',
  'É',
  'γ',
  'Σ',
  'σ',
  'ς',
  '😀',
  '😂',
  '1',
  '9',
  '_',
  ' ',
  '-',
  '.',
  '/',
  '\n',
];

const LITERALS = [
  'a',
  'b',
  'c',
  'A',
  'k',
  's',
  'é',
  'σ',
  'Σ',
  '😀',
  '1',
  '_',
  ' ',
  '-',
  '\\.',
  '/',
  '\\n',
  '\\x41',
  '\\x{1F600}',
  '\\141',
  '\\Q.*\\E',
  '\\-',
  '\\ ',
];
const CLASSES = [
  '[abc]',
  '[^a-c]',
  '[a-zA-Z]',
  '[[:alpha:]]',
  '[[:^digit:]x]',
  '[\\d_]',
  '\\pL',
  '\\p{Greek}',
  '\\PL',
  '\\p{^Greek}',
  '[\\p{Lu}1]',
  '[😀-😂]',
  '[^\\s]',
  '[a-]',
  '[]a]',
  '[^\\n]',
  '[\\w-]',
  '\\p{Lu}',
  '[[:upper:]]',
  '[k]',
  '[^k]',
  '[^\\PL]',
];
const ESCAPES = ['\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\b', '\\B', '\\A', '\\z', '^', '$', '.'];
const INVALID = [
  '\\1',
  '(?=a)',
  '(?!a)',
  '(?<=a)',
  'a**',
  '[z-a]',
  '(',
  ')',
  'a{1001}',
  '\\8',
  '(?P<>a)',
  '[[:foo:]]',
  '\\p{Foo}',
  '\\C',
  'x{2}{3}',
  '*',
  '(?P=n)',
  '\\',
  '[a',
  '(?i',
  '\\x{110000}',
  '(?<!a)',
];
const QUANTIFIERS = ['*', '+', '?', '{2}', '{1,}', '{0,2}', '{1,3}', '{0}', '{,2}', '{x}'];

export function pattern(r: () => number, depth = 0): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  const atom = (): string => {
    const x = r();
    if (depth < 3 && x < 0.2) {
      const inner = pattern(r, depth + 1);
      return pick([
        `(${inner})`,
        `(?:${inner})`,
        `(?P<g${depth}${Math.floor(r() * 99)}>${inner})`,
        `(?i:${inner})`,
        `(?s:${inner})`,
        `(?U:${inner})`,
        `(?<n${Math.floor(r() * 99)}>${inner})`,
      ]);
    }
    if (x < 0.55) return pick(LITERALS);
    if (x < 0.8) return pick(CLASSES);
    if (x < 0.99) return pick(ESCAPES);
    return pick(INVALID);
  };
  const piece = () => {
    let a = atom();
    if (r() < 0.45) a += pick(QUANTIFIERS) + (r() < 0.3 ? '?' : '');
    return a;
  };
  const seq = () => Array.from({ length: 1 + Math.floor(r() * 3) }, piece).join('');
  let p = seq();
  while (r() < 0.25) p += `|${seq()}`;
  if (depth === 0 && r() < 0.3) p = pick(['(?i)', '(?m)', '(?s)', '(?U)', '(?im)', '(?i-s)']) + p;
  return p;
}

export function text(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * 24);
  for (let i = 0; i < n; i++) s += TEXT[Math.floor(r() * TEXT.length)];
  return s;
}
