/**
 * Date and time functions. A DateTime is truncated and read in its own zone (the project's, or the
 * one toTimeZone gave it); text is parsed as a date-time in the project zone. Functions of whole
 * days, weeks, months return a Date, as ClickHouse's toStartOfWeek/Month/Quarter/Year do.
 */
import {
  addDays,
  addMonths,
  DAY,
  fromLocal,
  type LocalDateTime,
  localDateOf,
  toLocal,
  wallClock,
  weekday,
} from '#shared/trends/tz.ts';
import { dateOf, dateOrNull, dateParts, dateTimeOrNull, inRange, parseDateTime, toNum, toText } from '../convert.ts';
import { checkInterval } from '../limits.ts';
import { HogDate, HogDateTime, type HogValue } from '../values.ts';
import { zoneArg } from './conversion.ts';
import { type ScalarFunction, type Site, scalar } from './types.ts';

const ci = { caseInsensitive: true } as const;

interface Moment extends LocalDateTime {
  /** The instant (a Date's is its midnight in `tz`); `ms` is the local milliseconds field. */
  at: number;
  tz: string;
  date: boolean;
}

/** Fields copied one by one: an object spread here was most of a toHour call's cost. */
function moment(at: number, tz: string): Moment {
  const l = toLocal(at, tz);
  return {
    year: l.year,
    month: l.month,
    day: l.day,
    hour: l.hour,
    minute: l.minute,
    second: l.second,
    ms: l.ms,
    at,
    tz,
    date: false,
  };
}

function momentOf(v: HogValue, site: Site, tzArg?: HogValue): Moment | null {
  const tzOverride = tzArg === undefined || tzArg === null ? null : zoneArg(tzArg, site);
  if (v instanceof HogDateTime) {
    if (!inRange(v.ms)) return null;
    const tz = tzOverride ?? v.timezone;
    return moment(v.ms, tz);
  }
  if (v instanceof HogDate) {
    if (!dateOrNull(v.days)) return null;
    const tz = tzOverride ?? site.ctx.timezone;
    const p = dateParts(v);
    return { ...p, hour: 0, minute: 0, second: 0, ms: 0, at: fromLocal(p, tz), tz, date: true };
  }
  if (typeof v === 'string') {
    const tz = tzOverride ?? site.ctx.timezone;
    const ms = parseDateTime(v, tz);
    return ms === null ? null : moment(ms, tz);
  }
  return null;
}

const dayNumber = (m: { year: number; month: number; day: number }) =>
  Math.floor(Date.UTC(m.year, m.month - 1, m.day) / DAY);

function startOfWeekDate(m: Moment, mode: number): HogDate {
  const start = (mode & 1) === 1 ? 1 : 0;
  const d = { year: m.year, month: m.month, day: m.day };
  const back = (weekday(d) - start + 7) % 7;
  const s = addDays(d, -back);
  return dateOf(s.year, s.month, s.day);
}

/** toDayOfWeek modes: 0 Monday=1..Sunday=7, 1 Monday=0..6, 2 Sunday=0..6, 3 Sunday=1..7. */
function dayOfWeek(m: Moment, mode: number): number {
  const w = weekday(m); // 0 = Sunday
  switch (mode & 3) {
    case 1:
      return (w + 6) % 7;
    case 2:
      return w;
    case 3:
      return w + 1;
    default:
      return w === 0 ? 7 : w;
  }
}

/** Unit names and their aliases (dateDiff, dateAdd, dateSub, dateTrunc) -> the unit. */
export const UNITS: Record<string, string> = {};
for (const [unit, aliases] of Object.entries({
  second: ['second', 'seconds', 'ss', 's'],
  minute: ['minute', 'minutes', 'mi', 'n'],
  hour: ['hour', 'hours', 'hh', 'h'],
  day: ['day', 'days', 'dd', 'd'],
  week: ['week', 'weeks', 'wk', 'ww'],
  month: ['month', 'months', 'mm', 'm'],
  quarter: ['quarter', 'quarters', 'qq', 'q'],
  year: ['year', 'years', 'yyyy', 'yy'],
}))
  for (const a of aliases) UNITS[a] = unit;

function unitOf(v: HogValue, site: Site): string {
  const unit = UNITS[toText(v).toLowerCase()];
  if (!unit)
    site.fail(`unknown unit "${toText(v).slice(0, 50)}"; use second, minute, hour, day, week, month, quarter or year.`);
  return unit;
}

function relative(m: Moment, unit: string): number {
  const wall = m.date ? dayNumber(m) * DAY : wallClock(m.at, m.tz);
  switch (unit) {
    case 'second':
      return Math.floor(m.at / 1000);
    case 'minute':
      return Math.floor(wall / 60_000);
    case 'hour':
      return Math.floor(wall / 3_600_000);
    case 'day':
      return dayNumber(m);
    case 'week':
      // Weeks start on Monday; 1970-01-05 (day 4) was a Monday.
      return Math.floor((dayNumber(m) + 3) / 7);
    case 'month':
      return m.year * 12 + m.month - 1;
    case 'quarter':
      return m.year * 4 + Math.floor((m.month - 1) / 3);
    default:
      return m.year;
  }
}

function add(m: Moment, unit: string, n: number, source: HogValue, site: Site): HogValue {
  // Past 400 years no result is in range: a 400 naming the cap (also for a row's amount), before any calendar arithmetic.
  checkInterval(n, unit, site.attr);
  const k = Math.trunc(n);
  const local = { year: m.year, month: m.month, day: m.day };
  const wallTime = { hour: m.hour, minute: m.minute, second: m.second, ms: m.ms };
  const isDate = source instanceof HogDate;
  let target: { year: number; month: number; day: number };
  switch (unit) {
    case 'second':
    case 'minute':
    case 'hour': {
      const step = unit === 'second' ? 1000 : unit === 'minute' ? 60_000 : 3_600_000;
      return dateTimeOrNull(m.at + k * step, m.tz);
    }
    case 'day':
      target = addDays(local, k);
      break;
    case 'week':
      target = addDays(local, 7 * k);
      break;
    case 'month':
      target = addMonths(local, k);
      break;
    case 'quarter':
      target = addMonths(local, 3 * k);
      break;
    default:
      target = addMonths(local, 12 * k);
  }
  if (!(target.year >= 1900 && target.year <= 2299)) return null;
  if (isDate) return dateOf(target.year, target.month, target.day);
  return dateTimeOrNull(fromLocal({ ...target, ...wallTime }, m.tz), m.tz);
}

function truncate(m: Moment, unit: string): HogValue {
  const d = { year: m.year, month: m.month, day: m.day };
  switch (unit) {
    case 'second':
      return new HogDateTime(Math.floor(m.at / 1000) * 1000, m.tz);
    case 'minute':
      return new HogDateTime(fromLocal({ ...d, hour: m.hour, minute: m.minute }, m.tz), m.tz);
    case 'hour':
      return new HogDateTime(m.at - (m.minute * 60_000 + m.second * 1000 + m.ms), m.tz);
    case 'day':
      return new HogDateTime(fromLocal(d, m.tz), m.tz);
    case 'week': {
      const w = startOfWeekDate(m, 1);
      return new HogDateTime(fromLocal(dateParts(w), m.tz), m.tz);
    }
    case 'month':
      return new HogDateTime(fromLocal({ year: m.year, month: m.month, day: 1 }, m.tz), m.tz);
    case 'quarter':
      return new HogDateTime(fromLocal({ year: m.year, month: m.month - ((m.month - 1) % 3), day: 1 }, m.tz), m.tz);
    default:
      return new HogDateTime(fromLocal({ year: m.year, month: 1, day: 1 }, m.tz), m.tz);
  }
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const p2 = (n: number) => String(n).padStart(2, '0');

/** The codes of ClickHouse's formatDateTime (MySQL style; %i is minutes and %M the month's name, as in current ClickHouse). */
const CODES: Record<string, (m: Moment) => string> = {
  a: (m) => (DAYS[weekday(m)] as string).slice(0, 3),
  A: (m) => DAYS[weekday(m)] as string,
  b: (m) => (MONTHS[m.month - 1] as string).slice(0, 3),
  B: (m) => MONTHS[m.month - 1] as string,
  c: (m) => p2(m.month),
  C: (m) => p2(Math.floor(m.year / 100) % 100),
  d: (m) => p2(m.day),
  D: (m) => `${p2(m.month)}/${p2(m.day)}/${p2(m.year % 100)}`,
  e: (m) => String(m.day).padStart(2, ' '),
  f: (m) => String(m.ms * 1000).padStart(6, '0'),
  F: (m) => `${String(m.year).padStart(4, '0')}-${p2(m.month)}-${p2(m.day)}`,
  h: (m) => p2(m.hour % 12 || 12),
  H: (m) => p2(m.hour),
  i: (m) => p2(m.minute),
  I: (m) => p2(m.hour % 12 || 12),
  j: (m) => String(dayNumber(m) - dayNumber({ year: m.year, month: 1, day: 1 }) + 1).padStart(3, '0'),
  k: (m) => String(m.hour).padStart(2, ' '),
  l: (m) => p2(m.hour % 12 || 12),
  m: (m) => p2(m.month),
  M: (m) => MONTHS[m.month - 1] as string,
  n: () => '\n',
  p: (m) => (m.hour < 12 ? 'AM' : 'PM'),
  Q: (m) => String(Math.floor((m.month - 1) / 3) + 1),
  r: (m) => `${p2(m.hour % 12 || 12)}:${p2(m.minute)} ${m.hour < 12 ? 'AM' : 'PM'}`,
  R: (m) => `${p2(m.hour)}:${p2(m.minute)}`,
  s: (m) => p2(m.second),
  S: (m) => p2(m.second),
  t: () => '\t',
  T: (m) => `${p2(m.hour)}:${p2(m.minute)}:${p2(m.second)}`,
  u: (m) => String(weekday(m) === 0 ? 7 : weekday(m)),
  w: (m) => String(weekday(m)),
  W: (m) => DAYS[weekday(m)] as string,
  y: (m) => p2(m.year % 100),
  Y: (m) => String(m.year).padStart(4, '0'),
  z: (m) => {
    const minutes = Math.round((wallClock(m.at, m.tz) - m.at) / 60_000);
    const abs = Math.abs(minutes);
    return `${minutes < 0 ? '-' : '+'}${p2(Math.floor(abs / 60))}${p2(abs % 60)}`;
  },
  '%': () => '%',
};

type Formatter = (m: Moment) => string;

export function compileFormat(format: string, site: Site): Formatter {
  const parts: (string | Formatter)[] = [];
  let literal = '';
  for (let i = 0; i < format.length; i++) {
    const ch = format[i] as string;
    if (ch !== '%') {
      literal += ch;
      continue;
    }
    const code = format[i + 1];
    const f = code === undefined ? undefined : CODES[code];
    if (!f)
      site.fail(
        `unsupported format code "%${code ?? ''}"; supported: ${Object.keys(CODES)
          .map((c) => `%${c}`)
          .join(' ')}.`,
      );
    if (literal) parts.push(literal);
    literal = '';
    parts.push(f);
    i++;
  }
  if (literal) parts.push(literal);
  return (m) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : p(m);
    return site.text(out);
  };
}

const momentFn = (
  name: string,
  max: number,
  f: (m: Moment, args: HogValue[], site: Site) => HogValue,
  options: { caseInsensitive?: boolean } = {},
): ScalarFunction =>
  scalar(
    name,
    1,
    max,
    (args, site) => {
      const m = momentOf(args[0] ?? null, site, max > 1 ? args[max - 1] : undefined);
      return m === null ? null : f(m, args, site);
    },
    options,
  );

/** toStartOfWeek(x, mode, tz) and toDayOfWeek(x, mode, tz): the optional zone is the third argument. */
const modeFn = (name: string, f: (m: Moment, mode: number) => HogValue): ScalarFunction =>
  scalar(
    name,
    1,
    3,
    ([v, mode, tz], site) => {
      const m = momentOf(v ?? null, site, tz);
      if (m === null) return null;
      const n = mode === undefined ? 0 : toNum(mode);
      if (n === null || !Number.isInteger(n) || n < 0 || n > 9)
        return site.fail('the mode must be an integer from 0 to 9.');
      return f(m, n);
    },
    { constantArgs: [2] },
  );

const dateResult = (d: { year: number; month: number; day: number }) => dateOf(d.year, d.month, d.day);

export const DATES: ScalarFunction[] = [
  scalar('now', 0, 0, (_, site) => new HogDateTime(site.ctx.now.getTime(), site.ctx.timezone), ci),
  scalar('today', 0, 0, (_, site) => dateResult(localDateOf(site.ctx.now.getTime(), site.ctx.timezone)), ci),
  momentFn('toStartOfHour', 1, (m) => truncate(m, 'hour')),
  momentFn('toStartOfDay', 2, (m) => truncate(m, 'day')),
  modeFn('toStartOfWeek', (m, mode) => startOfWeekDate(m, mode)),
  momentFn('toStartOfMonth', 1, (m) => dateOf(m.year, m.month, 1)),
  momentFn('toStartOfQuarter', 1, (m) => dateOf(m.year, m.month - ((m.month - 1) % 3), 1)),
  momentFn('toStartOfYear', 1, (m) => dateOf(m.year, 1, 1)),
  momentFn('toYear', 1, (m) => m.year),
  momentFn('toMonth', 1, (m) => m.month),
  momentFn('toDayOfMonth', 1, (m) => m.day),
  modeFn('toDayOfWeek', (m, mode) => dayOfWeek(m, mode)),
  momentFn('toHour', 1, (m) => m.hour),
  momentFn('toMinute', 1, (m) => m.minute),
  scalar(
    'dateDiff',
    3,
    4,
    ([u, a, b, tz], site) => {
      const unit = unitOf(u ?? null, site);
      const start = momentOf(a ?? null, site, tz);
      if (start === null) return null;
      const end = momentOf(b ?? null, site, tz ?? start.tz);
      if (end === null) return null;
      return relative(end, unit) - relative(start, unit);
    },
    { ...ci, constantArgs: [0, 3] },
  ),
  scalar(
    'dateAdd',
    3,
    3,
    ([u, n, v], site) => {
      const unit = unitOf(u ?? null, site);
      const m = momentOf(v ?? null, site);
      const k = toNum(n ?? null);
      return m === null || k === null ? null : add(m, unit, k, v ?? null, site);
    },
    { ...ci, constantArgs: [0] },
  ),
  scalar(
    'dateSub',
    3,
    3,
    ([u, n, v], site) => {
      const unit = unitOf(u ?? null, site);
      const m = momentOf(v ?? null, site);
      const k = toNum(n ?? null);
      return m === null || k === null ? null : add(m, unit, -k, v ?? null, site);
    },
    { ...ci, constantArgs: [0] },
  ),
  scalar(
    'dateTrunc',
    2,
    3,
    ([u, v, tz], site) => {
      const unit = unitOf(u ?? null, site);
      const m = momentOf(v ?? null, site, tz);
      return m === null ? null : truncate(m, unit);
    },
    { ...ci, constantArgs: [0, 2] },
  ),
  scalar(
    'formatDateTime',
    2,
    3,
    ([v, f, tz], site) => {
      const format = toText(f ?? null);
      const formatter = site.memo(`fmt:${format}`, () => compileFormat(format, site));
      const m = momentOf(v ?? null, site, tz);
      return m === null ? null : formatter(m);
    },
    { constantArgs: [1, 2] },
  ),
  scalar(
    'toTimeZone',
    2,
    2,
    ([v, tz], site) => {
      const zone = zoneArg(tz ?? null, site);
      const m = momentOf(v ?? null, site);
      return m === null ? null : new HogDateTime(m.at, zone);
    },
    { constantArgs: [1] },
  ),
  scalar(
    'toUnixTimestamp',
    1,
    2,
    ([v, tz], site) => {
      const m = momentOf(v ?? null, site, tz);
      return m === null ? null : Math.floor(m.at / 1000);
    },
    { constantArgs: [1] },
  ),
  scalar('fromUnixTimestamp', 1, 1, ([v], site) => {
    const n = toNum(v ?? null);
    return n === null || !Number.isFinite(n) ? null : dateTimeOrNull(Math.trunc(n) * 1000, site.ctx.timezone);
  }),
];
