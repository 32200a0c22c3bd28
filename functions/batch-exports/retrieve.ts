import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { retrieveExport } from '#shared/domain/batch-exports.ts';
import { exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_retrieve'),
  { params: exportIdParams },
  async ({ params, membership }) => ok(await retrieveExport(membership, params.id)),
);
