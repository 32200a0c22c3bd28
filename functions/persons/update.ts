import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updatePersonProperties } from '#shared/domain/persons.ts';
import { personIdParams, personUpdateBody } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_partial_update'),
  { params: personIdParams, body: personUpdateBody },
  async ({ params, body, caller, projectId, deadline }) =>
    ok(await updatePersonProperties(caller, projectId, params.id, body.properties, deadline)),
);
