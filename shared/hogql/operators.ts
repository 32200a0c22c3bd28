/**
 * HogQL's operators with ClickHouse's semantics: comparison (with the property type rule of
 * docs/hogql-semantics.md), IN, LIKE, arithmetic and three-valued boolean logic.
 */
import { ValidationError } from '#shared/errors.ts';
import {
  dateOrNull,
  dateParts,
  dateTimeOrNull,
  isDateLike,
  parseDate,
  parseDateTime,
  parseNumber,
  toNum,
  truth,
} from './convert.ts';
import { integerNotExact } from './limits.ts';
import { HogDate, HogDateTime, HogTuple, type HogValue } from './values.ts';
import { fromLocal } from '#shared/trends/tz.ts';

/** Result of comparing two values: <0, 0, >0; null when either is NULL; NaN when they cannot be compared. */
export type Order = number | null;

const INCOMPARABLE = Number.NaN;

const sign = (x: number, y: number): number => (x < y ? -1 : x > y ? 1 : x === y ? 0 : INCOMPARABLE);

function boolOfText(s: string): boolean | null {
  const lower = s.length <= 5 ? s.toLowerCase() : '';
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  const n = parseNumber(s);
  return n === null ? null : n !== 0;
}

function dateMidnight(d: HogDate, tz: string): number {
  return Number.isFinite(d.days) ? fromLocal(dateParts(d), tz) : Number.NaN;
}

function compareDateLike(a: HogDate | HogDateTime, b: HogValue, tz: string): number {
  if (a instanceof HogDate) {
    if (b instanceof HogDate) return sign(a.days, b.days);
    if (b instanceof HogDateTime) return sign(dateMidnight(a, b.timezone), b.ms);
    if (typeof b === 'number') return sign(a.days, b);
    if (typeof b === 'string') {
      const d = parseDate(b);
      if (d && b.trim().length <= 10) return sign(a.days, d.days);
      const t = parseDateTime(b, tz);
      return t === null ? INCOMPARABLE : sign(dateMidnight(a, tz), t);
    }
    return INCOMPARABLE;
  }
  if (b instanceof HogDateTime) return sign(a.ms, b.ms);
  if (b instanceof HogDate) return -compareDateLike(b, a, tz);
  if (typeof b === 'number') return sign(a.ms / 1000, b);
  if (typeof b === 'string') {
    const t = parseDateTime(b, tz);
    return t === null ? INCOMPARABLE : sign(a.ms, t);
  }
  return INCOMPARABLE;
}

function compareLists(a: readonly HogValue[], b: readonly HogValue[], tz: string): Order {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compare(a[i] ?? null, b[i] ?? null, tz);
    if (c === null) return null;
    if (c !== 0) return c;
  }
  return sign(a.length, b.length);
}

/**
 * Orders two values. Numbers and booleans numerically; strings by code unit; a string against a
 * number is read as a number when the whole string is one (else the pair cannot be compared); a
 * string against a Date/DateTime is parsed as a date-time in `tz`, the project's zone; arrays and
 * tuples element by element.
 */
export function compare(a: HogValue, b: HogValue, tz: string): Order {
  if (a === null || b === null) return null;
  const ta = typeof a;
  const tb = typeof b;
  if ((ta === 'number' || ta === 'boolean') && (tb === 'number' || tb === 'boolean')) return sign(Number(a), Number(b));
  if (ta === 'string' && tb === 'string') return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
  if (ta === 'string' && tb === 'number') {
    const n = parseNumber(a as string);
    return n === null ? INCOMPARABLE : sign(n, b as number);
  }
  if (ta === 'number' && tb === 'string') {
    const n = parseNumber(b as string);
    return n === null ? INCOMPARABLE : sign(a as number, n);
  }
  if (ta === 'boolean' && tb === 'string') {
    const v = boolOfText(b as string);
    return v === null ? INCOMPARABLE : sign(Number(a), Number(v));
  }
  if (ta === 'string' && tb === 'boolean') {
    const v = boolOfText(a as string);
    return v === null ? INCOMPARABLE : sign(Number(v), Number(b));
  }
  if (isDateLike(a)) return compareDateLike(a, b, tz);
  if (isDateLike(b)) {
    const c = compareDateLike(b, a, tz);
    return c === 0 ? 0 : -c;
  }
  if (Array.isArray(a) && Array.isArray(b)) return compareLists(a, b, tz);
  if (a instanceof HogTuple && b instanceof HogTuple) return compareLists(a.items, b.items, tz);
  return INCOMPARABLE;
}

/** `=`: NULL with anything is NULL; values that cannot be compared are not equal. */
export function equals(a: HogValue, b: HogValue, tz: string): boolean | null {
  const c = compare(a, b, tz);
  return c === null ? null : c === 0;
}

/** Equality for has/indexOf/IN members, where NULL matches NULL (ClickHouse's has() does so). */
export function sameValue(a: HogValue, b: HogValue, tz: string): boolean {
  if (a === null || b === null) return a === b;
  return compare(a, b, tz) === 0;
}

export type OrderOp = 'eq' | 'notEq' | 'lt' | 'ltEq' | 'gt' | 'gtEq';

/** A comparison operator as a function of the order. Incomparable pairs: only `!=` is true. */
export function orderTest(op: OrderOp): (c: number) => boolean {
  switch (op) {
    case 'eq':
      return (c) => c === 0;
    case 'notEq':
      return (c) => c !== 0;
    case 'lt':
      return (c) => c < 0;
    case 'ltEq':
      return (c) => c <= 0;
    case 'gt':
      return (c) => c > 0;
    case 'gtEq':
      return (c) => c >= 0;
  }
}

/**
 * `x IN (...)`: the right side is an array or tuple (a lone value is a one-item list). ClickHouse
 * (transform_null_in = 0) treats any operation with NULL in IN as 0: a NULL left side is false for
 * IN and for NOT IN, and NULL members never match.
 */
export function inList(x: HogValue, list: HogValue, tz: string): boolean {
  if (x === null) return false;
  const items = Array.isArray(list) ? list : list instanceof HogTuple ? list.items : [list];
  for (const item of items) if (item !== null && compare(x, item, tz) === 0) return true;
  return false;
}

// ---------------------------------------------------------------- LIKE

type Unit = string | null; // null is `_`
interface Segment {
  units: Unit[];
  literal: string | null; // the segment's text when it has no `_`
}

/**
 * Compiles a LIKE pattern (`%` any run, `_` one character, `\` escapes the next character) into a
 * matcher. `%` splits the pattern into fixed-length segments; matching each at its leftmost place
 * is exact for such patterns, so a row costs at most (text length x segment length), with indexOf
 * for the common segments without `_`. No regular expression is built from the user's text.
 */
export function compileLike(pattern: string, caseInsensitive: boolean): (text: string) => boolean {
  const source = caseInsensitive ? pattern.toLowerCase() : pattern;
  const segments: Segment[] = [];
  let current: Unit[] = [];
  const chars = Array.from(source);
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    if (ch === '\\' && i + 1 < chars.length) current.push(chars[++i] as string);
    else if (ch === '%') {
      segments.push(segmentOf(current));
      current = [];
    } else current.push(ch === '_' ? null : ch);
  }
  segments.push(segmentOf(current));
  const hasWildcard = segments.some((s) => s.literal === null);
  return (raw: string) => {
    const text = caseInsensitive ? raw.toLowerCase() : raw;
    const units: string | string[] = hasWildcard && /[\uD800-\uDFFF]/.test(text) ? Array.from(text) : text;
    return matchSegments(segments, units);
  };
}

function segmentOf(units: Unit[]): Segment {
  return { units, literal: units.includes(null) ? null : units.join('') };
}

function matchAt(seg: Segment, text: string | string[], at: number): boolean {
  const u = seg.units;
  if (typeof text === 'string' && seg.literal !== null) return text.startsWith(seg.literal, at);
  let pos = at;
  for (const unit of u) {
    if (typeof text === 'string') {
      // A pattern unit may be an astral character (two code units) when text has none: no match.
      if (unit === null) pos += 1;
      else {
        if (!text.startsWith(unit, pos)) return false;
        pos += unit.length;
      }
    } else {
      if (unit !== null && text[pos] !== unit) return false;
      pos += 1;
    }
  }
  return pos <= text.length;
}

function unitLength(seg: Segment, text: string | string[]): number {
  if (typeof text !== 'string') return seg.units.length;
  let n = 0;
  for (const u of seg.units) n += u === null ? 1 : u.length;
  return n;
}

function find(seg: Segment, text: string | string[], from: number, last: number): number {
  if (typeof text === 'string' && seg.literal !== null) {
    const i = text.indexOf(seg.literal, from);
    return i >= 0 && i <= last ? i : -1;
  }
  for (let i = from; i <= last; i++) if (matchAt(seg, text, i)) return i;
  return -1;
}

function matchSegments(segments: Segment[], text: string | string[]): boolean {
  const first = segments[0] as Segment;
  const n = text.length;
  if (segments.length === 1) return unitLength(first, text) === n && matchAt(first, text, 0);
  const lastSeg = segments[segments.length - 1] as Segment;
  const firstLen = unitLength(first, text);
  const lastLen = unitLength(lastSeg, text);
  if (firstLen + lastLen > n) return false;
  if (!matchAt(first, text, 0) || !matchAt(lastSeg, text, n - lastLen)) return false;
  let pos = firstLen;
  const end = n - lastLen;
  for (let s = 1; s < segments.length - 1; s++) {
    const seg = segments[s] as Segment;
    const len = unitLength(seg, text);
    if (len === 0) continue;
    const at = find(seg, text, pos, end - len);
    if (at < 0) return false;
    pos = at + len;
  }
  return true;
}

// ---------------------------------------------------------------- arithmetic

const isInt = (n: number) => Number.isInteger(n);

/**
 * Integer arithmetic stays exact (ClickHouse's is, in Int64): two exact integers whose result a double
 * cannot hold exactly are refused with a 400 naming 2^53, never rounded. Floats keep Float64's rounding.
 */
function exact(x: number, op: string, y: number, result: number, attr: string): number {
  if (Number.isSafeInteger(x) && Number.isSafeInteger(y) && !Number.isSafeInteger(result))
    throw integerNotExact(`${x} ${op} ${y}`, attr);
  return result;
}

export function plus(a: HogValue, b: HogValue, attr: string): HogValue {
  if (a === null || b === null) return null;
  if (a instanceof HogDateTime && typeof b === 'number') return dateTimeOrNull(a.ms + b * 1000, a.timezone);
  if (b instanceof HogDateTime && typeof a === 'number') return dateTimeOrNull(b.ms + a * 1000, b.timezone);
  if (a instanceof HogDate && typeof b === 'number') return dateOrNull(a.days + Math.trunc(b));
  if (b instanceof HogDate && typeof a === 'number') return dateOrNull(b.days + Math.trunc(a));
  if (isDateLike(a) || isDateLike(b)) return null;
  const x = toNum(a);
  const y = toNum(b);
  return x === null || y === null ? null : exact(x, '+', y, x + y, attr);
}

export function minus(a: HogValue, b: HogValue, attr: string): HogValue {
  if (a === null || b === null) return null;
  if (a instanceof HogDateTime && typeof b === 'number') return dateTimeOrNull(a.ms - b * 1000, a.timezone);
  if (a instanceof HogDate && typeof b === 'number') return dateOrNull(a.days - Math.trunc(b));
  if (isDateLike(a) || isDateLike(b)) return null;
  const x = toNum(a);
  const y = toNum(b);
  return x === null || y === null ? null : exact(x, '-', y, x - y, attr);
}

export function multiply(a: HogValue, b: HogValue, attr: string): HogValue {
  if (isDateLike(a) || isDateLike(b)) return null;
  const x = toNum(a);
  const y = toNum(b);
  return x === null || y === null ? null : exact(x, '*', y, x * y, attr);
}

/** `/` is always a float division: x/0 is inf or -inf, 0/0 is nan (ClickHouse's divide). */
export function divide(a: HogValue, b: HogValue): HogValue {
  if (isDateLike(a) || isDateLike(b)) return null;
  const x = toNum(a);
  const y = toNum(b);
  return x === null || y === null ? null : x / y;
}

/** `%`: the result takes the dividend's sign (C fmod, ClickHouse's modulo); integer modulo by 0 is an error, float gives nan. */
export function modulo(a: HogValue, b: HogValue, attr: string): HogValue {
  if (isDateLike(a) || isDateLike(b)) return null;
  const x = toNum(a);
  const y = toNum(b);
  if (x === null || y === null) return null;
  if (y === 0 && isInt(x)) throw new ValidationError('Division by zero in modulo (%).', attr);
  return x % y;
}

/** intDiv: the quotient truncated towards zero; dividing by zero is an error, as in ClickHouse. */
export function intDiv(a: HogValue, b: HogValue, attr: string): HogValue {
  const x = toNum(a);
  const y = toNum(b);
  if (x === null || y === null) return null;
  if (y === 0) throw new ValidationError('Division by zero in intDiv.', attr);
  const q = Math.trunc(x / y);
  if (!Number.isFinite(q)) throw new ValidationError('intDiv result does not fit an integer.', attr);
  return q;
}

export function negate(a: HogValue): HogValue {
  const x = toNum(a);
  return x === null || isDateLike(a) ? null : -x;
}

// ---------------------------------------------------------------- logic

/** AND: any false is false, else any NULL is NULL, else true. */
export function and3(values: readonly HogValue[]): boolean | null {
  let sawNull = false;
  for (const v of values) {
    const t = truth(v);
    if (t === false) return false;
    if (t === null) sawNull = true;
  }
  return sawNull ? null : true;
}

/** OR: any true is true, else any NULL is NULL, else false. */
export function or3(values: readonly HogValue[]): boolean | null {
  let sawNull = false;
  for (const v of values) {
    const t = truth(v);
    if (t === true) return true;
    if (t === null) sawNull = true;
  }
  return sawNull ? null : false;
}

export function not3(v: HogValue): boolean | null {
  const t = truth(v);
  return t === null ? null : !t;
}
