import type { RateLimitClass } from '../config.ts';
import { limitRequest, type RateLimitVerdict } from '../db/rate-limits.ts';
import type { Caller } from '../domain/access.ts';

/** The classes a personal-key route can be in (capture has its own, per project token). */
export type KeyRateLimitClass = Exclude<RateLimitClass, 'capture'>;

/**
 * Personal API key rate limits, PostHog's (posthog/rate_limit.py): per key, identified by its stored
 * hash `sha256$<hex>` (never the raw key), per class: `crud` 480/minute and 4800/hour, `analytics`
 * (the trend routes) 240/minute and 1200/hour; fixed UTC windows (shared/db/rate-limits.ts).
 *
 * Where it runs: in the factory's authorization step, right after the key authenticates, concurrently
 * with the scope and tenant checks (so it adds no round trip). Every request of an authenticated key
 * counts, including those then refused with 403/404, and 429 wins over those refusals: a throttled key
 * learns nothing more. Unauthenticated requests (401) are not counted: there is no key to count them on.
 * (DRF checks permissions before throttles, so PostHog does not count scope-denied requests; counting
 * them here keeps one rule — every response to an authenticated key carries the headers below — and
 * also slows down a key probing scopes or ids.)
 *
 * Headers, on every response to an authenticated key (2xx, 4xx, 5xx alike), for the tighter window
 * (fewest requests left; on a tie the one that resets later):
 * - `X-RateLimit-Limit`: that window's limit;
 * - `X-RateLimit-Remaining`: requests left in it after this one;
 * - `X-RateLimit-Reset`: when it resets, in epoch seconds.
 * Over a limit: 429 `throttled` with `Retry-After` = seconds until the exceeded window resets.
 * If the counters cannot be updated the request goes through without these headers (fail open).
 */
export async function limitKey(caller: Caller, cls: KeyRateLimitClass | undefined): Promise<RateLimitVerdict> {
  return limitRequest(caller.key.secure_value, cls ?? 'crud');
}
