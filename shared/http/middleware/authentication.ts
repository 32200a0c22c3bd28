import { extractPersonalApiKey } from '../../auth/api-keys.ts';
import { authenticate } from '../../domain/access.ts';
import { logger } from '../../observability.ts';
import { queryParameters } from '../responses.ts';
import type { Middleware } from './pipeline.ts';
import type { TenantResolver } from './tenancy.ts';

/**
 * The personal API key (`Authorization: Bearer phx_...`, or `personal_api_key` in the query string)
 * -> the caller: 401 without a valid key. `authenticateKey` is the lookup (tests give their own).
 *
 * With `tenantOf`, the tenant's lookups start as soon as the key is found, beside the read of its
 * owner (they need only the key): `tenantLookup` holds them, unawaited, for the tenancy middleware,
 * which surfaces their outcome after the scope check as if it had run them itself.
 */
export const authentication = (
  authenticateKey: typeof authenticate = authenticate,
  tenantOf?: TenantResolver,
): Middleware => ({
  before: async (request) => {
    const found = extractPersonalApiKey(
      request.event.headers?.authorization,
      queryParameters(request.event).personal_api_key,
    );
    const caller = await authenticateKey(
      found?.key,
      found?.source,
      tenantOf &&
        ((holder) => {
          const lookup = tenantOf(holder, request.event);
          // Awaited by the tenancy middleware, or never (a 401 or 403 first): either way not an unhandled rejection.
          lookup.catch(() => undefined);
          request.internal.tenantLookup = lookup;
        }),
    );
    logger.appendKeys({ user_id: caller.user.id });
    request.internal.caller = caller;
  },
});
