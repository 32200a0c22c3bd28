import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { actionResponse, findAction } from '#shared/domain/actions.ts';
import { actionIdParams } from '#shared/schemas/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('actions_retrieve'),
  { params: actionIdParams },
  async ({ params, projectId }) => ok(actionResponse(await findAction(projectId, params.id))),
);
