/**
 * How HogQL values read as numbers, text, booleans, dates and arrays. The rules follow ClickHouse's
 * conversions, with one addition for properties (docs/hogql-semantics.md): a property keeps its
 * JSON type, and a string meets a number by being read as one when the whole string is a number.
 */
import { nestedDeeperThan } from '#shared/json.ts';
import { fromLocal, toLocal } from '#shared/trends/tz.ts';
import { HogDate, HogDateTime, HogTuple, type HogValue } from './values.ts';

const DAY_MS = 86_400_000;
/** DateTime64's range in ClickHouse (1900-01-01 to 2299-12-31): instants outside it are NULL. */
export const MIN_INSTANT = Date.UTC(1900, 0, 1);
export const MAX_INSTANT = Date.UTC(2300, 0, 1) - 1;

export const inRange = (ms: number): boolean => ms >= MIN_INSTANT && ms <= MAX_INSTANT;
export const dateTimeOrNull = (ms: number, tz: string): HogDateTime | null =>
  inRange(ms) ? new HogDateTime(ms, tz) : null;
export const dateOrNull = (days: number): HogDate | null =>
  Number.isInteger(days) && inRange(days * DAY_MS) ? new HogDate(days) : null;
const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;
/** Longest text read as a number or a date: longer strings are neither, whatever they hold. */
const MAX_PARSED_TEXT = 64;

export const isDateLike = (v: HogValue): v is HogDate | HogDateTime => v instanceof HogDate || v instanceof HogDateTime;
export const isArray = (v: HogValue): v is readonly HogValue[] => Array.isArray(v);

/** The whole string as a number (ClickHouse's toFloat64OrNull: `inf`, `nan` too), else null. */
export function parseNumber(s: string): number | null {
  const t = s.trim();
  if (t.length === 0 || t.length > MAX_PARSED_TEXT) return null;
  if (NUMERIC.test(t)) return Number(t);
  const lower = t.toLowerCase();
  if (lower === 'inf' || lower === '+inf' || lower === 'infinity') return Number.POSITIVE_INFINITY;
  if (lower === '-inf' || lower === '-infinity') return Number.NEGATIVE_INFINITY;
  if (lower === 'nan') return Number.NaN;
  return null;
}

/** toInt64OrNull on text: only whole integers parse ('1.5' is null, as in ClickHouse). */
export function parseInteger(s: string): number | null {
  const t = s.trim();
  if (t.length === 0 || t.length > MAX_PARSED_TEXT || !INTEGER.test(t)) return null;
  return Number(t);
}

/**
 * A value as a number for arithmetic and numeric functions: numbers, booleans (0/1) and numeric
 * strings; dates as their ClickHouse numeric form (days for Date, seconds for DateTime); the rest null.
 */
export function toNum(v: HogValue): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') return parseNumber(v);
  if (v instanceof HogDateTime) return Math.floor(v.ms / 1000);
  if (v instanceof HogDate) return v.days;
  return null;
}

/**
 * Truthiness in a condition (WHERE, if, AND/OR/NOT): null stays null (three-valued logic), numbers
 * are true unless 0, 'true'/'false' and numeric strings read as such; other strings, arrays and
 * tuples are null (ClickHouse refuses them as conditions; a row's odd value must not fail the query).
 */
export function truth(v: HogValue): boolean | null {
  if (typeof v === 'boolean') return v;
  if (v === null) return null;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (typeof v === 'string') {
    const lower = v.length <= 5 ? v.toLowerCase() : '';
    if (lower === 'true') return true;
    if (lower === 'false') return false;
    const n = parseNumber(v);
    return n === null ? null : n !== 0;
  }
  if (isDateLike(v)) return true;
  return null;
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));
const pad = (n: number, w: number) => String(n).padStart(w, '0');

export function dateParts(d: HogDate): { year: number; month: number; day: number } {
  const x = new Date(d.days * DAY_MS);
  return { year: x.getUTCFullYear(), month: x.getUTCMonth() + 1, day: x.getUTCDate() };
}

export function dateOf(year: number, month: number, day: number): HogDate {
  return new HogDate(Math.floor(Date.UTC(year, month - 1, day) / DAY_MS));
}

export function formatDate(d: HogDate): string {
  const { year, month, day } = dateParts(d);
  return `${pad(year, 4)}-${pad2(month)}-${pad2(day)}`;
}

/** `YYYY-MM-DD hh:mm:ss` in the value's zone, with `.ffffff` when it has a fraction (DateTime64(6) as PostHog stores it). */
export function formatDateTime(d: HogDateTime): string {
  const l = toLocal(d.ms, d.timezone);
  const base = `${pad(l.year, 4)}-${pad2(l.month)}-${pad2(l.day)} ${pad2(l.hour)}:${pad2(l.minute)}:${pad2(l.second)}`;
  return l.ms ? `${base}.${pad(l.ms, 3)}000` : base;
}

/** ClickHouse's text of a number: integers without a fraction, `inf`, `-inf`, `nan`. */
export function formatNumber(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (n === Number.POSITIVE_INFINITY) return 'inf';
  if (n === Number.NEGATIVE_INFINITY) return '-inf';
  return String(n);
}

/** The SQL literal form of a value inside an array or tuple's text: strings quoted. */
function literal(v: HogValue): string {
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (v === null) return 'NULL';
  if (isDateLike(v)) return `'${toText(v)}'`;
  return toText(v);
}

/** toString: text of any value (null stays null at the call site; here it is ''). */
export function toText(v: HogValue): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v === null) return '';
  if (v instanceof HogDateTime) return formatDateTime(v);
  if (v instanceof HogDate) return formatDate(v);
  if (v instanceof HogTuple) return `(${v.items.map(literal).join(',')})`;
  return `[${(v as readonly HogValue[]).map(literal).join(',')}]`;
}

/** An array argument: an array, a tuple's items, or a property holding a JSON array as text. */
export function asArray(v: HogValue): readonly HogValue[] | null {
  if (Array.isArray(v)) return v as readonly HogValue[];
  if (v instanceof HogTuple) return v.items;
  if (typeof v === 'string' && v.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(v);
      if (Array.isArray(parsed) && !nestedDeeperThan(parsed)) return parsed.map(fromJson);
    } catch {
      return null;
    }
  }
  return null;
}

/** A parsed JSON value as a HogValue: scalars as they are, nested objects and arrays as their JSON text. */
export function fromJson(v: unknown): HogValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v) ?? null;
}

const DATE_RE = /^(\d{4})-(\d{1,2})-(\d{1,2})$/;
const DATE_TIME_RE =
  /^(\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

function validYmd(y: number, m: number, d: number): boolean {
  if (y < 1900 || y > 2299 || m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/** `YYYY-MM-DD` as a Date (toDateOrNull), else null. */
export function parseDate(s: string): HogDate | null {
  const t = s.trim();
  if (t.length > MAX_PARSED_TEXT) return null;
  const m = DATE_RE.exec(t);
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return validYmd(y, mo, d) ? dateOf(y, mo, d) : null;
  }
  const dt = DATE_TIME_RE.exec(t);
  if (dt) {
    const [y, mo, d] = [Number(dt[1]), Number(dt[2]), Number(dt[3])];
    return validYmd(y, mo, d) ? dateOf(y, mo, d) : null;
  }
  return null;
}

/**
 * A date-time text as an instant (parseDateTime64BestEffortOrNull, the ISO forms): `YYYY-MM-DD`,
 * `YYYY-MM-DD hh:mm[:ss[.fff]]`, with `T`, and an optional `Z`/`±hh:mm` offset; without an offset the
 * time is read in `tz`. A string of digits only is a unix timestamp in seconds. Else null.
 */
export function parseDateTime(s: string, tz: string): number | null {
  const t = s.trim();
  if (t.length === 0 || t.length > MAX_PARSED_TEXT) return null;
  if (/^\d{9,10}$/.test(t)) return Number(t) * 1000;
  const d = DATE_RE.exec(t);
  if (d) {
    const [year, month, day] = [Number(d[1]), Number(d[2]), Number(d[3])];
    return validYmd(year, month, day) ? fromLocal({ year, month, day }, tz) : null;
  }
  const m = DATE_TIME_RE.exec(t);
  if (!m) return null;
  const [year, month, day, hour, minute] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
  const second = m[6] ? Number(m[6]) : 0;
  const ms = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  if (!validYmd(year, month, day) || hour > 23 || minute > 59 || second > 59) return null;
  const zone = m[8];
  if (!zone) return fromLocal({ year, month, day, hour, minute, second, ms }, tz);
  const wall = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  if (zone.toUpperCase() === 'Z') return wall;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const offset = Number(digits.slice(0, 2)) * 60 + (digits.length > 2 ? Number(digits.slice(2, 4)) : 0);
  return wall - sign * offset * 60_000;
}

/** A value as an instant in ms for date functions: DateTime, Date (midnight in `tz`), date text, else null. */
export function toInstant(v: HogValue, tz: string): number | null {
  if (v instanceof HogDateTime) return inRange(v.ms) ? v.ms : null;
  if (v instanceof HogDate) {
    const { year, month, day } = dateParts(v);
    return fromLocal({ year, month, day }, tz);
  }
  if (typeof v === 'string') return parseDateTime(v, tz);
  return null;
}

/** A value as a DateTime for date functions; Dates and text are read in the project zone. */
export function toDateTimeValue(v: HogValue, tz: string): HogDateTime | null {
  if (v instanceof HogDateTime) return v;
  const ms = toInstant(v, tz);
  return ms === null ? null : new HogDateTime(ms, tz);
}
