import { apiHandler } from '#shared/http/handler.ts';
import { created } from '#shared/http/responses.ts';
import { retryRun } from '#shared/domain/export-backfills.ts';
import { emptyBody, runParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_runs_retry'),
  { params: runParams, body: emptyBody },
  async ({ params, membership }) => created(await retryRun(membership, params.id, params.run_id)),
);
