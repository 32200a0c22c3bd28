import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { groupPropertyDefinitions } from '#shared/domain/groups.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('groups_property_definitions'), {}, async ({ projectId }) =>
  ok(await groupPropertyDefinitions(projectId)),
);
