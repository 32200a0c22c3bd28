import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { runAs } from '../invocation.ts';
import { logger, metrics, tracedHandler } from '../observability.ts';
import { preloadLibraries } from '../preload.ts';

/**
 * The factory for non-HTTP functions (stream and schedule workers): the trace segment annotated with
 * the worker's name, logger context, metrics (the work records them, `logMetrics` flushes them once per invocation, also when it fails), then the work.
 * The whole invocation runs as a `worker` (shared/invocation.ts): its table calls get the workers'
 * longer timeouts and more attempts, also in the local runtime where API requests share the process.
 */
export function workerHandler<E, R>(
  name: string,
  fn: (event: E, context: Context) => Promise<R>,
): (event: E, context: Context) => Promise<R> {
  const handler = middy<E, R, Error, Context>()
    .use(tracedHandler(name))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use({
      before: async () => {
        logger.appendKeys({ worker: name });
        // Libraries the work loads lazily (shared/preload.ts: re2js for stored filters' regexes).
        await preloadLibraries();
      },
      onError: (request) => {
        logger.error('worker failed', {
          error: { name: request.error?.name, message: request.error?.message, stack: request.error?.stack },
        });
      },
    })
    .handler(fn);
  return (event, context) => runAs('worker', () => handler(event, context));
}

/**
 * A queue worker's batch, one record after another: a record whose work throws is logged and reported
 * as failed, so SQS retries only it (and moves it to its DLQ after the queue's receives).
 */
export async function eachRecord(
  event: SQSEvent,
  what: string,
  work: (record: SQSRecord) => Promise<void>,
): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      await work(record);
    } catch (error) {
      logger.error(`${what} failed; SQS retries it`, { message_id: record.messageId, error: (error as Error).message });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
}
