import { extractPersonalApiKey } from '../../auth/api-keys.ts';
import { authenticate } from '../../domain/access.ts';
import { logger } from '../../observability.ts';
import { queryParameters } from '../responses.ts';
import type { Middleware } from './pipeline.ts';

/**
 * The personal API key (`Authorization: Bearer phx_...`, or `personal_api_key` in the query string)
 * -> the caller: 401 without a valid key. `authenticateKey` is the lookup (tests give their own).
 */
export const authentication = (authenticateKey: typeof authenticate = authenticate): Middleware => ({
  before: async (request) => {
    const found = extractPersonalApiKey(
      request.event.headers?.authorization,
      queryParameters(request.event).personal_api_key,
    );
    const caller = await authenticateKey(found?.key, found?.source);
    logger.appendKeys({ user_id: caller.user.id });
    request.internal.caller = caller;
  },
});
