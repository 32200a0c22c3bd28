import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updateProject } from '#shared/domain/project-updates.ts';
import { projectUpdateBody } from '#shared/schemas/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('projects_partial_update'),
  { body: projectUpdateBody },
  async ({ body, membership, projectId }) => ok(await updateProject(membership, projectId, body)),
);
