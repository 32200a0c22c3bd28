import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { getOrganization } from '#shared/domain/organizations.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(route('organizations_retrieve'), {}, async ({ membership }) =>
  ok(await getOrganization(membership)),
);
