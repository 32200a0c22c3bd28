import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { listEventDefinitions } from '#shared/domain/definitions.ts';
import { eventDefinitionsQuery } from '#shared/schemas/definitions.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('event_definitions_list'),
  { query: eventDefinitionsQuery },
  async ({ query, projectId, url }) => {
    const { count, results } = await listEventDefinitions(projectId, query);
    return ok(paginated(url, query, count, results));
  },
);
