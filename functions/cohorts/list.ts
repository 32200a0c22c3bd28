import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { listCohorts } from '#shared/domain/cohorts.ts';
import { cohortListQuery } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_list'),
  { query: cohortListQuery },
  async ({ query, projectId, url }) => {
    const { count, results } = await listCohorts(projectId, query);
    return ok(paginated(url, query, count, results));
  },
);
