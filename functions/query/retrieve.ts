import { apiHandler } from '#shared/http/handler.ts';
import { queryStatus } from '#shared/domain/query/async.ts';
import { queryIdParams } from '#shared/schemas/query/index.ts';
import { route } from '../routes.ts';

/** PostHog's codes: 202 running, 200 complete, 400 failed with a message for the user, 500 failed otherwise. */
export const handler = apiHandler(
  route('query_retrieve'),
  { params: queryIdParams },
  async ({ params, projectId, caller }) => {
    const body = await queryStatus(projectId, params.id, caller);
    const { complete, error, error_message } = body.query_status;
    const status = error ? (error_message ? 400 : 500) : complete ? 200 : 202;
    return { status, body };
  },
);
