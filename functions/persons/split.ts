import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { splitPerson } from '#shared/domain/persons.ts';
import { personIdParams, splitBody } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_split'),
  { params: personIdParams, body: splitBody },
  async ({ params, body, caller, projectId }) =>
    ok(await splitPerson(caller, projectId, params.id, body.main_distinct_id)),
);
