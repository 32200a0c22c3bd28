import { apiHandler } from '#shared/http/handler.ts';
import { queryStatus } from '#shared/domain/query/async.ts';
import { queryIdParams } from '#shared/schemas/query/index.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('query_retrieve'), { params: queryIdParams }, async ({ params, projectId }) =>
  queryStatus(projectId, params.id),
);
