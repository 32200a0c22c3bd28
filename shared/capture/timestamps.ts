/**
 * Event time as PostHog's ingestion computes it (plugin-server `parseEventTimestamp` /
 * `handleTimestamp`): client time corrected by the clock skew that `sent_at` reveals, else
 * `now - offset`, else the client's timestamp, else `now`; anything more than 23 h ahead of the
 * server becomes `now`. Our addition: an event time before EARLIEST_EVENT_TIME (2000) is refused.
 */

/**
 * Capture refuses an event whose time (after clock-skew correction) is before this: such times are
 * clock bugs, not data, and each one would stretch the project's `all` range and the days trends read.
 * A rule of capture, not a setting: it lives here, not in shared/config.ts (pure libraries read no configuration).
 */
export const EARLIEST_EVENT_TIME = new Date('2000-01-01T00:00:00Z');

/** PostHog lets events run up to 23 h ahead (time-zone mistakes) before replacing them with `now`. */
export const FUTURE_CUTOFF_MS = 23 * 60 * 60 * 1000;

/** The year range ClickHouse's DateTime64 (and PostHog's bounds check) can hold. */
const MIN_MS = new Date(0).setUTCFullYear(0, 0, 1); // Date.UTC would read year 0 as 1900
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const ISO_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/**
 * Parses an ISO-8601 string or an epoch-milliseconds number. Returns `undefined` when nothing was
 * sent (PostHog treats a falsy timestamp as absent) and `null` when something unparseable was.
 * A string without a zone is read as UTC so the result does not depend on the server's TZ.
 */
export function parseClientTime(value: unknown): Date | null | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? inRange(new Date(value)) : null;
  if (typeof value !== 'string') return null;
  const m = ISO_PATTERN.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zulu, sign, oh = '0', om = '0'] = m;
  const ms = Number(frac.slice(0, 3).padEnd(3, '0'));
  const local = new Date(0);
  local.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  local.setUTCHours(Number(h), Number(mi), Number(s), ms);
  // Date silently rolls over (Feb 30 -> Mar 2); reject instead of storing a day the client never meant.
  const fieldsKept =
    local.getUTCFullYear() === Number(y) &&
    local.getUTCMonth() === Number(mo) - 1 &&
    local.getUTCDate() === Number(d) &&
    local.getUTCHours() === Number(h) &&
    local.getUTCMinutes() === Number(mi) &&
    local.getUTCSeconds() === Number(s);
  if (!fieldsKept || Number(oh) > 23 || Number(om) > 59) return null;
  const offsetMs = zulu || !sign ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return inRange(new Date(local.getTime() - offsetMs));
}

function inRange(d: Date): Date | null {
  const t = d.getTime();
  return Number.isNaN(t) || t < MIN_MS || t > MAX_MS ? null : d;
}

/**
 * posthog-js puts its send time in the `_` query parameter as epoch milliseconds. PostHog's Rust
 * capture only trusts values that land after 2020, because older SDKs sent seconds there.
 */
export function sentAtFromQuery(query: Record<string, string>): Date | undefined {
  const raw = query.sent_at ?? query._;
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  const d = new Date(Number(raw));
  return d.getUTCFullYear() > 2020 && d.getTime() <= MAX_MS ? d : undefined;
}

export interface TimestampInput {
  timestamp: unknown;
  offset: unknown;
  /** Already parsed: the event's own `sent_at`, else the request's. */
  sentAt: Date | undefined;
  now: Date;
}

export type TimestampResult = { ok: true; timestamp: Date } | { ok: false; reason: string };

export function resolveEventTimestamp({ timestamp, offset, sentAt, now }: TimestampInput): TimestampResult {
  const client = parseClientTime(timestamp);
  if (client === null) return { ok: false, reason: 'invalid timestamp' };
  let result: number;
  if (client !== undefined) {
    // Clock skew: the client's clock read `sentAt` when ours read `now`, so shift its timestamp by the difference.
    result = sentAt ? now.getTime() - (sentAt.getTime() - client.getTime()) : client.getTime();
  } else if (offset !== undefined && offset !== null) {
    // `offset` = how long ago (ms, by the client's own clock) the event happened; skew-free by construction.
    if (typeof offset !== 'number' || !Number.isFinite(offset)) return { ok: false, reason: 'invalid offset' };
    result = now.getTime() - offset;
  } else {
    result = now.getTime();
  }
  if (result - now.getTime() > FUTURE_CUTOFF_MS) return { ok: true, timestamp: new Date(now.getTime()) };
  if (result < EARLIEST_EVENT_TIME.getTime())
    return { ok: false, reason: `timestamp before ${EARLIEST_EVENT_TIME.toISOString()}` };
  const resolved = inRange(new Date(result));
  return resolved ? { ok: true, timestamp: resolved } : { ok: false, reason: 'invalid timestamp' };
}
