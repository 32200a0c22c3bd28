import { apiHandler } from '#shared/http/handler.ts';
import { noContent } from '#shared/http/responses.ts';
import { deleteExport } from '#shared/domain/batch-exports.ts';
import { exportIdParams } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('batch_exports_destroy'),
  { params: exportIdParams },
  async ({ params, membership }) => {
    await deleteExport(membership, params.id);
    return noContent();
  },
);
