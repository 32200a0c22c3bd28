import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { exportLogs } from '#shared/domain/batch-exports.ts';
import { exportIdParams, logsQuery } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_logs'),
  { params: exportIdParams, query: logsQuery },
  async ({ params, query, membership, url }) => {
    const entries = await exportLogs(membership, params.id, {
      levels: query.level,
      run_id: query.run_id ?? query.instance_id,
    });
    return ok(paginated(url, query, entries.length, entries.slice(query.offset, query.offset + query.limit)));
  },
);
