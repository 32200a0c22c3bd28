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
    const { entries, complete } = await exportLogs(membership, params.id, {
      levels: query.level,
      search: query.search,
      after: query.after,
      before: query.before,
      run_id: query.run_id ?? query.instance_id,
    });
    const page = entries.slice(query.offset, query.offset + query.limit);
    return ok({ ...paginated(url, query, entries.length, page), ...(complete ? {} : { count_capped: true }) });
  },
);
