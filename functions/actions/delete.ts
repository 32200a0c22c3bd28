import { apiHandler } from '#shared/http/handler.ts';
import { noContent } from '#shared/http/responses.ts';
import { deleteAction } from '#shared/domain/actions.ts';
import { actionIdParams } from '#shared/schemas/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('actions_destroy'),
  { params: actionIdParams },
  async ({ params, projectId }) => {
    await deleteAction(projectId, params.id);
    return noContent();
  },
);
