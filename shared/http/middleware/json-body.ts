import { ParseError, PayloadTooLarge, UnsupportedMediaType, ValidationError } from '../../errors.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../json.ts';
import { parseMultipart } from '../multipart.ts';
import type { Middleware } from './pipeline.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * JSON bodies (or multipart forms: shared/http/multipart.ts, @fastify/busboy), at most 1 MiB, nested at most 128 levels, and a JSON object when present; an
 * empty body is `{}`. Only on routes with a body schema. Hand-written rather than
 * @middy/http-json-body-parser: docs/http-pipeline.md says why.
 */
export const jsonBody: Middleware = { before: (request) => parseBody(request, false) };

/** The same, also taking a JSON list: PostHog's bulk actions that take one (`groups_types/update_metadata`). */
export const jsonListBody: Middleware = { before: (request) => parseBody(request, true) };

async function parseBody(request: Parameters<NonNullable<Middleware['before']>>[0], allowList: boolean): Promise<void> {
  const { event } = request;
  const raw = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(raw) > MAX_BODY_BYTES)
    throw new PayloadTooLarge(`Request body exceeds ${MAX_BODY_BYTES} bytes.`);
  if (raw.trim() === '') {
    request.internal.body = {};
    return;
  }
  const header = event.headers?.['content-type'] ?? '';
  const [mediaType = ''] = header.split(';');
  const contentType = mediaType.trim().toLowerCase();
  // Uploads (a cohort's CSV): the form's fields as an object, checked by the route's schema like JSON.
  if (contentType === 'multipart/form-data') {
    request.internal.body = await parseMultipart(
      Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8'),
      header,
    );
    return;
  }
  if (contentType !== 'application/json' && !contentType.endsWith('+json')) throw new UnsupportedMediaType(contentType);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new ParseError(`JSON parse error - ${(error as Error).message}`);
  }
  if (parsed !== null && typeof parsed === 'object' && nestedDeeperThan(parsed))
    throw new ParseError(`JSON parse error - nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (parsed === null || typeof parsed !== 'object' || (Array.isArray(parsed) && !allowList)) {
    const got = Array.isArray(parsed) ? 'list' : parsed === null ? 'null' : typeof parsed;
    throw new ValidationError(`Invalid data. Expected a dictionary, but got ${got}.`, null);
  }
  request.internal.body = parsed;
}
