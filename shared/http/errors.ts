import { ServiceError } from '../errors.ts';
import { logger } from '../observability.ts';
import { jsonResponse, type HttpResponse } from './responses.ts';

/** The one place an error becomes a response: PostHog's `{type, code, detail, attr}` body. */
export function errorResponse(error: unknown): HttpResponse {
  if (error instanceof ServiceError) {
    if (error.status >= 500) logger.warn('service unavailable', { error: describe(error) });
    return jsonResponse(
      error.status,
      { type: error.type, code: error.code, detail: error.detail, attr: error.attr },
      error.headers,
    );
  }
  logger.error('unhandled error', { error: describe(error) });
  return jsonResponse(500, { type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { value: String(error) };
}
