import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { backfillExport } from '#shared/domain/batch-exports.ts';
import { backfillBody, exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

/** Deprecated in PostHog (in favour of /backfills/), kept for clients that call it: 200 with what was queued. */
export const handler = apiHandler(
  route('batch_exports_backfill'),
  { params: exportIdParams, body: backfillBody },
  async ({ params, body, membership }) => ok(await backfillExport(membership, params.id, body)),
);
