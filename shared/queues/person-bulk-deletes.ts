import { SendMessageCommand, sqs } from '../aws/sqs.ts';
import { ConfigError, requireQueueUrl } from '../config.ts';
import { ServiceUnavailable } from '../errors.ts';

/** Persons a bulk delete left for its worker: one project's, by person id, with who asked (for the activity log). */
export interface QueuedBulkDelete {
  project_id: number;
  requested_by: { first_name: string; email: string };
  delete_events: boolean;
  person_ids: number[];
}

/** Queues persons a bulk delete did not reach for the bulk-delete worker (functions/workers/delete-queued-persons.ts). */
export async function queueBulkDelete(message: QueuedBulkDelete): Promise<void> {
  try {
    await sqs().send(
      new SendMessageCommand({
        QueueUrl: requireQueueUrl('person_bulk_deletes'),
        MessageBody: JSON.stringify(message),
      }),
    );
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ServiceUnavailable(
      `Could not queue ${message.person_ids.length} of the persons for deletion; they are not deleted yet, please retry.`,
    );
  }
}
