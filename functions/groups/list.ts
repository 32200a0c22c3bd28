import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cursorPage } from '#shared/http/pagination.ts';
import { listGroups } from '#shared/domain/groups.ts';
import { groupListQuery } from '#shared/schemas/groups.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('groups_list'),
  { query: groupListQuery },
  async ({ query, projectId, url }) => {
    const page = await listGroups(projectId, query);
    return ok(cursorPage(url, page.results, page.nextCursor));
  },
);
