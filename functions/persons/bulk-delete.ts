import { apiHandler } from '#shared/http/handler.ts';
import { accepted } from '#shared/http/responses.ts';
import { bulkDeletePersons } from '#shared/domain/persons.ts';
import { queueBulkDelete } from '#shared/queues/person-bulk-deletes.ts';
import { queuePersonDeletion } from '#shared/queues/person-deletions.ts';
import { bulkDeleteBody } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_bulk_delete'),
  { body: bulkDeleteBody },
  async ({ body, caller, projectId, deadline }) =>
    accepted(
      await bulkDeletePersons(
        caller,
        projectId,
        body,
        { deletion: queuePersonDeletion, rest: queueBulkDelete },
        deadline,
      ),
    ),
);
