import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { errorResponse } from '#shared/http/errors.ts';
import { normalizePath, resolveRoute } from '#shared/http/router.ts';
import { MethodNotAllowed, NotFound } from '#shared/errors.ts';
import { capturePreflightHeaders } from '#shared/http/cors.ts';
import { routePaths } from '../routes.ts';

/**
 * Browsers preflight SDK requests that are not "simple" (capture, flags, remote config with custom
 * request headers); API Gateway hands OPTIONS to this function.
 */
const sdkPaths = routePaths.filter((r) => r.auth === 'project_token' || r.auth === 'public');
const isSdkPath = (path: string) => resolveRoute(sdkPaths, 'OPTIONS', path).kind !== 'not_found';

/**
 * API Gateway's `$default` route: anything no operation route took. Unknown paths are 404 and known
 * paths with another method 405, in the API's error shape (API Gateway's own 404 is `{"message":...}`).
 * A trailing-slash path that reached the API directly (not through CloudFront, which strips the slash)
 * is redirected with 308, which keeps method and body.
 */
export const handler = async (event: APIGatewayProxyEventV2) => {
  const method = event.requestContext.http.method;
  const resolution = resolveRoute(routePaths, method, event.rawPath);
  if (method === 'OPTIONS' && isSdkPath(event.rawPath)) {
    return {
      statusCode: 204,
      headers: capturePreflightHeaders(event.headers?.origin, event.headers?.['access-control-request-headers']),
      body: '',
    };
  }
  if (resolution.kind === 'match') {
    const location = normalizePath(event.rawPath) + (event.rawQueryString ? `?${event.rawQueryString}` : '');
    return { statusCode: 308, headers: { Location: location }, body: '' };
  }
  return errorResponse(
    resolution.kind === 'method_not_allowed' ? new MethodNotAllowed(method, resolution.allowed) : new NotFound(),
  );
};
