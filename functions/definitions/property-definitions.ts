import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { listPropertyDefinitions } from '#shared/domain/property-definitions.ts';
import { propertyDefinitionsQuery } from '#shared/schemas/definitions.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('property_definitions_list'),
  { query: propertyDefinitionsQuery },
  async ({ query, projectId, url }) => {
    const { count, results, scan_limited } = await listPropertyDefinitions(projectId, query);
    return ok({ ...paginated(url, query, count, results), ...(scan_limited ? { scan_limited } : {}) });
  },
);
