/**
 * PostHog's date grammar and the trend date range (posthog/utils.py relative_date_parse,
 * posthog/queries/query_date_range.py). Everything happens in the project's time zone.
 */
import {
  addDays,
  addMonths,
  DAY,
  endOfLocalDay,
  endOfLocalHour,
  fromLocal,
  fromWallClock,
  HOUR,
  localDateOf,
  type LocalDate,
  pad,
  startOfLocalDay,
  startOfLocalHour,
  startOfWeek,
  toLocal,
  wallClock,
} from './tz.ts';
import type { TrendsModel } from './model.ts';
import type { DateRange, Interval, ProjectSettings } from './types.ts';

export type RelativeUnit = 'h' | 'd' | 'w' | 'm' | 'q' | 'y';

export type DateExpression =
  | { kind: 'all' }
  | { kind: 'relative'; n: number; unit: RelativeUnit; position: 'Start' | 'End' | null }
  | {
      kind: 'absolute';
      date: LocalDate;
      time: { hour: number; minute: number; second: number; ms: number } | null;
      offsetMinutes: number | null;
    };

const RELATIVE = /^-?(\d+)?([hdwmqy])(Start|End)?$/;

/**
 * The instants a date may resolve to: years 0001 to 9999, the ones ISO 8601 writes in four digits
 * (so every answer, cache key and store can hold them). Outside them JavaScript's dates become NaN
 * (past 275,760 years) or years no comparison means anything for.
 */
export const MIN_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
export const MAX_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');
export const instantInRange = (t: number): boolean => Number.isFinite(t) && t >= MIN_INSTANT && t <= MAX_INSTANT;
export const OUT_OF_RANGE_HINT = 'dates must fall between 0001-01-01 and 9999-12-31';

/** The most of each unit a relative date may move back: 10,000 years, so no resolution can overflow to NaN. */
const MAX_RELATIVE_N: Record<RelativeUnit, number> = {
  h: 10_000 * 8_766,
  d: 10_000 * 366,
  w: 10_000 * 53,
  m: 10_000 * 12,
  q: 10_000 * 5,
  y: 10_000,
};

/** `-N<unit>` as written, whatever N (so a caller can say how far back is too far); null if not relative. */
export function relativeParts(input: string): { n: number; unit: RelativeUnit } | null {
  const rel = RELATIVE.exec(input.trim());
  return rel ? { n: rel[1] === undefined ? 0 : Number(rel[1]), unit: rel[2] as RelativeUnit } : null;
}
const ABSOLUTE =
  /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * null when the string is not a date PostHog would accept, or a relative date reaching back further
 * than any instant (MAX_RELATIVE_N): every expression returned resolves to a finite instant.
 */
export function parseDateExpression(input: string): DateExpression | null {
  const s = input.trim();
  if (s === 'all') return { kind: 'all' };
  const rel = RELATIVE.exec(s);
  if (rel) {
    // Without N there is no delta (PostHog only adds one `if match.group("number")`): dStart is today.
    const n = rel[1] === undefined ? 0 : Number(rel[1]);
    const unit = rel[2] as RelativeUnit;
    if (n > MAX_RELATIVE_N[unit]) return null;
    return { kind: 'relative', n, unit, position: (rel[3] as 'Start' | 'End' | undefined) ?? null };
  }
  const abs = ABSOLUTE.exec(s);
  if (!abs) return null;
  const date = { year: Number(abs[1]), month: Number(abs[2]), day: Number(abs[3]) };
  if (
    date.month < 1 ||
    date.month > 12 ||
    date.day < 1 ||
    date.day > new Date(Date.UTC(date.year, date.month, 0)).getUTCDate()
  )
    return null;
  const time =
    abs[4] === undefined
      ? null
      : {
          hour: Number(abs[4]),
          minute: Number(abs[5]),
          second: Number(abs[6] ?? 0),
          ms: Math.floor(Number(`0.${abs[7] ?? '0'}`) * 1000),
        };
  if (time && (time.hour > 23 || time.minute > 59 || time.second > 59)) return null;
  if (!time && abs[8]) return null;
  return { kind: 'absolute', date, time, offsetMinutes: abs[8] === undefined ? null : parseOffset(abs[8]) };
}

function parseOffset(z: string): number {
  if (z.toUpperCase() === 'Z') return 0;
  const digits = z.slice(1).replace(':', '');
  const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || 0);
  return z.startsWith('-') ? -minutes : minutes;
}

/** How much of a resolved point is meaningful: it is widened/truncated to this precision. */
export type Precision = 'hour' | 'day' | 'time';

export interface ResolvedPoint {
  t: number;
  precision: Precision;
}

export interface DateContext {
  tz: string;
  now: number;
  weekStartDay: 0 | 1;
}

/**
 * A relative date moves back from now by N units (python-dateutil relativedelta: calendar months
 * clamp the day), then `Start`/`End` snaps to the start/end of that unit. Hour units keep hour
 * precision (`-24h` starts at the top of the hour); every other unit has day precision, like
 * PostHog's `always_truncate`.
 */
export function resolveRelative(expr: Extract<DateExpression, { kind: 'relative' }>, ctx: DateContext): ResolvedPoint {
  const { n, unit, position } = expr;
  if (unit === 'h') {
    const t = ctx.now - n * HOUR;
    return { t: position === 'End' ? endOfLocalHour(t, ctx.tz) : startOfLocalHour(t, ctx.tz), precision: 'hour' };
  }
  const today = localDateOf(ctx.now, ctx.tz);
  const date = snap(shiftDate(today, unit, -n), unit, position, ctx.weekStartDay);
  return { t: fromLocal(date, ctx.tz), precision: 'day' };
}

/** Local calendar arithmetic for the day-or-longer units (`q` is 13 weeks, as in PostHog). */
export function shiftDate(date: LocalDate, unit: Exclude<RelativeUnit, 'h'>, n: number): LocalDate {
  switch (unit) {
    case 'd':
      return addDays(date, n);
    case 'w':
      return addDays(date, 7 * n);
    case 'q':
      return addDays(date, 13 * 7 * n);
    case 'm':
      return addMonths(date, n);
    case 'y':
      return addMonths(date, 12 * n);
  }
}

function snap(
  date: LocalDate,
  unit: Exclude<RelativeUnit, 'h'>,
  position: 'Start' | 'End' | null,
  weekStartDay: 0 | 1,
): LocalDate {
  if (!position) return date;
  const start = position === 'Start';
  switch (unit) {
    case 'd':
      return date;
    case 'w': {
      const first = startOfWeek(date, weekStartDay);
      return start ? first : addDays(first, 6);
    }
    case 'm':
      return start ? { ...date, day: 1 } : addDays(addMonths({ ...date, day: 1 }, 1), -1);
    case 'q': {
      const first = { year: date.year, month: date.month - ((date.month - 1) % 3), day: 1 };
      return start ? first : addDays(addMonths(first, 3), -1);
    }
    case 'y':
      return start ? { year: date.year, month: 1, day: 1 } : { year: date.year, month: 12, day: 31 };
  }
}

export function resolveExpression(
  expr: DateExpression,
  ctx: DateContext,
  firstEventAt: number | undefined,
): ResolvedPoint {
  switch (expr.kind) {
    case 'all':
      // PostHog's get_earliest_timestamp falls back to 7 days ago for a project without events.
      return firstEventAt === undefined
        ? resolveRelative({ kind: 'relative', n: 7, unit: 'd', position: null }, ctx)
        : { t: firstEventAt, precision: 'day' };
    case 'relative':
      return resolveRelative(expr, ctx);
    case 'absolute': {
      if (!expr.time) return { t: fromLocal(expr.date, ctx.tz), precision: 'day' };
      const local = { ...expr.date, ...expr.time };
      if (expr.offsetMinutes === null) return { t: fromLocal(local, ctx.tz), precision: 'time' };
      const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second, local.ms);
      return { t: wall - expr.offsetMinutes * 60_000, precision: 'time' };
    }
  }
}

function expressionOf(raw: string): DateExpression {
  const expr = parseDateExpression(raw);
  if (!expr) throw new Error(`unparsable date ${raw}`);
  return expr;
}

const DEFAULT_DATE_FROM: DateExpression = { kind: 'relative', n: 7, unit: 'd', position: null };

/** The lower bound before interval rounding: hour-precision points to the top of the hour, day-precision to midnight. */
function lowerBound(point: ResolvedPoint, ctx: DateContext): number {
  if (point.precision === 'hour') return startOfLocalHour(point.t, ctx.tz);
  if (point.precision === 'day') return startOfLocalDay(point.t, ctx.tz);
  return point.t;
}

/**
 * The upper bound: an explicit date_to is widened to the end of its day (end of its hour for
 * hourly ranges and for hour-unit relative dates); without date_to the range ends at the end of
 * today, or at now for hourly ranges (PostHog legacy QueryDateRange.date_to_param).
 */
function upperBound(
  raw: string | null,
  interval: Interval,
  ctx: DateContext,
  explicit: boolean,
  firstEventAt: number | undefined,
): number {
  if (raw === null) return interval === 'hour' ? ctx.now : endOfLocalDay(ctx.now, ctx.tz);
  const point = resolveExpression(expressionOf(raw), ctx, firstEventAt);
  if (explicit && point.precision === 'time') return point.t;
  if (point.precision === 'hour' || (point.precision === 'time' && interval === 'hour'))
    return endOfLocalHour(point.t, ctx.tz);
  return endOfLocalDay(point.t, ctx.tz);
}

export function dateContext(project: ProjectSettings, now: Date): DateContext {
  return { tz: project.timezone, now: now.getTime(), weekStartDay: project.week_start_day };
}

/** Hard cap on the number of buckets of one period (an `all` range in hours would otherwise explode). */
export const MAX_BUCKETS = 20_000;

export function resolveRange(query: TrendsModel, ctx: DateContext, firstEventAt: number | undefined): NumericRange {
  const { date_from, date_to, explicitDate } = query.dateRange;
  const fromExpr = date_from === null ? DEFAULT_DATE_FROM : expressionOf(date_from);
  const interval = query.interval;
  const point = resolveExpression(fromExpr, ctx, firstEventAt);
  // `all` counts from the first event's day (its hour for hourly ranges), as HogQL's QueryDateRange truncates it.
  if (fromExpr.kind === 'all' && firstEventAt !== undefined && interval === 'hour') point.precision = 'hour';
  const to = upperBound(date_to, interval, ctx, explicitDate, firstEventAt);
  // Counting stops at now, but the hourly range "ends with the current hour" for the rounding test and the compared period.
  const adjustedTo = date_to === null && interval === 'hour' ? endOfLocalHour(ctx.now, ctx.tz) : to;
  return rangeBetween(lowerBound(point, ctx), to, adjustedTo, interval, ctx, explicitDate);
}

/**
 * A range from its unrounded lower bound. Buckets always start at the first bucket; the lower bound
 * itself moves there only when PostHog's QueryDateRange.should_round says so: week and month
 * intervals always, hour and day intervals when the range from the lower bound to the adjusted end
 * lasts at least two intervals (so `-24h` by day keeps 15:00 yesterday as its bound, `-48h` does not).
 */
function rangeBetween(
  unroundedFrom: number,
  to: number,
  adjustedTo: number,
  interval: Interval,
  ctx: DateContext,
  explicit: boolean,
): NumericRange {
  const bounds = { unroundedFrom, adjustedTo };
  if (unroundedFrom > to) return { from: unroundedFrom, to, buckets: [], ...bounds };
  const first = alignToBucket(unroundedFrom, interval, ctx);
  const from = !explicit && shouldRound(unroundedFrom, adjustedTo, interval) ? first : unroundedFrom;
  return { from, to, buckets: bucketStarts(first, to, interval, ctx), ...bounds };
}

function shouldRound(from: number, adjustedTo: number, interval: Interval): boolean {
  if (interval === 'week' || interval === 'month') return true;
  return adjustedTo - from >= 2 * (interval === 'hour' ? HOUR : DAY);
}

/** The longest a bucket can be (a 25-hour DST day), for a cheap lower bound on the bucket count. */
const LONGEST_BUCKET: Record<Interval, number> = {
  hour: HOUR,
  day: 25 * HOUR,
  week: 7 * 25 * HOUR,
  month: 31 * 25 * HOUR,
};

export function bucketStarts(first: number, to: number, interval: Interval, ctx: DateContext): number[] {
  if ((to - first) / LONGEST_BUCKET[interval] > MAX_BUCKETS) throw new RangeError('too many buckets');
  const out: number[] = [];
  for (let t = first; t <= to; t = nextBucket(t, interval, ctx)) {
    out.push(t);
    if (out.length > MAX_BUCKETS) throw new RangeError('too many buckets');
  }
  return out;
}

export function alignToBucket(t: number, interval: Interval, ctx: DateContext): number {
  switch (interval) {
    case 'hour':
      return startOfLocalHour(t, ctx.tz);
    case 'day':
      return startOfLocalDay(t, ctx.tz);
    case 'week':
      return fromLocal(startOfWeek(localDateOf(t, ctx.tz), ctx.weekStartDay), ctx.tz);
    case 'month':
      return fromLocal({ ...localDateOf(t, ctx.tz), day: 1 }, ctx.tz);
  }
}

/**
 * Next bucket start. Hours are consecutive real hours (a 23-hour local day has 23 hourly buckets,
 * a 25-hour day 25); days, weeks and months step the local calendar, so a DST day is one bucket.
 */
export function nextBucket(t: number, interval: Interval, ctx: DateContext): number {
  if (interval === 'hour') {
    const next = startOfLocalHour(t + HOUR, ctx.tz);
    return next > t ? next : t + HOUR;
  }
  return shiftBucket(t, interval, 1, ctx);
}

/** Moves a day/week/month bucket start by n buckets on the local calendar (hours: n real hours). */
export function shiftBucket(t: number, interval: Interval, n: number, ctx: DateContext): number {
  if (interval === 'hour') return t + n * HOUR;
  const date = localDateOf(t, ctx.tz);
  const shifted =
    interval === 'day' ? addDays(date, n) : interval === 'week' ? addDays(date, 7 * n) : addMonths(date, n);
  return fromLocal(shifted, ctx.tz);
}

export interface NumericRange {
  from: number;
  to: number;
  buckets: number[];
  /** The lower bound before rounding to its bucket. */
  unroundedFrom: number;
  /** The upper bound as PostHog adjusts it: `to`, except the end of the current hour for an hourly range without date_to. */
  adjustedTo: number;
}

export function toDateRange(resolved: NumericRange, interval: Interval, ctx: DateContext): DateRange {
  return {
    from: new Date(resolved.from),
    to: new Date(resolved.to),
    buckets: resolved.buckets.map((b) => new Date(b)),
    unrounded_from: new Date(resolved.unroundedFrom),
    adjusted_to: new Date(resolved.adjustedTo),
    interval,
    timezone: ctx.tz,
    week_start_day: ctx.weekStartDay,
  };
}

export function fromDateRange(range: DateRange): NumericRange {
  return {
    from: range.from.getTime(),
    to: range.to.getTime(),
    buckets: range.buckets.map((b) => b.getTime()),
    unroundedFrom: range.unrounded_from.getTime(),
    adjustedTo: range.adjusted_to.getTime(),
  };
}

/** One period of the response: the current range, or the compared one. */
export interface Period {
  kind: 'current' | 'previous';
  from: number;
  to: number;
  buckets: number[];
}

/** The current period, and with `compare` the previous one. */
export function periodsOf(query: TrendsModel, range: NumericRange, ctx: DateContext): Period[] {
  const current: Period = { kind: 'current', from: range.from, to: range.to, buckets: range.buckets };
  const { compare, compare_to } = query.compareFilter;
  if (!compare) return [current];
  const { from, to, buckets } =
    compare_to === null ? previousPeriod(query, range, ctx) : comparedTo(query, compare_to, range, ctx);
  return [current, { kind: 'previous', from, to, buckets }];
}

/**
 * PostHog's get_compare_period_dates, on local wall-clock times (Python's aware-datetime arithmetic):
 * with diff = adjusted end - unrounded start, the previous start is start - diff on that day at the
 * start's time of day, the previous end is previous start + diff at the end's time of day (hourly:
 * its minutes and seconds). Day intervals with a `-Nd` date_from, N a multiple of 7, and no date_to
 * start one day later (PostHog's "last 7 days" kludge). The result is then resolved like a requested
 * range: its end widened to the end of its day (hour), its start rounded by should_round.
 */
function previousPeriod(query: TrendsModel, range: NumericRange, ctx: DateContext): NumericRange {
  const { interval } = query;
  const { explicitDate: explicit, date_from, date_to } = query.dateRange;
  const from = wallClock(range.unroundedFrom, ctx.tz);
  const to = wallClock(range.adjustedTo, ctx.tz);
  const diff = to - from;
  let previousFrom = startOfWallDay(from - diff) + (from - startOfWallDay(from));
  if (interval === 'day' && date_to === null && isWeeksOfDays(date_from)) previousFrom += DAY;
  const end = previousFrom + diff;
  const unit = interval === 'hour' ? HOUR : DAY;
  const previousTo = end - mod(end, unit) + mod(to, unit);
  const fromT = fromWallClock(previousFrom, ctx.tz);
  const toT = fromWallClock(previousTo, ctx.tz);
  const widened = explicit ? toT : interval === 'hour' ? endOfLocalHour(toT, ctx.tz) : endOfLocalDay(toT, ctx.tz);
  return rangeBetween(fromT, widened, widened, interval, ctx, explicit);
}

const mod = (a: number, m: number) => ((a % m) + m) % m;
const startOfWallDay = (w: number) => w - mod(w, DAY);

/** `-7d`, `-14d`, ...: a date_from whose day delta is a positive multiple of 7 (not `-1w`, which is a week delta). */
function isWeeksOfDays(dateFrom: string | null): boolean {
  const expr = dateFrom === null ? null : parseDateExpression(dateFrom);
  return expr?.kind === 'relative' && expr.unit === 'd' && expr.n > 0 && expr.n % 7 === 0;
}

/**
 * `compare_to` (HogQL's QueryCompareToDateRange): the previous start is the current start moved
 * back by that relative offset, the previous end is that plus the current range's length.
 */
function comparedTo(query: TrendsModel, compareTo: string, range: NumericRange, ctx: DateContext): NumericRange {
  const expr = parseDateExpression(compareTo);
  if (expr?.kind !== 'relative') throw new Error(`unparsable compare_to ${compareTo}`);
  const length = wallClock(range.to, ctx.tz) - wallClock(range.from, ctx.tz);
  let from: number;
  if (expr.unit === 'h') from = range.from - expr.n * HOUR;
  else {
    const unit = expr.unit;
    const l = toLocal(range.from, ctx.tz);
    from = fromLocal({ ...l, ...shiftDate(l, unit, -expr.n) }, ctx.tz);
  }
  const to = fromWallClock(wallClock(from, ctx.tz) + length, ctx.tz);
  return rangeBetween(from, to, to, query.interval, ctx, query.dateRange.explicitDate);
}

/** The earliest day a weekly/monthly-active window reaches back to for a bucket. */
export function windowStart(bucketStart: number, days: number, tz: string): number {
  return fromLocal(addDays(localDateOf(bucketStart, tz), -(days - 1)), tz);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Legacy labels: `%-d-%b-%Y` (week/month buckets by their first day), hours `%-d-%b-%Y %H:%M`. */
export function bucketLabel(t: number, interval: Interval, tz: string): string {
  const l = toLocal(t, tz);
  const day = `${l.day}-${MONTHS[l.month - 1]}-${l.year}`;
  return interval === 'hour' ? `${day} ${pad(l.hour)}:${pad(l.minute)}` : day;
}

/** `days`: `YYYY-MM-DD`, hours `YYYY-MM-DD HH:MM:SS`, local. */
export function bucketDay(t: number, interval: Interval, tz: string): string {
  const l = toLocal(t, tz);
  const day = `${pad(l.year, 4)}-${pad(l.month)}-${pad(l.day)}`;
  return interval === 'hour' ? `${day} ${pad(l.hour)}:${pad(l.minute)}:${pad(l.second)}` : day;
}
