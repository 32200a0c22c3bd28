import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Context } from 'aws-lambda';
import { logger, metrics } from '../observability.ts';

/**
 * The factory for non-HTTP functions (stream and schedule workers): logger context, metrics (the
 * work records them, `logMetrics` flushes them once per invocation, also when it fails), then the work.
 */
export function workerHandler<E, R>(name: string, fn: (event: E, context: Context) => Promise<R>) {
  return middy<E, R, Error, Context>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use({
      before: () => {
        logger.appendKeys({ worker: name });
      },
      onError: (request) => {
        logger.error('worker failed', { error: { name: request.error?.name, message: request.error?.message, stack: request.error?.stack } });
      },
    })
    .handler(fn);
}
