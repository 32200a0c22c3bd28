import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cancelQuery } from '#shared/domain/query/async.ts';
import { queryIdParams } from '#shared/schemas/query/index.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('query_destroy'),
  { params: queryIdParams },
  async ({ params, projectId, caller }) => ok(await cancelQuery(projectId, params.id, caller)),
);
