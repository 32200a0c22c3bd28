import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { unpauseExport } from '#shared/domain/export-backfills.ts';
import { exportIdParams, unpauseBody } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_unpause'),
  { params: exportIdParams, body: unpauseBody },
  async ({ params, body, membership }) => ok(await unpauseExport(membership, params.id, body)),
);
