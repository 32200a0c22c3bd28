import { ServiceError, ValidationError } from '../errors.ts';
import { logger } from '../observability.ts';
import { jsonResponse, type HttpResponse } from './responses.ts';

/** The one place an error becomes a response: PostHog's `{type, code, detail, attr}` body. */
export function errorResponse(error: unknown): HttpResponse {
  // Only input nested past what some recursion could follow gets here: the request's fault, not the service's.
  if (isStackOverflow(error)) {
    logger.warn('stack overflow answered as a 400', { error: describe(error) });
    return errorResponse(new ValidationError('The input is nested too deeply.', null));
  }
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

const isStackOverflow = (error: unknown) =>
  error instanceof RangeError && error.message === 'Maximum call stack size exceeded';

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { value: String(error) };
}
