import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { personPropertyValues } from '#shared/domain/persons.ts';
import { propertyValuesQuery } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_values'),
  { query: propertyValuesQuery },
  async ({ query, projectId, deadline }) => ok(await personPropertyValues(projectId, query, deadline)),
);
