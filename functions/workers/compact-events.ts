import type { ScheduledEvent } from 'aws-lambda';
import { now } from '#shared/clock.ts';
import { compactDueDays } from '#shared/domain/event-segments.ts';
import { logger } from '#shared/observability.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/** Every 5 minutes: packs the changed days' events into segments (what trends read instead of one item per event). */
export const handler = workerHandler('compact_events', async (_event: ScheduledEvent, context) => {
  const { compacted, left } = await compactDueDays(now(), () => context.getRemainingTimeInMillis());
  const summary = {
    days: compacted.length,
    events: compacted.reduce((n, c) => n + c.events, 0),
    incomplete: compacted.filter((c) => !c.complete).length,
    lakeFailures: compacted.filter((c) => c.lake === false).length,
    left,
  };
  logger.info('compaction tick', summary);
  return summary;
});
