import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { retrieveRun } from '#shared/domain/export-backfills.ts';
import { runParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_runs_retrieve'),
  { params: runParams },
  async ({ params, membership }) => ok(await retrieveRun(membership, params.id, params.run_id)),
);
