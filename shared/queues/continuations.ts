import { SendMessageCommand, sqs } from '../aws/sqs.ts';
import { requireQueueUrl } from '../config.ts';

/** Leaves a note on the continuation queue; the queue triggers the same function, which carries on. */
export async function requestContinuation(worker: string): Promise<void> {
  await sqs().send(
    new SendMessageCommand({
      QueueUrl: requireQueueUrl('drain_continuations'),
      MessageBody: JSON.stringify({ worker, at: new Date().toISOString() }),
    }),
  );
}
