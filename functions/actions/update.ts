import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updateAction } from '#shared/domain/actions.ts';
import { actionIdParams, actionUpdateBody } from '#shared/schemas/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('actions_partial_update'),
  { params: actionIdParams, body: actionUpdateBody },
  async ({ params, body, projectId }) => ok(await updateAction(projectId, params.id, body)),
);
