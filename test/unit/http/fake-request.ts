import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { Caller } from '#shared/domain/access.ts';
import type { MembershipRecord } from '#shared/db/organizations.ts';
import type { Middleware, PipelineRequest, PipelineState } from '#shared/http/middleware/pipeline.ts';
import type { HttpResponse } from '#shared/http/responses.ts';

/** A middy request as middy builds one per invocation, for driving one middleware without middy or a table. */
export function fakeRequest(
  event: Partial<APIGatewayProxyEventV2> = {},
  internal: PipelineState = {},
): PipelineRequest {
  return {
    event: {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/api/x',
      rawQueryString: '',
      headers: {},
      isBase64Encoded: false,
      requestContext: { requestId: 'req-1' } as APIGatewayProxyEventV2['requestContext'],
      ...event,
    },
    context: {} as Context,
    response: null,
    error: null,
    internal,
  };
}

export function fakeCaller(key: Partial<Caller['key']> = {}): Caller {
  return {
    user: { id: 'user-1', email: 'a@example.com', first_name: 'A', created_at: '2024-01-01T00:00:00Z' },
    key: {
      id: 'key-1',
      user_id: 'user-1',
      label: 'test',
      mask_value: 'phx_...abcd',
      secure_value: 'sha256$abc',
      scopes: ['*'],
      scoped_organizations: null,
      scoped_teams: null,
      created_at: '2024-01-01T00:00:00Z',
      ...key,
    },
  };
}

export const membership = (organizationId = '0190a7a0-0000-7000-8000-000000000001'): MembershipRecord => ({
  user_id: 'user-1',
  organization_id: organizationId,
  level: 15,
  joined_at: '2024-01-01T00:00:00Z',
});

/** Runs a middleware's `before` and returns what it threw (undefined when it did not). */
export async function thrownBy(middleware: Middleware, request: PipelineRequest): Promise<unknown> {
  try {
    await middleware.before?.(request);
    return undefined;
  } catch (error) {
    return error;
  }
}

export const response = (statusCode = 200, headers: Record<string, string> = {}): HttpResponse => ({
  statusCode,
  headers,
  body: '',
});
