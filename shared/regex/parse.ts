/**
 * RE2's syntax as ClickHouse's match() and re2js (Perl flags) read it, parsed into a small tree.
 * What RE2 refuses (backreferences, lookarounds, possessive or doubled repetition, \C) is refused here
 * with RE2's own wording, so a user's 400 reads the same as before.
 */

/** One code point test: a literal, `.` (with or without \n), or a class. */
export type CharTest = number | 'dot' | 'any' | CharSet;

export type Node =
  | { k: 'char'; c: CharTest }
  | { k: 'empty' }
  | { k: 'assert'; a: Assert }
  | { k: 'cat'; subs: Node[] }
  | { k: 'alt'; subs: Node[] }
  | { k: 'cap'; n: number; sub: Node }
  | { k: 'rep'; sub: Node; min: number; max: number; lazy: boolean };

/** Begin/end of text, begin/end of line, word boundary, not a word boundary. */
export type Assert = 'bot' | 'eot' | 'bol' | 'eol' | 'wb' | 'nwb';

export class RegexSyntaxError extends Error {}

/** RE2 refuses repetition counts above this, also as the product of nested counts. */
const MAX_REPEAT = 1000;
const MAX_RUNE = 0x10ffff;

type Ranges = number[];
const ASCII: Record<string, Ranges> = {
  d: [48, 57],
  s: [9, 10, 12, 13, 32, 32],
  w: [48, 57, 65, 90, 95, 95, 97, 122],
  alnum: [48, 57, 65, 90, 97, 122],
  alpha: [65, 90, 97, 122],
  ascii: [0, 127],
  blank: [9, 9, 32, 32],
  cntrl: [0, 31, 127, 127],
  digit: [48, 57],
  graph: [33, 126],
  lower: [97, 122],
  print: [32, 126],
  punct: [33, 47, 58, 64, 91, 96, 123, 126],
  space: [9, 13, 32, 32],
  upper: [65, 90],
  word: [48, 57, 65, 90, 95, 95, 97, 122],
  xdigit: [48, 57, 65, 70, 97, 102],
};

function negate(r: Ranges): Ranges {
  const out: Ranges = [];
  let next = 0;
  for (let i = 0; i < r.length; i += 2) {
    if (r[i]! > next) out.push(next, r[i]! - 1);
    next = r[i + 1]! + 1;
  }
  if (next <= MAX_RUNE) out.push(next, MAX_RUNE);
  return out;
}

function normalize(r: Ranges): Ranges {
  const pairs: [number, number][] = [];
  for (let i = 0; i < r.length; i += 2) pairs.push([r[i]!, r[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of pairs) {
    const n = out.length;
    if (n && lo <= out[n - 1]! + 1) out[n - 1] = Math.max(out[n - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

const hex = (c: number) => `\\u{${c.toString(16)}}`;
const jsRanges = (r: Ranges) => {
  let s = '';
  for (let i = 0; i < r.length; i += 2) s += `${hex(r[i]!)}-${hex(r[i + 1]!)}`;
  return s;
};

/**
 * A set of code points. Plain classes are sorted ranges; a class under (?i) or with a Unicode
 * property asks a native RegExp (v flag: nested classes and RE2's fold-then-negate order) about one
 * code point at a time, which is linear and cached, instead of carrying Unicode tables in every bundle.
 */
export class CharSet {
  private readonly re: RegExp | null;
  private readonly ascii = new Int8Array(128);
  private readonly cache = new Map<number, boolean>();
  constructor(
    private readonly ranges: Ranges,
    source: string | null,
    fold: boolean,
  ) {
    this.re = source === null ? null : new RegExp(`^${source}$`, fold ? 'iv' : 'v');
  }
  has(c: number): boolean {
    const re = this.re;
    if (re === null) {
      const r = this.ranges;
      for (let i = 0; i < r.length && r[i]! <= c; i += 2) if (c <= r[i + 1]!) return true;
      return false;
    }
    if (c < 128) {
      const known = this.ascii[c]!;
      if (known) return known > 0;
      const yes = re.test(String.fromCharCode(c));
      this.ascii[c] = yes ? 1 : -1;
      return yes;
    }
    let yes = this.cache.get(c);
    if (yes === undefined) {
      if (this.cache.size > 4096) this.cache.clear();
      this.cache.set(c, (yes = re.test(String.fromCodePoint(c))));
    }
    return yes;
  }
}

/** Script names of four letters: every other four-letter name is an ISO 15924 alias, which RE2 does not know. */
const FOUR_LETTER_SCRIPTS = ['Ahom', 'Cham', 'Kawi', 'Lisu', 'Miao', 'Modi', 'Newa', 'Thai', 'Toto'];

/** RE2's names: general categories, scripts, and four of its own; as a native property escape. */
function property(name: string): string | null {
  const special: Record<string, string> = {
    Any: 'Any',
    Ascii: 'ASCII',
    Assigned: 'Assigned',
    Lc: 'gc=LC',
    LC: 'gc=LC',
  };
  const candidates = special[name]
    ? [special[name]]
    : [
        ...(/^[A-Z][a-z]?$/.test(name) ? [`gc=${name}`] : []),
        ...(name.length !== 4 || FOUR_LETTER_SCRIPTS.includes(name) ? [`sc=${name}`] : []),
      ];
  for (const c of candidates) {
    try {
      new RegExp(`\\p{${c}}`, 'v');
      return `\\p{${c}}`;
    } catch {
      // not this kind of name
    }
  }
  return null;
}

interface Flags {
  fold: boolean;
  multi: boolean;
  dotnl: boolean;
  lazy: boolean;
}

/** One class under construction: ranges, plus native-syntax items when a property or folding is involved. */
interface ClassBuild {
  ranges: Ranges;
  js: string[];
}

export interface Parsed {
  node: Node;
  groups: number;
}

export function parse(pattern: string): Parsed {
  let i = 0;
  let groups = 0;
  const names = new Set<string>();
  const sets = new Map<string, CharSet>();
  const fail = (what: string, piece: string): never => {
    throw new RegexSyntaxError(`error parsing regexp: ${what}: \`${piece}\``);
  };
  const more = () => i < pattern.length;
  const peek = () => pattern.codePointAt(i)!;
  const pop = () => {
    const c = peek();
    i += c > 0xffff ? 2 : 1;
    return c;
  };
  const at = (s: string) => pattern.startsWith(s, i);

  const setOf = (b: ClassBuild, negated: boolean, fold: boolean): CharTest => {
    if (!fold && b.js.length === 0) {
      const r = normalize(b.ranges);
      if (!negated && r.length === 2 && r[0] === r[1]) return r[0]!;
      return new CharSet(negated ? negate(r) : r, null, false);
    }
    // One native RegExp per distinct class: `(?i)aaaa` compiles one.
    const source = `[${negated ? '^' : ''}${jsRanges(b.ranges)}${b.js.join('')}]`;
    const key = `${fold}${source}`;
    let set = sets.get(key);
    if (!set) sets.set(key, (set = new CharSet([], source, fold)));
    return set;
  };
  const addGroup = (b: ClassBuild, r: Ranges, positive: boolean) => {
    if (positive) b.ranges.push(...r);
    else b.js.push(`[^${jsRanges(r)}]`);
  };

  // \d \s \w and their negations.
  const perlClass = (b: ClassBuild): boolean => {
    const c = pattern[i + 1] ?? '';
    const r = ASCII[c.toLowerCase()];
    if (!r || !'dswDSW'.includes(c)) return false;
    i += 2;
    addGroup(b, r, c === c.toLowerCase());
    return true;
  };

  // \pL \p{Greek} \PL \p{^Greek}
  const unicodeClass = (b: ClassBuild): boolean => {
    if (!at('\\p') && !at('\\P')) return false;
    const start = i;
    let positive = pattern[i + 1] === 'p';
    i += 2;
    if (!more()) fail('invalid character class range', pattern.slice(start));
    let name: string;
    if (pattern[i] === '{') {
      const end = pattern.indexOf('}', i);
      if (end < 0) fail('invalid character class range', pattern.slice(start));
      name = pattern.slice(i + 1, end);
      i = end + 1;
    } else name = String.fromCodePoint(pop());
    if (name.startsWith('^')) {
      positive = !positive;
      name = name.slice(1);
    }
    const js = property(name);
    if (js === null) fail('invalid character class range', pattern.slice(start, i));
    b.js.push(positive ? js! : `[^${js}]`);
    return true;
  };

  const escaped = (): number => {
    const start = i;
    i++;
    if (!more()) throw new RegexSyntaxError('error parsing regexp: trailing backslash at end of expression');
    const c = String.fromCodePoint(pop());
    const bad = () => fail('invalid escape sequence', pattern.slice(start, i));
    if (c >= '0' && c <= '7' && (c === '0' || /[0-7]/.test(pattern[i] ?? ''))) {
      let r = Number(c);
      for (let k = 1; k < 3 && /[0-7]/.test(pattern[i] ?? ''); k++) r = r * 8 + Number(pattern[i++]);
      return r;
    }
    if (c === 'x') {
      if (pattern[i] === '{') {
        const end = pattern.indexOf('}', i);
        const digits = end < 0 ? '' : pattern.slice(i + 1, end);
        if (!/^[0-9a-fA-F]+$/.test(digits)) {
          i = end < 0 ? pattern.length : end + 1;
          return bad();
        }
        i = end + 1;
        const r = Number.parseInt(digits, 16);
        return r > MAX_RUNE ? bad() : r;
      }
      const digits = pattern.slice(i, i + 2);
      i += 2;
      return /^[0-9a-fA-F]{2}$/.test(digits) ? Number.parseInt(digits, 16) : bad();
    }
    const control = 'a\x07f\fn\nr\rt\tv\v'.indexOf(c);
    if (control >= 0 && control % 2 === 0) return 'a\x07f\fn\nr\rt\tv\v'.charCodeAt(control + 1);
    if (c.charCodeAt(0) < 128 && !/[0-9A-Za-z]/.test(c)) return c.charCodeAt(0);
    return bad();
  };

  const parseClass = (flags: Flags): CharTest => {
    const start = i;
    i++;
    const b: ClassBuild = { ranges: [], js: [] };
    let negated = false;
    if (at('^')) {
      negated = true;
      i++;
    }
    let first = true;
    while (!more() || pattern[i] !== ']' || first) {
      if (!more()) fail('missing closing ]', pattern.slice(start));
      first = false;
      if (at('[:')) {
        const end = pattern.indexOf(':]', i);
        if (end >= 0) {
          const name = pattern.slice(i + 2, end);
          const bare = name.replace(/^\^/, '');
          const r = bare.length > 1 ? ASCII[bare] : undefined;
          if (!r) fail('invalid character class range', pattern.slice(i, end + 2));
          i = end + 2;
          addGroup(b, r!, bare === name);
          continue;
        }
      }
      if (pattern[i] === '\\' && (unicodeClass(b) || perlClass(b))) continue;
      const item = i;
      const char = () => {
        if (!more()) fail('missing closing ]', pattern.slice(start));
        return pattern[i] === '\\' ? escaped() : pop();
      };
      const lo = char();
      let hi = lo;
      if (at('-') && pattern[i + 1] !== ']' && i + 1 < pattern.length) {
        i++;
        hi = char();
        if (hi < lo) fail('invalid character class range', pattern.slice(item, i));
      }
      b.ranges.push(lo, hi);
    }
    i++;
    return setOf(b, negated, flags.fold);
  };

  /** `{n}`, `{n,}`, `{n,m}`; null when the braces are not a repetition (then `{` is a literal). */
  const repeatCount = (): [number, number] | null => {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24));
    if (!m) return null;
    const num = (s: string) => (s.length > 1 && s[0] === '0' ? Number.NaN : s.length > 8 ? -2 : Number(s));
    const min = num(m[1]!);
    const max = m[2] === undefined ? min : m[3] === '' ? -1 : num(m[3]!);
    if (Number.isNaN(min) || Number.isNaN(max)) return null;
    const piece = m[0];
    i += piece.length;
    if (min < 0 || min > MAX_REPEAT || max === -2 || max > MAX_REPEAT || (max >= 0 && min > max))
      fail('invalid repeat count', piece);
    return [min, max];
  };

  /** Largest product of nested counts under `n`, as RE2's repeatIsValid. */
  const repeatValid = (node: Node, n: number): boolean => {
    if (node.k === 'rep') {
      let m = node.max;
      if (m === 0) return true;
      if (m < 0) m = node.min;
      if (m > n) return false;
      if (m > 0) n = Math.trunc(n / m);
      return repeatValid(node.sub, n);
    }
    if (node.k === 'cat' || node.k === 'alt') return node.subs.every((s) => repeatValid(s, n));
    return node.k === 'cap' ? repeatValid(node.sub, n) : true;
  };

  const cat = (items: Node[]): Node =>
    items.length === 0 ? { k: 'empty' } : items.length === 1 ? items[0]! : { k: 'cat', subs: items };

  /** A group's body up to its `)` (or the end): alternatives sharing the group's flags. */
  const body = (outer: Flags, depth: number): Node => {
    if (depth > 1000) throw new RegexSyntaxError('error parsing regexp: expression nests too deeply');
    const flags = { ...outer };
    const alts: Node[] = [];
    let items: Node[] = [];
    // Where the last repetition operator started: a second one right after it is refused, as RE2 does.
    let lastRepeat = -1;
    while (more() && pattern[i] !== ')') {
      const before = i;
      let repeated = -1;
      const c = pattern[i]!;
      if (c === '|') {
        i++;
        alts.push(cat(items));
        items = [];
      } else if (c === '(') {
        if (at('(?P<') || at('(?<')) {
          const begin = i + (pattern[i + 2] === 'P' ? 4 : 3);
          const end = pattern.indexOf('>', i);
          if (end < 0) fail('invalid named capture', pattern.slice(i));
          const name = pattern.slice(begin, end);
          if (!/^[0-9A-Za-z_]+$/.test(name)) fail('invalid named capture', pattern.slice(i, end + 1));
          if (names.has(name)) fail('duplicate capture group name', name);
          names.add(name);
          i = end + 1;
          const n = ++groups;
          items.push({ k: 'cap', n, sub: group(flags, depth) });
        } else if (at('(?')) {
          i += 2;
          const next = { ...flags };
          let sign = 1;
          let saw = false;
          for (;;) {
            const f = more() ? pattern[i++]! : '';
            const on = sign > 0;
            if (f === 'i') next.fold = on;
            else if (f === 'm') next.multi = on;
            else if (f === 's') next.dotnl = on;
            else if (f === 'U') next.lazy = on;
            else if (f === '-' && sign > 0) {
              sign = -1;
              saw = false;
              continue;
            } else if ((f === ':' || f === ')') && (sign > 0 || saw)) {
              if (f === ':') items.push(group(next, depth));
              else Object.assign(flags, next);
              break;
            } else fail('invalid or unsupported Perl syntax', pattern.slice(before, i));
            saw = true;
          }
        } else {
          i++;
          const n = ++groups;
          items.push({ k: 'cap', n, sub: group(flags, depth) });
        }
      } else if (c === '^') {
        i++;
        items.push({ k: 'assert', a: flags.multi ? 'bol' : 'bot' });
      } else if (c === '$') {
        i++;
        items.push({ k: 'assert', a: flags.multi ? 'eol' : 'eot' });
      } else if (c === '.') {
        i++;
        items.push({ k: 'char', c: flags.dotnl ? 'any' : 'dot' });
      } else if (c === '[') {
        items.push({ k: 'char', c: parseClass(flags) });
      } else if (c === '*' || c === '+' || c === '?' || (c === '{' && repeatCount() !== null)) {
        let min = 0;
        let max = -1;
        if (c === '{') {
          i = before;
          [min, max] = repeatCount()!;
        } else {
          i++;
          if (c === '+') min = 1;
          if (c === '?') max = 1;
        }
        repeated = before;
        let lazy = flags.lazy;
        if (at('?')) {
          i++;
          lazy = !lazy;
        }
        if (lastRepeat >= 0) fail('invalid nested repetition operator', pattern.slice(lastRepeat, i));
        const sub = items.pop();
        if (!sub) fail('missing argument to repetition operator', pattern.slice(before, i));
        const node: Node = { k: 'rep', sub: sub!, min, max, lazy };
        if (c === '{' && (min >= 2 || max >= 2) && !repeatValid(node, MAX_REPEAT))
          fail('invalid repeat count', pattern.slice(before, i));
        items.push(node);
      } else if (c === '\\') {
        const next = pattern[i + 1];
        const asserts: Record<string, Assert> = { A: 'bot', z: 'eot', b: 'wb', B: 'nwb' };
        const b: ClassBuild = { ranges: [], js: [] };
        if (next && asserts[next]) {
          i += 2;
          items.push({ k: 'assert', a: asserts[next]! });
        } else if (next === 'C') fail('invalid escape sequence', '\\C');
        else if (next === 'Q') {
          const end = pattern.indexOf('\\E', i + 2);
          const text = pattern.slice(i + 2, end < 0 ? pattern.length : end);
          i = end < 0 ? pattern.length : end + 2;
          for (const ch of text) items.push(literal(ch.codePointAt(0)!, flags));
        } else if (unicodeClass(b) || perlClass(b)) items.push({ k: 'char', c: setOf(b, false, flags.fold) });
        else items.push(literal(escaped(), flags));
      } else items.push(literal(pop(), flags));
      lastRepeat = repeated;
    }
    alts.push(cat(items));
    return alts.length === 1 ? alts[0]! : { k: 'alt', subs: alts };
  };

  const group = (flags: Flags, depth: number): Node => {
    const node = body(flags, depth + 1);
    if (!more()) fail('missing closing )', pattern);
    i++;
    return node;
  };

  const literal = (c: number, flags: Flags): Node => ({
    k: 'char',
    c: flags.fold ? setOf({ ranges: [c, c], js: [] }, false, true) : c,
  });

  const node = body({ fold: false, multi: false, dotnl: false, lazy: false }, 0);
  if (more()) fail('unexpected )', pattern);
  return { node, groups };
}
