import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updateExport } from '#shared/domain/batch-exports.ts';
import { checkExportFilters } from '#shared/domain/export-filters.ts';
import { exportIdParams, exportUpdateBody } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_partial_update'),
  { params: exportIdParams, body: exportUpdateBody },
  async ({ params, body, membership }) => ok(await updateExport(membership, params.id, body, checkExportFilters)),
);
