import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cancelRun } from '#shared/domain/export-backfills.ts';
import { emptyBody, runParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_runs_cancel'),
  { params: runParams, body: emptyBody },
  async ({ params, membership }) => ok(await cancelRun(membership, params.id, params.run_id)),
);
