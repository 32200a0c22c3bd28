import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { pauseExport } from '#shared/domain/export-backfills.ts';
import { emptyBody, exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_pause'),
  { params: exportIdParams, body: emptyBody },
  async ({ params, membership }) => ok(await pauseExport(membership, params.id)),
);
