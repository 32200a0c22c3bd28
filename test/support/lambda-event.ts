import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/** The API Gateway (HTTP API) event a request becomes, for calling a handler or a bundle directly. */
export function httpApiEvent(
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: {
      host: '127.0.0.1:1',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    requestContext: { requestId: 'req-1', http: { method, path } } as APIGatewayProxyEventV2['requestContext'],
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
  };
}
