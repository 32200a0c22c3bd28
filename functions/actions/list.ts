import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { listActions } from '#shared/domain/actions.ts';
import { actionListQuery } from '#shared/schemas/projects.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('actions_list'),
  { query: actionListQuery },
  async ({ query, projectId, url }) => {
    const { count, results } = await listActions(projectId, query);
    return ok(paginated(url, query, count, results));
  },
);
