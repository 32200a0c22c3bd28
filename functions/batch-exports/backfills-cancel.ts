import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cancelBackfill } from '#shared/domain/export-backfills.ts';
import { backfillParams, emptyBody } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_backfills_cancel'),
  { params: backfillParams, body: emptyBody },
  async ({ params, membership }) => ok(await cancelBackfill(membership, params.id, params.backfill_id)),
);
