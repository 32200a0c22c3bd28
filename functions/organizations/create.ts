import { apiHandler } from '#shared/http/handler.ts';
import { created } from '#shared/http/responses.ts';
import { createOrganization } from '#shared/domain/organizations.ts';
import { createOrganizationBody } from '#shared/schemas/organizations.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('organizations_create'),
  { body: createOrganizationBody },
  async ({ body, caller }) => created(await createOrganization(caller, body)),
);
