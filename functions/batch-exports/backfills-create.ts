import { apiHandler } from '#shared/http/handler.ts';
import { created } from '#shared/http/responses.ts';
import { createBackfillResource } from '#shared/domain/export-backfills.ts';
import { backfillCreateBody, exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_backfills_create'),
  { params: exportIdParams, body: backfillCreateBody },
  async ({ params, body, membership }) => created(await createBackfillResource(membership, params.id, body)),
);
