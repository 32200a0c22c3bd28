import { ValidationError } from '../../errors.ts';
import { queryParameters } from '../responses.ts';
import { parseWith } from '../validation.ts';
import type { Middleware, ResponseFormat, RouteInfo, Schemas } from './pipeline.ts';

function responseFormat(raw: string | undefined): ResponseFormat {
  if (raw === undefined || raw === 'json' || raw === 'csv') return raw ?? 'json';
  throw new ValidationError(`"${raw}" is not a valid choice.`, 'format', 'invalid_choice');
}

/**
 * The route's schemas applied, in this order: `format` (routes that answer CSV), path parameters,
 * query (for repeated keys the last value wins), body (the parsed JSON, `{}` when empty). The first
 * issue is a 400 in DRF's wording (shared/http/validation.ts).
 */
export const validation = (route: Pick<RouteInfo, 'csv'>, schemas: Schemas): Middleware => ({
  before: (request) => {
    const query = queryParameters(request.event);
    const format = route.csv ? responseFormat(query.format) : 'json';
    const params = schemas.params ? parseWith(schemas.params, request.event.pathParameters ?? {}, null) : undefined;
    const parsedQuery = schemas.query ? parseWith(schemas.query, query, null) : undefined;
    const body = schemas.body ? parseWith(schemas.body, request.internal.body ?? {}, null) : undefined;
    request.internal.input = { format, params, query: parsedQuery, body };
  },
});
