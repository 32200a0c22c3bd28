import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cursorPage } from '#shared/http/pagination.ts';
import { listRuns } from '#shared/domain/export-backfills.ts';
import { exportIdParams, runListQuery } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_runs_list'),
  { params: exportIdParams, query: runListQuery },
  async ({ params, query, membership, url }) => {
    const page = await listRuns(membership, params.id, query);
    return ok(cursorPage(url, page.results, page.next));
  },
);
