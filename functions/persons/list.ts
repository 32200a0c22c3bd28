import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cursorPaginated } from '#shared/http/pagination.ts';
import { listPersons } from '#shared/domain/persons.ts';
import { personFilter } from '#shared/domain/person-filters.ts';
import { personListQuery } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_list'),
  { query: personListQuery },
  async ({ query, projectId, url, deadline }) => {
    const found = await listPersons(projectId, {
      ...query,
      matches: await personFilter(projectId, query.properties),
      deadline,
    });
    const body = cursorPaginated(url, query, found.count, found.results, {
      hasMore: found.hasMore,
      cursor: found.nextCursor,
      nextOffset: found.nextOffset,
    });
    return ok(found.scanLimited ? { ...body, scan_limited: true } : body);
  },
);
