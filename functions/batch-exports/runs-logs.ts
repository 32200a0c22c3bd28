import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { runLogs } from '#shared/domain/export-backfills.ts';
import { runLogsQuery, runParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_runs_logs'),
  { params: runParams, query: runLogsQuery },
  async ({ params, query, membership, url }) => {
    const { entries, complete } = await runLogs(membership, params.id, params.run_id, {
      levels: query.level,
      search: query.search,
      after: query.after,
      before: query.before,
    });
    const page = entries.slice(query.offset, query.offset + query.limit);
    return ok({ ...paginated(url, query, entries.length, page), ...(complete ? {} : { count_capped: true }) });
  },
);
