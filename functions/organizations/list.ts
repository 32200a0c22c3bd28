import * as v from 'valibot';
import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { paginated } from '#shared/http/pagination.ts';
import { pageQuery } from '#shared/schemas/query-string.ts';
import { listOrganizations } from '#shared/domain/organizations.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('organizations_list'),
  { query: v.object(pageQuery) },
  async ({ query, caller, url }) => {
    const { count, results } = await listOrganizations(caller, query);
    return ok(paginated(url, query, count, results));
  },
);
