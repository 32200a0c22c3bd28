import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updateOrganization } from '#shared/domain/organizations.ts';
import { updateOrganizationBody } from '#shared/schemas/organizations.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('organizations_partial_update'),
  { body: updateOrganizationBody },
  async ({ body, membership }) => ok(await updateOrganization(membership, body)),
);
