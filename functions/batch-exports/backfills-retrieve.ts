import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { retrieveBackfill } from '#shared/domain/export-backfills.ts';
import { backfillParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_backfills_retrieve'),
  { params: backfillParams },
  async ({ params, membership }) => ok(await retrieveBackfill(membership, params.id, params.backfill_id)),
);
