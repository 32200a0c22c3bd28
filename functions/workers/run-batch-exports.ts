import type { ScheduledEvent } from 'aws-lambda';
import { now } from '#shared/clock.ts';
import { runScheduler } from '#shared/domain/export-runs.ts';
import { putObject, type S3Destination } from '#shared/exports/s3.ts';
import { logger } from '#shared/observability.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/** Every 5 minutes: create runs for closed windows and execute due runs (new, retried, backfilled). */
export const handler = workerHandler('run_batch_exports', async (_event: ScheduledEvent, context) => {
  const summary = await runScheduler(
    now(),
    (config, key, body, contentType) => putObject(config as unknown as S3Destination, key, body, contentType),
    () => context.getRemainingTimeInMillis(),
  );
  logger.info('batch export tick', { ...summary });
  return summary;
});
