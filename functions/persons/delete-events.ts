import { apiHandler } from '#shared/http/handler.ts';
import { accepted } from '#shared/http/responses.ts';
import { queuePersonEventsDeletion } from '#shared/domain/persons.ts';
import { queuePersonDeletion } from '#shared/queues/person-deletions.ts';
import { personIdParams } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_delete_events'),
  { params: personIdParams },
  async ({ params, caller, projectId }) => {
    await queuePersonEventsDeletion(caller, projectId, params.id, queuePersonDeletion);
    return accepted(undefined);
  },
);
