import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cursorPage } from '#shared/http/pagination.ts';
import { listBackfillsOf } from '#shared/domain/export-backfills.ts';
import { backfillListQuery, exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_backfills_list'),
  { params: exportIdParams, query: backfillListQuery },
  async ({ params, query, membership, url }) => {
    const page = await listBackfillsOf(membership, params.id, query);
    return ok(cursorPage(url, page.results, page.next));
  },
);
