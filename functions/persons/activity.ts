import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { pageNumberLinks } from '#shared/http/pagination.ts';
import { personActivity } from '#shared/domain/persons.ts';
import { activityQuery, personIdParams } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_activity'),
  { params: personIdParams, query: activityQuery },
  async ({ params, query, projectId, url }) => {
    const { hasNext, hasPrevious, ...answer } = await personActivity(projectId, params.id, query);
    return ok({ ...answer, ...pageNumberLinks(url, query.page, hasNext, hasPrevious) });
  },
);
