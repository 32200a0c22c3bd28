import { UpdateCommand } from '../aws/dynamodb.ts';
import { config, type RateLimitClass, type RateWindow } from '../config.ts';
import { Throttled } from '../errors.ts';
import { logger } from '../observability.ts';
import { call, db, tableName } from './client.ts';
import { keys } from './keys.ts';

/**
 * Fixed-window rate limits kept in the table (access pattern "rate-limit windows" in
 * docs/access-patterns.md). Each counted request is one `UpdateItem ADD hits :1` per window of its
 * class (the minute and the hour windows in parallel) that returns the new count; the item expires
 * (TTL) a minute after its window ends and is never read again, because the next window is another key.
 *
 * Windows follow the wall clock, not the service clock: ANALYTICS_FIXED_NOW freezes business time
 * (timestamps, date ranges), and a frozen window would never reset.
 */

const WINDOW_MS: Record<RateWindow, number> = { minute: 60_000, hour: 3_600_000 };
/** How long a window's item outlives its window (TTL; DynamoDB deletes expired items lazily anyway). */
const TTL_SLACK_SECONDS = 60;
/** A counter slower than this is skipped (fail open), so a struggling table does not slow every request down. */
const COUNT_BUDGET_MS = 2_000;

export interface WindowCount {
  window: RateWindow;
  limit: number;
  /** Requests counted in this window, this one included. */
  count: number;
  /** When the window ends (ms since the epoch). */
  endsAtMs: number;
}

/** The outcome of counting one request: the headers to send, and the error to throw when over a limit. */
export interface RateLimitVerdict {
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` of the tighter window; empty when nothing was counted. */
  headers: Record<string, string>;
  /** Set when a window's limit is exceeded: a 429 carrying Retry-After and the headers above. */
  throttled?: Throttled;
}

/** UTC start of the window holding `nowMs`: `YYYY-MM-DDTHH:MM` (minute) or `YYYY-MM-DDTHH` (hour). */
export function windowStart(window: RateWindow, nowMs: number): { start: string; endsAtMs: number } {
  const startMs = Math.floor(nowMs / WINDOW_MS[window]) * WINDOW_MS[window];
  const iso = new Date(startMs).toISOString();
  return { start: window === 'minute' ? iso.slice(0, 16) : iso.slice(0, 13), endsAtMs: startMs + WINDOW_MS[window] };
}

/** Counts one request in every limited window of `cls` for `subject` (in parallel) and returns the new counts. */
export async function countRequest(
  subject: string,
  cls: RateLimitClass,
  limits: Partial<Record<RateWindow, number>>,
  nowMs: number,
): Promise<WindowCount[]> {
  const signal = AbortSignal.timeout(COUNT_BUDGET_MS);
  return Promise.all(
    (Object.entries(limits) as [RateWindow, number][]).map(async ([window, limit]) => {
      const { start, endsAtMs } = windowStart(window, nowMs);
      const out = await call(() =>
        db().send(
          new UpdateCommand({
            TableName: tableName(),
            Key: keys.rateLimitWindow(subject, cls, window, start),
            UpdateExpression: 'ADD hits :one SET expires_at = :exp, entity = :entity',
            ExpressionAttributeValues: {
              ':one': 1,
              ':exp': Math.ceil(endsAtMs / 1000) + TTL_SLACK_SECONDS,
              ':entity': 'RATE',
            },
            ReturnValues: 'UPDATED_NEW',
          }),
          { abortSignal: signal },
        ),
      );
      return { window, limit, count: Number(out.Attributes?.hits), endsAtMs };
    }),
  );
}

/**
 * Headers and 429 from the counts. The headers describe the tighter window: the one with the fewest
 * requests left, and on a tie the one that resets later (so waiting until `X-RateLimit-Reset` is always
 * enough). Over any limit: 429 with Retry-After = seconds until the last exceeded window ends, which is
 * then also the window the headers describe (its remaining is 0).
 */
export function verdict(counts: WindowCount[], nowMs: number): RateLimitVerdict {
  if (counts.length === 0) return { headers: {} };
  const remaining = (c: WindowCount) => Math.max(0, c.limit - c.count);
  const tighter = counts.reduce((a, b) =>
    remaining(b) < remaining(a) || (remaining(b) === remaining(a) && b.endsAtMs > a.endsAtMs) ? b : a,
  );
  const headers = {
    'X-RateLimit-Limit': String(tighter.limit),
    'X-RateLimit-Remaining': String(remaining(tighter)),
    'X-RateLimit-Reset': String(Math.ceil(tighter.endsAtMs / 1000)),
  };
  const exceeded = counts.filter((c) => c.count > c.limit);
  if (exceeded.length === 0) return { headers };
  const endsAtMs = Math.max(...exceeded.map((c) => c.endsAtMs));
  const throttled = new Throttled(Math.max(1, Math.ceil((endsAtMs - nowMs) / 1000)));
  Object.assign(throttled.headers, headers);
  return { headers, throttled };
}

/**
 * Counts a request of `subject` in class `cls` against the configured limits. Fails open: when the
 * counters cannot be updated (table throttling, timeout, missing permission) the request is allowed,
 * without headers, and a warning is logged; the limit protects the service, and turning a counter
 * hiccup into errors for every caller would do more harm than letting a few requests through.
 */
export async function limitRequest(subject: string, cls: RateLimitClass): Promise<RateLimitVerdict> {
  const limits = config().rateLimits?.[cls];
  if (!limits || Object.keys(limits).length === 0) return { headers: {} };
  const nowMs = Date.now();
  try {
    return verdict(await countRequest(subject, cls, limits, nowMs), nowMs);
  } catch (error) {
    const e = error as { name?: string; message?: string };
    logger.warn('rate limit not checked; request allowed', {
      rate_limit_class: cls,
      error: { name: e.name, message: e.message },
    });
    return { headers: {} };
  }
}
