/**
 * What one trend request may cost. Each cap answers 400 naming itself, its number and the field to
 * change; the numbers leave every PostHog-like request well inside (shared/trends/README.md, Limits).
 */
import { ValidationError } from '#shared/errors.ts';
import type { RelativeUnit } from './dates.ts';
import type { TrendsModel } from './model.ts';

/** Events + actions: PostHog's insight editor rarely goes past a dozen. */
export const MAX_SERIES = 50;
/** `breakdown_limit` (PostHog's default 25 and WorldMap's 300 stay). */
export const MAX_BREAKDOWN_LIMIT = 1_000;
/** Buckets of the requested range (one period): 27 years of days, 416 days of hours (dates.ts MAX_BUCKETS, twice this, only guards its loop). */
export const MAX_TREND_BUCKETS = 10_000;
/**
 * Values computed: series × (breakdown_limit + None + Other) × (compare ? 2 : 1) × buckets. 500,000
 * took 4-8 s and answered 15-22 MB on a loaded 2-core machine (API timeout 10 s, Lambda answers ≤ 6 MB).
 */
export const MAX_CELLS = 200_000;
/**
 * The JSON answer: Lambda returns at most 6 MB. Each row repeats labels, days and the whole filter echo
 * (all series), so a few thousand rows of many series pass the other caps and still weigh tens of MB.
 */
export const MAX_RESPONSE_BYTES = 5 * 1024 * 1024;
/** UTC days of events read, compared period and active-user lookback included, after clamping to the first event. */
export const MAX_DAYS_READ = 3_700;
/** How far back a relative date (`-Nd`, `-Nh`, `compare_to`) may reach; absolute dates start in 1900 at the earliest. */
export const MAX_RELATIVE_YEARS = 100;
export const EARLIEST_DATE_YEAR = 1900;

const DAY_MS = 86_400_000;
const count = (n: number) => n.toLocaleString('en-US');

/** The largest N of `-N<unit>` within MAX_RELATIVE_YEARS (a quarter is 13 weeks, as in PostHog). */
const DAYS_PER_UNIT: Record<RelativeUnit, number> = { h: 1 / 24, d: 1, w: 7, m: 365.25 / 12, q: 91, y: 365.25 };
export const maxRelative = (unit: RelativeUnit) =>
  Math.floor((MAX_RELATIVE_YEARS * 365.25) / DAYS_PER_UNIT[unit] + 1e-9);

const UNIT_NAMES: Record<RelativeUnit, string> = {
  h: 'hours',
  d: 'days',
  w: 'weeks',
  m: 'months',
  q: 'quarters',
  y: 'years',
};

export function checkRelativeReach(value: string, n: number, unit: RelativeUnit, attr: string): void {
  const max = maxRelative(unit);
  if (n > max)
    throw new ValidationError(
      `"${value}" reaches back more than ${MAX_RELATIVE_YEARS} years: relative dates go back at most ${count(max)} ${UNIT_NAMES[unit]}.`,
      attr,
    );
}

export function checkEarliestYear(value: string, year: number, attr: string): void {
  if (year < EARLIEST_DATE_YEAR)
    throw new ValidationError(
      `"${value}" is before ${EARLIEST_DATE_YEAR}-01-01, the earliest date a trend can start.`,
      attr,
    );
}

/** Checked on each list before its entries are parsed, then on both together (legacy attr names: the legacy parser's check). */
export function checkSeriesCount(events: number, actions: number): void {
  if (events + actions <= MAX_SERIES) return;
  const attr = events > MAX_SERIES || actions === 0 ? 'events' : 'actions';
  throw new ValidationError(
    `A trend may have at most ${MAX_SERIES} series (events and actions together); this one has ${count(events + actions)}.`,
    attr,
  );
}

export function checkBreakdownLimit(limit: number, attr: string): void {
  if (limit > MAX_BREAKDOWN_LIMIT)
    throw new ValidationError(
      `Ensure this value is less than or equal to ${count(MAX_BREAKDOWN_LIMIT)}: a trend shows at most ${count(MAX_BREAKDOWN_LIMIT)} breakdown values.`,
      attr,
    );
}

/** `buckets` undefined: the range was refused while counting them (more than the engine's loop guard). */
export function tooManyBuckets(query: TrendsModel, buckets?: number): ValidationError {
  const has = buckets === undefined ? `more than ${count(MAX_TREND_BUCKETS)}` : count(buckets);
  return new ValidationError(
    `The date range has ${has} ${query.interval} intervals; at most ${count(MAX_TREND_BUCKETS)} are allowed. Choose a longer interval or a shorter range.`,
    query.attrs.interval,
  );
}

/** The response's size: buckets of one period, and rows × buckets of every period. */
export function checkResponseSize(query: TrendsModel, buckets: number): void {
  if (buckets > MAX_TREND_BUCKETS) throw tooManyBuckets(query, buckets);
  const breakdown = query.breakdownFilter;
  // A cohort breakdown has one row per listed cohort, no None or Other.
  const rowsPerSeries = breakdown ? (breakdown.cohorts?.length ?? breakdown.breakdown_limit + 2) : 1;
  const cells = query.series.length * rowsPerSeries * (query.compareFilter.compare ? 2 : 1) * buckets;
  if (cells <= MAX_CELLS) return;
  throw new ValidationError(
    `This trend would have ${count(cells)} values (series × breakdown rows × periods × ${query.interval} intervals); at most ${count(MAX_CELLS)} are allowed. Lower breakdown_limit, or choose fewer series, a shorter range or a longer interval.`,
    sizeAttr(query),
  );
}

const sizeAttr = (query: TrendsModel) => (query.breakdownFilter ? query.attrs.breakdown_limit : query.attrs.interval);

export function checkResponseBytes(query: TrendsModel, bytes: number): void {
  if (bytes <= MAX_RESPONSE_BYTES) return;
  throw new ValidationError(
    `This trend's answer would be ${count(Math.ceil(bytes / 1024))} KiB; at most ${count(MAX_RESPONSE_BYTES / 1024)} KiB can be returned. Lower breakdown_limit, or choose fewer series, a shorter range or a longer interval.`,
    sizeAttr(query),
  );
}

export interface ReadWindow {
  from: Date;
  to: Date;
  /** UTC days the window touches: what storage reads (one partition or segment set per day). */
  days: number;
}

const utcDay = (t: number) => Math.floor(t / DAY_MS);
const isoDay = (d: Date) => d.toISOString().slice(0, 10);

/**
 * The window starting no earlier than the UTC day of the project's first event (nothing is stored
 * before it) and ending no later than `latest` (capture stores nothing later: see the caller); null
 * when nothing can be there: no event yet, or the whole window outside those bounds.
 */
export function clampToEvents(
  window: { from: Date; to: Date },
  firstEventAt: Date | undefined,
  latest?: Date,
): ReadWindow | null {
  const to = Math.min(window.to.getTime(), latest?.getTime() ?? Infinity);
  if (firstEventAt === undefined || to < firstEventAt.getTime() || window.from.getTime() > to) return null;
  const from = Math.max(window.from.getTime(), utcDay(firstEventAt.getTime()) * DAY_MS);
  return { from: new Date(from), to: new Date(to), days: utcDay(to) - utcDay(from) + 1 };
}

/**
 * The days cap, on what is really read. `current` is the read without the compared period: when it
 * fits, the comparison is what to change.
 */
export function checkDaysRead(query: TrendsModel, read: ReadWindow | null, current: () => ReadWindow | null): void {
  if (read === null || read.days <= MAX_DAYS_READ) return;
  const { compare, compare_to } = query.compareFilter;
  const { attrs } = query;
  const own = compare ? current() : read;
  const attr =
    own !== null && own.days <= MAX_DAYS_READ
      ? compare_to === null
        ? attrs.compare
        : attrs.compare_to
      : attrs.date_from;
  throw new ValidationError(
    `This trend would read ${count(read.days)} days of events (${isoDay(read.from)} to ${isoDay(read.to)}${compare ? ', compared period included' : ''}); at most ${count(MAX_DAYS_READ)} days are allowed. Choose a shorter range.`,
    attr,
  );
}
