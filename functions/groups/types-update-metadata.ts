import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updateGroupTypeNames } from '#shared/domain/groups.ts';
import { groupTypesMetadataBody } from '#shared/schemas/groups.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('groups_types_update_metadata'),
  { body: groupTypesMetadataBody },
  async ({ body, projectId }) => ok(await updateGroupTypeNames(projectId, body)),
);
