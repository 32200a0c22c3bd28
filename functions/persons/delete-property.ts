import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { deletePersonProperty } from '#shared/domain/persons.ts';
import { ValidationError } from '#shared/errors.ts';
import { deletePropertyBody, deletePropertyQuery, personIdParams } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

/** The key comes as the `$unset` query parameter (the spec) or body field (PostHog's clients). */
export const handler = apiHandler(
  route('persons_delete_property'),
  { params: personIdParams, query: deletePropertyQuery, body: deletePropertyBody },
  async ({ params, query, body, caller, projectId, deadline }) => {
    const key = query.$unset ?? body.$unset;
    if (key === undefined) throw new ValidationError('This field is required.', '$unset', 'required');
    return ok(await deletePersonProperty(caller, projectId, params.id, key, deadline));
  },
);
