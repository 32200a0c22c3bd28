import { apiHandler } from '#shared/http/handler.ts';
import { noContent } from '#shared/http/responses.ts';
import { deleteOrganization } from '#shared/domain/organizations.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('organizations_destroy'), {}, async ({ membership }) => {
  await deleteOrganization(membership);
  return noContent();
});
