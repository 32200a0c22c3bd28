import { apiHandler } from '#shared/http/handler.ts';
import { accepted } from '#shared/http/responses.ts';
import { resetPersonDistinctId } from '#shared/domain/persons.ts';
import { ValidationError } from '#shared/errors.ts';
import { resetDistinctIdBody } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

/** PostHog's words and shape: a non-field error, 202 with no body. */
export const handler = apiHandler(
  route('persons_reset_person_distinct_id'),
  { body: resetDistinctIdBody },
  async ({ body, projectId }) => {
    const distinctId = body.distinct_id;
    if (typeof distinctId !== 'string' || distinctId === '') throw new ValidationError('distinct_id is required', null);
    await resetPersonDistinctId(projectId, distinctId);
    return accepted(undefined);
  },
);
