import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { groupPropertiesTimeline } from '#shared/domain/groups.ts';
import { groupTimelineQuery } from '#shared/schemas/groups.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('groups_property_timeline'),
  { query: groupTimelineQuery },
  async ({ query, projectId }) =>
    ok(await groupPropertiesTimeline(projectId, query.group_type_index, query.group_key, query)),
);
