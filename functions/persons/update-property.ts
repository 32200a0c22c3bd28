import { apiHandler } from '#shared/http/handler.ts';
import { accepted } from '#shared/http/responses.ts';
import { setPersonProperty } from '#shared/domain/persons.ts';
import { ValidationError } from '#shared/errors.ts';
import { personIdParams, updatePropertyBody } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

/** PostHog checks `value` first, then `key`, and answers 202 with no body. */
export const handler = apiHandler(
  route('persons_update_property'),
  { params: personIdParams, body: updatePropertyBody },
  async ({ params, body, caller, projectId, deadline }) => {
    if (body.value === undefined) throw new ValidationError('This field is required.', 'value', 'required');
    if (body.key === undefined || body.key === null)
      throw new ValidationError('This field is required.', 'key', 'required');
    await setPersonProperty(caller, projectId, params.id, body.key, body.value, deadline);
    return accepted(undefined);
  },
);
