import type { SQSEvent } from 'aws-lambda';
import { calculateCohortStep } from '#shared/domain/cohort-calculation.ts';
import { parseQueuedCalculation } from '#shared/domain/cohorts.ts';
import { queueCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { logger } from '#shared/observability.ts';
import { eachRecord, workerHandler } from '#shared/workers/handler.ts';

/** Time kept back from the invocation for the page in progress and queuing the continuation. */
const CONTINUE_MARGIN_MS = 60_000;

/**
 * Cohort recalculations (SQS, one message per invocation): pages of persons until the invocation's
 * time is nearly up, progress saved on the cohort after each, then the rest queued as a new message.
 */
export const handler = workerHandler('calculate_cohorts', (event: SQSEvent, context) => {
  const stopAt = Date.now() + context.getRemainingTimeInMillis() - CONTINUE_MARGIN_MS;
  return eachRecord(event, 'cohort calculation', async (record) => {
    const message = parseQueuedCalculation(record.body);
    const step = await calculateCohortStep(message, queueCohortCalculation, stopAt);
    logger.info('cohort calculation step', { project_id: message.project_id, cohort_id: message.cohort_id, ...step });
  });
});
