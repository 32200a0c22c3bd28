import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { findPerson, personResponse } from '#shared/domain/persons.ts';
import { personIdParams } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_retrieve'),
  { params: personIdParams },
  async ({ params, projectId }) => ok(personResponse(await findPerson(projectId, params.id))),
);
