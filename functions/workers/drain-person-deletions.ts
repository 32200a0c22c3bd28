import type { ScheduledEvent, SQSEvent } from 'aws-lambda';
import { drainPersonDeletions } from '#shared/domain/person-deletions.ts';
import { requestContinuation } from '#shared/queues/continuations.ts';
import { acknowledgeDeletion, receiveDeletions, releaseDeletion } from '#shared/queues/person-deletions.ts';
import { logger } from '#shared/observability.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/** Sundays 05:00 UTC (EventBridge), or a continuation note from its previous run (SQS): drain the deletion queue. */
export const handler = workerHandler('drain_person_deletions', async (_event: ScheduledEvent | SQSEvent, context) => {
  const summary = await drainPersonDeletions({
    receive: () => receiveDeletions(10, 1),
    acknowledge: acknowledgeDeletion,
    release: releaseDeletion,
    timeLeftMs: () => context.getRemainingTimeInMillis(),
    continueLater: () => requestContinuation('drain_person_deletions'),
  });
  logger.info('drain finished', { ...summary });
  return summary;
});
