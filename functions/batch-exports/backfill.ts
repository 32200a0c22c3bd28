import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { legacyBackfill } from '#shared/domain/export-backfills.ts';
import { backfillBody, exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

/** Deprecated in PostHog (in favour of /backfills/), kept for clients that call it: 200 with what was queued. */
export const handler = apiHandler(
  route('batch_exports_backfill'),
  { params: exportIdParams, body: backfillBody },
  async ({ params, body, membership }) => ok(await legacyBackfill(membership, params.id, body)),
);
