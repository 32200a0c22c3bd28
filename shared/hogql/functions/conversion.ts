/** Type conversions as HogQL maps them (toInt is toInt64OrNull, toFloat toFloat64OrNull, toDate toDateOrNull...). */
import { isValidTimeZone, localDateOf } from '#shared/trends/tz.ts';
import {
  dateOf,
  dateOrNull,
  dateTimeOrNull,
  inRange,
  parseDate,
  parseDateTime,
  parseInteger,
  parseNumber,
  toText,
} from '../convert.ts';
import { integerNotExact } from '../limits.ts';
import { HogDate, HogDateTime, type HogValue } from '../values.ts';
import { type ScalarFunction, type Site, scalar } from './types.ts';

const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

export function toInt(v: HogValue): HogValue {
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') return parseInteger(v);
  if (v instanceof HogDateTime) return Math.floor(v.ms / 1000);
  if (v instanceof HogDate) return v.days;
  return null;
}

export function toFloat(v: HogValue): HogValue {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') return parseNumber(v);
  if (v instanceof HogDateTime) return v.ms / 1000;
  if (v instanceof HogDate) return v.days;
  return null;
}

/** A zone argument, checked once per distinct zone. */
export function zoneArg(v: HogValue, site: Site): string {
  const tz = toText(v);
  return site.memo(`tz:${tz}`, () => {
    if (!isValidTimeZone(tz)) site.fail(`unknown time zone "${tz.slice(0, 100)}".`);
    return tz;
  });
}

/** toDate: a DateTime's day in its zone, `YYYY-MM-DD` text, a number as days (< 65536) or unix seconds, as ClickHouse's toDate. */
export function toDate(v: HogValue, site: Site): HogValue {
  if (v instanceof HogDate) return v;
  if (v instanceof HogDateTime) {
    if (!inRange(v.ms)) return null;
    const { year, month, day } = localDateOf(v.ms, v.timezone);
    return dateOf(year, month, day);
  }
  if (typeof v === 'string') return parseDate(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return null;
    if (v < 65_536) return dateOrNull(Math.trunc(v));
    if (!inRange(Math.trunc(v) * 1000)) return null;
    const { year, month, day } = localDateOf(Math.trunc(v) * 1000, site.ctx.timezone);
    return dateOf(year, month, day);
  }
  return null;
}

/** toDateTime (parseDateTime64BestEffortOrNull for text): shown in the project zone, or the zone given. */
export function toDateTime(v: HogValue, tz: string): HogValue {
  if (v instanceof HogDateTime) return dateTimeOrNull(v.ms, tz);
  if (v instanceof HogDate) {
    const ms = parseDateTime(toText(v), tz);
    return ms === null ? null : new HogDateTime(ms, tz);
  }
  if (typeof v === 'string') {
    const ms = parseDateTime(v, tz);
    return ms === null ? null : new HogDateTime(ms, tz);
  }
  if (typeof v === 'number') return Number.isFinite(v) ? dateTimeOrNull(Math.trunc(v) * 1000, tz) : null;
  return null;
}

/** toBool: numbers are true unless 0; 'true'/'false' (any case) and '1'/'0' read as such; other text is NULL. */
export function toBool(v: HogValue): HogValue {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
  }
  return null;
}

export const CONVERSION: ScalarFunction[] = [
  scalar('toString', 1, 1, ([v]) => toText(v ?? null)),
  scalar('toInt', 1, 1, ([v], site) => {
    const n = toInt(v ?? null);
    // Text holds integers ClickHouse's Int64 keeps and a double does not: refused, not rounded.
    if (typeof v === 'string' && typeof n === 'number' && !Number.isSafeInteger(n))
      throw integerNotExact(`toInt('${v.trim().slice(0, 40)}')`, site.attr);
    return n;
  }),
  scalar('toFloat', 1, 1, ([v]) => toFloat(v ?? null)),
  scalar('toDate', 1, 1, ([v], site) => toDate(v ?? null, site)),
  scalar(
    'toDateTime',
    1,
    2,
    ([v, tz], site) => toDateTime(v ?? null, tz === undefined ? site.ctx.timezone : zoneArg(tz, site)),
    { constantArgs: [1] },
  ),
  scalar('toUUID', 1, 1, ([v]) => {
    const s = toText(v ?? null).trim();
    if (!UUID_RE.test(s)) return null;
    const hex = s.replace(/-/g, '').toLowerCase();
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }),
  scalar('toBool', 1, 1, ([v]) => toBool(v ?? null)),
];
