import type { KeyRateLimitClass } from '../../config.ts';
import { limitRequest, type RateLimitVerdict } from '../../db/rate-limits.ts';
import type { Caller } from '../../domain/access.ts';
import type { Throttled } from '../../errors.ts';
import { established, type Middleware, type PipelineRequest, type RouteInfo } from './pipeline.ts';

/**
 * Personal API key rate limits, PostHog's (posthog/rate_limit.py): per key, identified by its stored
 * hash `sha256$<hex>` (never the raw key), per class: `crud` 480/minute and 4800/hour, `analytics`
 * (the trend routes) 240/minute and 1200/hour; fixed UTC windows (shared/db/rate-limits.ts).
 *
 * Where it runs: two middlewares around the scope and tenancy ones. `countRequest` starts counting
 * right after the key authenticates and does not wait; `enforceRateLimit` waits for the count after
 * scope and tenant were checked, so the count costs no extra round trip. Every request of an
 * authenticated key counts, including those then refused with 403/404, and 429 wins over those
 * refusals (`enforceRateLimit.onError`): a throttled key learns nothing more. Unauthenticated requests
 * (401) are not counted: there is no key to count them on. (DRF checks permissions before throttles,
 * so PostHog does not count scope-denied requests; counting them here keeps one rule — every response
 * to an authenticated key carries the headers below — and also slows down a key probing scopes or ids.)
 *
 * Headers, on every response to an authenticated key (2xx, 4xx, 5xx alike), for the tighter window
 * (fewest requests left; on a tie the one that resets later):
 * - `X-RateLimit-Limit`: that window's limit;
 * - `X-RateLimit-Remaining`: requests left in it after this one;
 * - `X-RateLimit-Reset`: when it resets, in epoch seconds.
 * Over a limit: 429 `throttled` with `Retry-After` = seconds until the exceeded window resets.
 * If the counters cannot be updated the request goes through without these headers (fail open: the
 * verdict never rejects).
 */
export async function limitKey(caller: Caller, cls: KeyRateLimitClass | undefined): Promise<RateLimitVerdict> {
  return limitRequest(caller.key.secure_value, cls ?? 'crud');
}

/** Starts counting the authenticated key's request; `limit` is the counter (tests give their own). */
export const countRequest = (route: Pick<RouteInfo, 'rateLimit'>, limit: typeof limitKey = limitKey): Middleware => ({
  before: (request) => {
    request.internal.rateLimit = limit(established(request, 'caller', 'authentication'), route.rateLimit);
  },
});

/** Waits for the count, keeps its headers for the response, and answers 429 over a limit. */
export const enforceRateLimit: Middleware = {
  before: async (request) => {
    const throttled = await settle(request);
    if (throttled) throw throttled;
  },
  // Whatever refused the request while the count was pending (scope, tenant): a throttled key gets the 429 instead.
  onError: async (request) => {
    const throttled = await settle(request);
    if (throttled) request.error = throttled;
  },
};

async function settle(request: PipelineRequest): Promise<Throttled | undefined> {
  if (!request.internal.rateLimit) return undefined;
  const { headers, throttled } = await request.internal.rateLimit;
  request.internal.rateLimitHeaders = headers;
  return throttled;
}
