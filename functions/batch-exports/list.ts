import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { listExports } from '#shared/domain/batch-exports.ts';
import { exportListQuery } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_list'),
  { query: exportListQuery },
  async ({ query, membership, url }) => {
    const { count, results } = await listExports(membership, query);
    return ok(paginated(url, query, count, results));
  },
);
