import { recalculateDueCohorts } from '#shared/domain/cohorts.ts';
import { queueCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { logger } from '#shared/observability.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/** Hourly: behavioural cohorts 24 h after their last calculation, and calculations that lost their message. */
export const handler = workerHandler('schedule_cohort_recalculations', async () => {
  const started = await recalculateDueCohorts(queueCohortCalculation);
  logger.info('cohort recalculations started', { started });
});
