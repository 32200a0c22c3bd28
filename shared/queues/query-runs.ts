import { SendMessageCommand, sqs } from '../aws/sqs.ts';
import { ConfigError, requireQueueUrl } from '../config.ts';
import { ServiceUnavailable } from '../errors.ts';

/** A query for the query worker (functions/workers/run-queries.ts): the query itself waits in its status item. */
export interface QueuedQuery {
  project_id: number;
  query_id: string;
  run_id: string;
}

export async function queueQueryRun(message: QueuedQuery): Promise<void> {
  try {
    await sqs().send(
      new SendMessageCommand({ QueueUrl: requireQueueUrl('query_runs'), MessageBody: JSON.stringify(message) }),
    );
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ServiceUnavailable('Could not start the query in the background; please retry.');
  }
}
