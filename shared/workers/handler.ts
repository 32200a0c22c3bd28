import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { logger } from '../observability.ts';

/** The factory for non-HTTP functions (stream and schedule workers): logger context, then the work. */
export function workerHandler<E, R>(name: string, fn: (event: E, context: Context) => Promise<R>) {
  return middy<E, R, Error, Context>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
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
