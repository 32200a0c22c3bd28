import type { SQSEvent } from 'aws-lambda';
import { deleteQueuedPersons, parseQueuedBulkDelete } from '#shared/domain/persons.ts';
import { queueBulkDelete } from '#shared/queues/person-bulk-deletes.ts';
import { queuePersonDeletion } from '#shared/queues/person-deletions.ts';
import { logger } from '#shared/observability.ts';
import { eachRecord, workerHandler } from '#shared/workers/handler.ts';

/** Time kept back from the invocation for the group in progress and re-queuing the rest. */
const REQUEUE_MARGIN_MS = 30_000;

/**
 * Persons a bulk delete queued (SQS, a batch of messages): each message is deleted in turn until the
 * invocation's time is nearly up, what is left re-queued; a message that fails is reported so SQS
 * retries only it (the persons it already deleted are skipped then), and reaches the DLQ after its receives.
 */
export const handler = workerHandler('delete_queued_persons', (event: SQSEvent, context) => {
  const stopAt = Date.now() + context.getRemainingTimeInMillis() - REQUEUE_MARGIN_MS;
  return eachRecord(event, 'queued bulk delete', async (record) => {
    const message = parseQueuedBulkDelete(record.body);
    const summary = await deleteQueuedPersons(
      message,
      { deletion: queuePersonDeletion, rest: queueBulkDelete },
      stopAt,
    );
    logger.info('queued persons deleted', { project_id: message.project_id, ...summary });
  });
});
