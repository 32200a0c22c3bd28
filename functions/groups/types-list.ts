import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { listGroupTypes } from '#shared/domain/groups.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('groups_types_list'), {}, async ({ projectId }) =>
  ok(await listGroupTypes(projectId)),
);
