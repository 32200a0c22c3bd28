import { describe, expect, it } from 'vitest';
import { NotAuthenticated, NotFound } from '#shared/errors.ts';
import { authentication } from '#shared/http/middleware/authentication.ts';
import { fakeCaller, fakeRequest, thrownBy } from './fake-request.ts';

/** The lookup is injected: what the middleware hands it, and what it does with the answer. */
function recordingLookup() {
  const calls: [string | undefined, string | undefined][] = [];
  const caller = fakeCaller();
  const lookup = async (key: string | undefined, source?: string) => {
    calls.push([key, source]);
    if (key !== 'phx_good')
      throw new NotAuthenticated(key ? `Personal API key found in request ${source} is invalid.` : undefined);
    return caller;
  };
  return { calls, caller, middleware: authentication(lookup) };
}

describe('authentication middleware', () => {
  it('authenticates the bearer key and puts the caller on request.internal.caller', async () => {
    const { calls, caller, middleware } = recordingLookup();
    const request = fakeRequest({ headers: { authorization: 'Bearer phx_good' } });
    expect(await thrownBy(middleware, request)).toBeUndefined();
    expect(calls).toEqual([['phx_good', 'Authorization header']]);
    expect(request.internal.caller).toBe(caller);
  });

  it('takes personal_api_key from the query string when there is no Authorization header', async () => {
    const { calls, middleware } = recordingLookup();
    const request = fakeRequest({ rawQueryString: 'limit=1&personal_api_key=phx_good' });
    await middleware.before?.(request);
    expect(calls).toEqual([['phx_good', 'query string']]);
  });

  it('leaves no caller behind when the key is missing or wrong (401 from the lookup)', async () => {
    const { middleware } = recordingLookup();
    for (const headers of [{}, { authorization: 'Bearer phx_bad' }]) {
      const request = fakeRequest({ headers });
      const error = await thrownBy(middleware, request);
      expect(error).toBeInstanceOf(NotAuthenticated);
      expect(request.internal.caller).toBeUndefined();
    }
  });

  it('starts the tenant lookup with the key, before the owner is read, and never leaves its refusal unhandled', async () => {
    const order: string[] = [];
    const caller = fakeCaller();
    const lookup = async (
      key: string | undefined,
      _source?: string,
      onKey?: (holder: Pick<typeof caller, 'key'> & { user: { id: string } }) => void,
    ) => {
      if (key !== 'phx_good') throw new NotAuthenticated();
      order.push('key found');
      onKey?.({ key: caller.key, user: { id: caller.key.user_id } });
      order.push('owner read');
      return caller;
    };
    const holders: unknown[] = [];
    const tenantOf = async (holder: unknown) => {
      holders.push(holder);
      order.push('tenant lookup started');
      throw new NotFound();
    };
    const request = fakeRequest({ headers: { authorization: 'Bearer phx_good' } });
    expect(await thrownBy(authentication(lookup, tenantOf), request)).toBeUndefined();
    expect(order).toEqual(['key found', 'tenant lookup started', 'owner read']);
    expect(holders).toEqual([{ key: caller.key, user: { id: 'user-1' } }]);
    await expect(request.internal.tenantLookup).rejects.toBeInstanceOf(NotFound);

    const refused = fakeRequest({ headers: { authorization: 'Bearer phx_bad' } });
    expect(await thrownBy(authentication(lookup, tenantOf), refused)).toBeInstanceOf(NotAuthenticated);
    expect(refused.internal.tenantLookup).toBeUndefined();
  });
});
