import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { findGroup } from '#shared/domain/groups.ts';
import { groupFindQuery } from '#shared/schemas/groups.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('groups_find'), { query: groupFindQuery }, async ({ query, projectId }) =>
  ok(await findGroup(projectId, query.group_type_index, query.group_key)),
);
