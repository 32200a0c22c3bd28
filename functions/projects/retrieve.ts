import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { findProject, projectResponse } from '#shared/domain/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('projects_retrieve'), {}, async ({ membership, projectId }) =>
  ok(projectResponse(await findProject(membership, projectId))),
);
