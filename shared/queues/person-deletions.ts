import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  sqs,
} from '../aws/sqs.ts';
import { ConfigError, requireQueueUrl } from '../config.ts';
import { ServiceUnavailable } from '../errors.ts';

/** The message: a deleted person whose events the weekly drain deletes (shared/domain/person-deletions.ts reads it). */
export interface DeletionRequest {
  project_id: number;
  person_id: number;
  person_uuid: string;
  distinct_ids: string[];
  requested_at: string;
  requested_by: string;
}

const queueUrl = () => requireQueueUrl('person_deletions');

/** Queues the deletion of a person's events; it waits there for the weekly drain (Sunday 05:00 UTC). */
export async function queuePersonDeletion(request: DeletionRequest): Promise<void> {
  try {
    await sqs().send(new SendMessageCommand({ QueueUrl: queueUrl(), MessageBody: JSON.stringify(request) }));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ServiceUnavailable('Could not queue the deletion of the events, nothing was deleted; please retry.');
  }
}

export interface ReceivedDeletion {
  body: string;
  receiptHandle: string;
  receiveCount: number;
}

export async function receiveDeletions(max = 10, waitSeconds = 1): Promise<ReceivedDeletion[]> {
  const out = await sqs().send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl(),
      MaxNumberOfMessages: max,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return (out.Messages ?? []).map((m) => ({
    body: m.Body ?? '',
    receiptHandle: m.ReceiptHandle!,
    receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
  }));
}

export async function acknowledgeDeletion(receiptHandle: string): Promise<void> {
  await sqs().send(new DeleteMessageCommand({ QueueUrl: queueUrl(), ReceiptHandle: receiptHandle }));
}

/** Makes a failed message visible again after `delaySeconds` (its receive count counts towards the DLQ). */
export async function releaseDeletion(receiptHandle: string, delaySeconds: number): Promise<void> {
  await sqs().send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: queueUrl(),
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: delaySeconds,
    }),
  );
}
