import { describe, expect, it } from 'vitest';
import { NotFound, PermissionDenied, Throttled } from '#shared/errors.ts';
import { countRequest, enforceRateLimit } from '#shared/http/middleware/rate-limit.ts';
import type { RateLimitVerdict } from '#shared/db/rate-limits.ts';
import { fakeCaller, fakeRequest, thrownBy } from './fake-request.ts';

const HEADERS = { 'X-RateLimit-Limit': '480', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '1700000060' };
const throttledVerdict = (): RateLimitVerdict => ({ headers: HEADERS, throttled: new Throttled(7) });

/** A counter that resolves when the test says so, recording what it was asked to count. */
function deferredCounter() {
  const counted: [string, string | undefined][] = [];
  let resolve: (verdict: RateLimitVerdict) => void = () => undefined;
  const limit = (caller: ReturnType<typeof fakeCaller>, cls: string | undefined) => {
    counted.push([caller.key.secure_value, cls]);
    return new Promise<RateLimitVerdict>((r) => (resolve = r));
  };
  return { counted, limit, settle: (verdict: RateLimitVerdict) => resolve(verdict) };
}

describe('rate-limit middlewares', () => {
  it("counts the authenticated key's request in the route's class without waiting for the count", async () => {
    const counter = deferredCounter();
    const request = fakeRequest({}, { caller: fakeCaller() });
    await countRequest({ rateLimit: 'analytics' }, counter.limit).before?.(request);
    expect(counter.counted).toEqual([['sha256$abc', 'analytics']]);
    expect(request.internal.rateLimit).toBeInstanceOf(Promise);
    expect(request.internal.rateLimitHeaders).toBeUndefined();
  });

  it('refuses to count before authentication ran (a pipeline composed in the wrong order)', async () => {
    const error = await thrownBy(countRequest({}, deferredCounter().limit), fakeRequest());
    expect(String(error)).toContain("'caller' is set by the authentication middleware");
  });

  it('lets the request through with the headers when under the limits', async () => {
    const request = fakeRequest(
      {},
      { rateLimit: Promise.resolve({ headers: { ...HEADERS, 'X-RateLimit-Remaining': '479' } }) },
    );
    expect(await thrownBy(enforceRateLimit, request)).toBeUndefined();
    expect(request.internal.rateLimitHeaders).toMatchObject({ 'X-RateLimit-Remaining': '479' });
  });

  it('answers 429 with Retry-After over a limit', async () => {
    const request = fakeRequest({}, { rateLimit: Promise.resolve(throttledVerdict()) });
    const error = await thrownBy(enforceRateLimit, request);
    expect(error).toBeInstanceOf(Throttled);
    expect((error as Throttled).headers).toMatchObject({ 'Retry-After': '7' });
    expect(request.internal.rateLimitHeaders).toEqual(HEADERS);
  });

  it('makes a 429 win over a 403 or 404 that refused the request while it was being counted', async () => {
    for (const refusal of [new PermissionDenied("API key missing required scope 'person:read'"), new NotFound()]) {
      const request = fakeRequest({}, { rateLimit: Promise.resolve(throttledVerdict()) });
      request.error = refusal;
      await enforceRateLimit.onError?.(request);
      expect(request.error).toBeInstanceOf(Throttled);
      expect(request.internal.rateLimitHeaders).toEqual(HEADERS);
    }
  });

  it('keeps the refusal, with the headers, when the key is under its limits', async () => {
    const refusal = new NotFound();
    const request = fakeRequest({}, { rateLimit: Promise.resolve({ headers: HEADERS }) });
    request.error = refusal;
    await enforceRateLimit.onError?.(request);
    expect(request.error).toBe(refusal);
    expect(request.internal.rateLimitHeaders).toEqual(HEADERS);
  });

  it('does nothing for errors raised before anything was counted (401, bad body)', async () => {
    const request = fakeRequest();
    request.error = new PermissionDenied('x');
    await enforceRateLimit.onError?.(request);
    expect(request.internal.rateLimitHeaders).toBeUndefined();
    expect(request.error).toBeInstanceOf(PermissionDenied);
  });
});
