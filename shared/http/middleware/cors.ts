import { captureCorsHeaders, PUBLIC_ASSET_CORS_HEADERS } from '../cors.ts';
import type { Middleware } from './pipeline.ts';

/**
 * CORS on public responses, errors included (it is used outside `completion`, and middy unwinds in
 * reverse, so it runs after the error became a response). `origin`: the caller's origin mirrored with
 * credentials, like capture; `any`: `*`, for answers that are the same for every site (shared/http/cors.ts).
 */
export const cors = (mode: 'origin' | 'any'): Middleware => {
  const add: NonNullable<Middleware['after']> = (request) => {
    if (request.response)
      Object.assign(
        request.response.headers,
        mode === 'any' ? PUBLIC_ASSET_CORS_HEADERS : captureCorsHeaders(request.event.headers?.origin),
      );
  };
  return { after: add, onError: add };
};
