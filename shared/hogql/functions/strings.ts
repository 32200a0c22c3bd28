/**
 * String functions. Non-string arguments are read as their text (a numeric property in one event
 * and a string in another behaves the same). `length` counts UTF-8 bytes as ClickHouse does;
 * positions, substrings, pads and reverse count characters (ClickHouse's ...UTF8 variants), so they
 * never split a character; for ASCII both are the same.
 */
import { compileRegex, type Regex } from '#shared/regex.ts';
import { toNum, toText } from '../convert.ts';
import { compileLike } from '../operators.ts';
import type { HogValue } from '../values.ts';
import { MAX_ARRAY_OUTPUT, MAX_STRING_OUTPUT, type ScalarFunction, type Site, scalar } from './types.ts';

const ci = { caseInsensitive: true } as const;
const SURROGATE = /[\uD800-\uDFFF]/;

/** Characters (code points) of a string, without splitting when there are no surrogate pairs. */
const chars = (s: string): string | string[] => (SURROGATE.test(s) ? Array.from(s) : s);
const join = (c: string | string[]) => (typeof c === 'string' ? c : c.join(''));
const slice = (c: string | string[], from: number, to?: number) =>
  typeof c === 'string' ? c.slice(from, to) : c.slice(from, to).join('');

export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** lower/upper change ASCII letters only, as ClickHouse's (lowerUTF8 is another function). */
const asciiCase = (s: string, upper: boolean): string =>
  upper ? s.replace(/[a-z]+/g, (m) => m.toUpperCase()) : s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

const int = (v: HogValue, site: Site, what: string): number => {
  const n = toNum(v);
  if (n === null || !Number.isFinite(n)) site.fail(`${what} must be a number.`);
  return Math.trunc(n);
};

/** Removes spaces (only ' ', as ClickHouse's trim) by scanning: `/ +$/` would be quadratic on long runs of spaces. */
function trimSpaces(s: string, left: boolean, right: boolean): string {
  let start = 0;
  let end = s.length;
  if (left) while (start < end && s.charCodeAt(start) === 32) start++;
  if (right) while (end > start && s.charCodeAt(end - 1) === 32) end--;
  return s.slice(start, end);
}

/** substring(s, offset[, length]): 1-based; a negative offset counts from the end; offset 0 is ''; a negative length stops that many before the end. */
export function substring(s: string, offset: number, length: number | undefined): string {
  const c = chars(s);
  const n = c.length;
  if (offset === 0) return '';
  let start = offset > 0 ? offset - 1 : n + offset;
  if (start < 0) {
    if (length !== undefined && length >= 0) length += start;
    start = 0;
  }
  if (start >= n) return '';
  let end = n;
  if (length !== undefined) end = length >= 0 ? Math.min(n, start + length) : n + length;
  return end <= start ? '' : slice(c, start, end);
}

function pad(site: Site, s: string, lengthArg: HogValue, fill: string, left: boolean): string {
  const length = int(lengthArg, site, 'the length');
  if (length > MAX_STRING_OUTPUT)
    site.fail(`the length ${length} is over ${MAX_STRING_OUTPUT}, the cap on any function's output.`);
  if (length <= 0) return '';
  const c = chars(s);
  if (c.length >= length) return slice(c, 0, length);
  const f = chars(fill);
  if (f.length === 0) return s;
  const need = length - c.length;
  let padding = '';
  const whole = Math.floor(need / f.length);
  padding = join(f).repeat(whole) + slice(f, 0, need - whole * f.length);
  return left ? padding + s : s + padding;
}

/** ClickHouse's \0..\9 substitutions in a regex replacement. */
function substitute(replacement: string, m: { group(i: number): string | null }, groups: number): string {
  if (!replacement.includes('\\')) return replacement;
  let out = '';
  for (let i = 0; i < replacement.length; i++) {
    const ch = replacement[i] as string;
    if (ch === '\\' && i + 1 < replacement.length) {
      const next = replacement[i + 1] as string;
      if (next >= '0' && next <= '9') {
        const g = Number(next);
        out += g <= groups ? (m.group(g) ?? '') : '';
        i++;
        continue;
      }
      out += next;
      i++;
      continue;
    }
    out += ch;
  }
  return out;
}

function regexReplace(site: Site, s: string, pattern: string, replacement: string, all: boolean): string {
  const re = regexOf(site, pattern);
  const m = re.matcher(s);
  const groups = re.groupCount();
  let out = '';
  let last = 0;
  while (m.find()) {
    const start = m.start();
    const end = m.end();
    out += s.slice(last, start) + substitute(replacement, m, groups);
    if (out.length > MAX_STRING_OUTPUT) site.text(out);
    last = end;
    if (!all) break;
  }
  return site.text(out + s.slice(last));
}

export function regexOf(site: Site, pattern: string): Regex {
  return site.memo(`re:${pattern}`, (p) => compileRegex(p.slice(3), site.attr));
}

export function likeOf(site: Site, pattern: string, caseInsensitive: boolean): (s: string) => boolean {
  return site.memo(`${caseInsensitive ? 'il' : 'l'}:${pattern}`, () => compileLike(pattern, caseInsensitive));
}

function split(site: Site, s: string, sep: string, max: HogValue | undefined): string[] {
  const limit = max === undefined || max === null ? 0 : int(max, site, 'max_substrings');
  const parts: string[] = [];
  if (sep === '') {
    for (const ch of s) {
      parts.push(ch);
      if (parts.length > MAX_ARRAY_OUTPUT) break;
    }
  } else {
    let from = 0;
    for (;;) {
      const at = s.indexOf(sep, from);
      if (at < 0) {
        parts.push(s.slice(from));
        break;
      }
      parts.push(s.slice(from, at));
      from = at + sep.length;
      if (parts.length > MAX_ARRAY_OUTPUT) break;
    }
  }
  if (limit > 0 && parts.length > limit) parts.length = limit;
  if (parts.length > MAX_ARRAY_OUTPUT)
    site.fail(`the result would have more than ${MAX_ARRAY_OUTPUT} items, the cap on any function's array output.`);
  return parts;
}

const str = (v: HogValue | undefined): string => toText(v ?? null);

export const STRINGS: ScalarFunction[] = [
  scalar('lower', 1, 1, ([s]) => asciiCase(str(s), false), ci),
  scalar('upper', 1, 1, ([s]) => asciiCase(str(s), true), ci),
  scalar(
    'length',
    1,
    1,
    ([v]) => {
      const a = Array.isArray(v) ? v : null;
      return a ? a.length : utf8Length(str(v));
    },
    ci,
  ),
  // PostHog prints each argument as ifNull(toString(arg), ''): a NULL part is '' (so `a || b` never vanishes).
  scalar(
    'concat',
    2,
    Number.POSITIVE_INFINITY,
    (args, site) => {
      let out = '';
      for (const a of args) {
        out += str(a);
        if (out.length > MAX_STRING_OUTPUT) site.text(out);
      }
      return out;
    },
    { ...ci, nullable: false },
  ),
  scalar(
    'substring',
    2,
    3,
    ([s, o, l], site) =>
      substring(str(s), int(o ?? null, site, 'the offset'), l === undefined ? undefined : int(l, site, 'the length')),
    ci,
  ),
  scalar('trim', 1, 1, ([s]) => trimSpaces(str(s), true, true), ci),
  scalar('trimLeft', 1, 1, ([s]) => trimSpaces(str(s), true, false), ci),
  scalar('trimRight', 1, 1, ([s]) => trimSpaces(str(s), false, true), ci),
  scalar('replaceAll', 3, 3, ([s, from, to], site) => {
    const needle = str(from);
    const text = str(s);
    if (needle === '') return text;
    return site.text(text.split(needle).join(str(to)));
  }),
  scalar('replaceOne', 3, 3, ([s, from, to], site) => {
    const needle = str(from);
    const text = str(s);
    const at = needle === '' ? -1 : text.indexOf(needle);
    return at < 0 ? text : site.text(text.slice(0, at) + str(to) + text.slice(at + needle.length));
  }),
  scalar('replaceRegexpAll', 3, 3, ([s, p, r], site) => regexReplace(site, str(s), str(p), str(r), true), {
    constantArgs: [1],
  }),
  scalar('replaceRegexpOne', 3, 3, ([s, p, r], site) => regexReplace(site, str(s), str(p), str(r), false), {
    constantArgs: [1],
  }),
  scalar('splitByChar', 2, 3, ([sep, s, max], site) => {
    const c = str(sep);
    if (Array.from(c).length !== 1) site.fail('the separator must be exactly one character.');
    return split(site, str(s), c, max);
  }),
  scalar('splitByString', 2, 3, ([sep, s, max], site) => split(site, str(s), str(sep), max)),
  scalar('startsWith', 2, 2, ([s, p]) => str(s).startsWith(str(p))),
  scalar('endsWith', 2, 2, ([s, p]) => str(s).endsWith(str(p))),
  scalar(
    'position',
    2,
    3,
    ([s, n, from], site) => {
      const c = chars(str(s));
      const needle = str(n);
      const start = from === undefined ? 1 : int(from, site, 'the start position');
      if (start < 1 || start > c.length + 1) return 0;
      const text = join(c);
      // Character offset of the start as a code-unit offset, and the found offset back to characters.
      const unitStart = typeof c === 'string' ? start - 1 : c.slice(0, start - 1).join('').length;
      const at = text.indexOf(needle, unitStart);
      if (at < 0) return 0;
      return (typeof c === 'string' ? at : Array.from(text.slice(0, at)).length) + 1;
    },
    ci,
  ),
  scalar('like', 2, 2, ([s, p], site) => likeOf(site, str(p), false)(str(s)), { constantArgs: [1] }),
  scalar('ilike', 2, 2, ([s, p], site) => likeOf(site, str(p), true)(str(s)), { constantArgs: [1] }),
  scalar('notLike', 2, 2, ([s, p], site) => !likeOf(site, str(p), false)(str(s)), { constantArgs: [1] }),
  scalar('notILike', 2, 2, ([s, p], site) => !likeOf(site, str(p), true)(str(s)), { constantArgs: [1] }),
  scalar('match', 2, 2, ([s, p], site) => regexOf(site, str(p)).test(str(s)), { constantArgs: [1] }),
  scalar(
    'extract',
    2,
    2,
    ([s, p], site) => {
      const re = regexOf(site, str(p));
      const m = re.matcher(str(s));
      if (!m.find()) return '';
      return (re.groupCount() > 0 ? m.group(1) : m.group(0)) ?? '';
    },
    { constantArgs: [1] },
  ),
  scalar('leftPad', 2, 3, ([s, l, f], site) => pad(site, str(s), l ?? null, f === undefined ? ' ' : str(f), true)),
  scalar('rightPad', 2, 3, ([s, l, f], site) => pad(site, str(s), l ?? null, f === undefined ? ' ' : str(f), false)),
  scalar(
    'reverse',
    1,
    1,
    ([v]) => {
      if (Array.isArray(v)) return [...v].reverse();
      return Array.from(str(v)).reverse().join('');
    },
    ci,
  ),
  scalar('empty', 1, 1, ([v]) => {
    const a = Array.isArray(v) ? v : null;
    return a ? a.length === 0 : str(v) === '';
  }),
  scalar('notEmpty', 1, 1, ([v]) => {
    const a = Array.isArray(v) ? v : null;
    return a ? a.length > 0 : str(v) !== '';
  }),
  scalar('repeat', 2, 2, ([s, n], site) => {
    const times = int(n ?? null, site, 'the count');
    const text = str(s);
    if (times <= 0 || text === '') return '';
    if (times * text.length > MAX_STRING_OUTPUT)
      site.fail(`the result would be longer than ${MAX_STRING_OUTPUT} characters, the cap on any function's output.`);
    return text.repeat(times);
  }),
];
