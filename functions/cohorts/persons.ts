import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cursorPaginated } from '#shared/http/pagination.ts';
import { cohortPersons } from '#shared/domain/cohorts.ts';
import { cohortIdParams, cohortPersonsQuery } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_persons'),
  { params: cohortIdParams, query: cohortPersonsQuery },
  async ({ params, query, projectId, url }) => {
    const found = await cohortPersons(projectId, params.id, query);
    return ok(
      cursorPaginated(url, { limit: query.limit, offset: 0 }, found.count, found.results, {
        hasMore: found.nextCursor !== undefined,
        cursor: found.nextCursor,
        nextOffset: 0,
      }),
    );
  },
);
