/**
 * IANA time-zone arithmetic with Intl only. A local wall-clock time is handled as its fields; the
 * UTC offset at an instant is read from Intl and cached per minute (offsets only change on whole
 * minutes), so converting many instants costs few Intl calls.
 */

export const HOUR = 3_600_000;
export const DAY = 86_400_000;

export interface LocalDate {
  year: number;
  /** 1-12 */
  month: number;
  day: number;
}

export interface LocalDateTime extends LocalDate {
  hour: number;
  minute: number;
  second: number;
  ms: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const offsetCache = new Map<string, number>();
const OFFSET_CACHE_LIMIT = 200_000;

export function isValidTimeZone(tz: string): boolean {
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** Milliseconds to add to a UTC instant to get its local wall-clock time read as UTC. */
export function offsetAt(t: number, tz: string): number {
  const minute = Math.floor(t / 60_000);
  const key = `${tz}|${minute}`;
  const cached = offsetCache.get(key);
  if (cached !== undefined) return cached;
  const at = minute * 60_000;
  const fields: Record<string, number> = {};
  for (const part of formatter(tz).formatToParts(new Date(at))) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  const wall = Date.UTC(
    fields.year!,
    fields.month! - 1,
    fields.day!,
    fields.hour! % 24,
    fields.minute!,
    fields.second!,
  );
  const offset = wall - at;
  if (offsetCache.size > OFFSET_CACHE_LIMIT) offsetCache.clear();
  offsetCache.set(key, offset);
  return offset;
}

/** A Date's fields on the UTC axis (where wall-clock times are kept as milliseconds). */
function utcFields(d: Date): LocalDateTime {
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    ms: d.getUTCMilliseconds(),
  };
}

export function toLocal(t: number, tz: string): LocalDateTime {
  return utcFields(new Date(t + offsetAt(t, tz)));
}

/**
 * The instant of a local wall-clock time. Like Temporal's 'compatible' disambiguation: a time
 * repeated by a backward shift resolves to its first occurrence, a time skipped by a forward shift
 * moves forward by the gap (so a day whose midnight does not exist starts at 01:00).
 */
export function fromLocal(local: LocalDate & Partial<LocalDateTime>, tz: string): number {
  const wall = Date.UTC(
    local.year,
    local.month - 1,
    local.day,
    local.hour ?? 0,
    local.minute ?? 0,
    local.second ?? 0,
    local.ms ?? 0,
  );
  const before = offsetAt(wall - DAY, tz);
  const after = offsetAt(wall + DAY, tz);
  const candidates = [wall - before, wall - after].filter((t) => t + offsetAt(t, tz) === wall);
  if (candidates.length) return Math.min(...candidates);
  return wall - before;
}

/** The local wall-clock time of an instant as milliseconds on the UTC axis (for Python-style naive arithmetic). */
export function wallClock(t: number, tz: string): number {
  return t + offsetAt(t, tz);
}

/** The instant of a wall-clock time given as milliseconds on the UTC axis (see fromLocal for DST gaps and folds). */
export function fromWallClock(w: number, tz: string): number {
  return fromLocal(utcFields(new Date(w)), tz);
}

export function localDateOf(t: number, tz: string): LocalDate {
  const { year, month, day } = toLocal(t, tz);
  return { year, month, day };
}

export function addDays(date: LocalDate, n: number): LocalDate {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day + n));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

export function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Calendar month arithmetic clamping the day to the target month (python-dateutil relativedelta). */
export function addMonths(date: LocalDate, n: number): LocalDate {
  const index = date.year * 12 + (date.month - 1) + n;
  const year = Math.floor(index / 12);
  const month = index - year * 12 + 1;
  return { year, month, day: Math.min(date.day, daysInMonth(year, month)) };
}

/** 0 = Sunday ... 6 = Saturday. */
export function weekday(date: LocalDate): number {
  return new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay();
}

export function startOfWeek(date: LocalDate, weekStartDay: 0 | 1): LocalDate {
  return addDays(date, -((weekday(date) - weekStartDay + 7) % 7));
}

export function startOfLocalDay(t: number, tz: string): number {
  return fromLocal(localDateOf(t, tz), tz);
}

export function endOfLocalDay(t: number, tz: string): number {
  return fromLocal(addDays(localDateOf(t, tz), 1), tz) - 1;
}

/**
 * Start of the local hour holding `t`: the local minutes and seconds are subtracted from the
 * instant, so the second 01:00 of a backward DST shift stays its own hour.
 */
export function startOfLocalHour(t: number, tz: string): number {
  const l = toLocal(t, tz);
  return t - (l.minute * 60_000 + l.second * 1000 + l.ms);
}

export function endOfLocalHour(t: number, tz: string): number {
  return startOfLocalHour(t, tz) + HOUR - 1;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Python's `isoformat()` of the aware local datetime, e.g. `2024-03-10T00:00:00-05:00` (ms when not zero). */
export function isoLocal(t: number, tz: string): string {
  const l = toLocal(t, tz);
  const offsetMinutes = Math.round(offsetAt(t, tz) / 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const fraction = l.ms ? `.${pad(l.ms, 3)}` : '';
  return `${pad(l.year, 4)}-${pad(l.month)}-${pad(l.day)}T${pad(l.hour)}:${pad(l.minute)}:${pad(l.second)}${fraction}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

export { pad };
