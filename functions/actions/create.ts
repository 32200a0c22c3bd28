import { apiHandler } from '#shared/http/handler.ts';
import { created } from '#shared/http/responses.ts';
import { createAction } from '#shared/domain/actions.ts';
import { actionCreateBody } from '#shared/schemas/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('actions_create'),
  { body: actionCreateBody },
  async ({ body, caller, projectId }) => created(await createAction(caller, projectId, body)),
);
