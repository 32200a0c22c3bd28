import { apiHandler } from '#shared/http/handler.ts';
import { created } from '#shared/http/responses.ts';
import { createExport } from '#shared/domain/batch-exports.ts';
import { checkExportFilters } from '#shared/domain/export-filters.ts';
import { exportCreateBody } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_create'),
  { body: exportCreateBody },
  async ({ body, membership }) => created(await createExport(membership, body, checkExportFilters)),
);
