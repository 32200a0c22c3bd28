import { apiHandler } from '#shared/http/handler.ts';
import { noContent } from '#shared/http/responses.ts';
import { deletePerson } from '#shared/domain/persons.ts';
import { queuePersonDeletion } from '#shared/queues/person-deletions.ts';
import { personDeleteQuery, personIdParams } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_destroy'),
  { params: personIdParams, query: personDeleteQuery },
  async ({ params, query, caller, projectId }) => {
    await deletePerson(caller, projectId, params.id, query.delete_events, queuePersonDeletion);
    return noContent();
  },
);
