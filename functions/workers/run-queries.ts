import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as v from 'valibot';
import { runQueuedQuery } from '#shared/domain/query/index.ts';
import { parseQueuedMessage } from '#shared/json.ts';
import { logger } from '#shared/observability.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/** Time kept back from the invocation for storing the answer or the error. */
const STORE_MARGIN_MS = 30_000;

const queuedQuery = v.object({
  project_id: v.pipe(v.number(), v.integer()),
  query_id: v.pipe(v.string(), v.minLength(1)),
  run_id: v.pipe(v.string(), v.minLength(1)),
});

class MalformedQueuedQuery extends Error {}

/**
 * Queries started in the background (refresh async / force_async, or a blocking query past the API's
 * budget): each runs with the invocation's time as its deadline and ends in its status (answer or
 * error). Its row gives it one message per invocation (a query that exhausts the container fails only
 * itself); a larger batch would run side by side. A message that fails transiently is reported, so
 * SQS retries only it; a malformed one is dropped.
 */
export const handler = workerHandler('run_queries', async (event: SQSEvent, context): Promise<SQSBatchResponse> => {
  const deadline = Date.now() + context.getRemainingTimeInMillis() - STORE_MARGIN_MS;
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  // Side by side: one long query does not hold up the others of its batch.
  await Promise.all(
    event.Records.map(async (record) => {
      try {
        const message = parseQueuedMessage(record.body, queuedQuery, (reason) => new MalformedQueuedQuery(reason));
        await runQueuedQuery(message, deadline, Number(record.attributes?.ApproximateReceiveCount ?? 1));
      } catch (error) {
        if (error instanceof MalformedQueuedQuery) {
          logger.error('malformed queued query dropped', { message_id: record.messageId, reason: error.message });
          return;
        }
        logger.error('queued query failed; SQS retries it', {
          message_id: record.messageId,
          error: (error as Error).message,
        });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }),
  );
  return { batchItemFailures };
});
