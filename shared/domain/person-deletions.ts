import * as v from 'valibot';
import { deleteEventsOfDistinctId } from '../db/events.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import { inParallel } from '../db/batch.ts';
import { parseQueuedMessage } from '../json.ts';
import { logger, METRIC, metrics, MetricUnit } from '../observability.ts';
import type { DeletionRequest } from '../queues/person-deletions.ts';
import { deletedEventsSettled, hideDeletedEvents } from './lake-hides.ts';

export interface DeletionMessage {
  body: string;
  receiptHandle: string;
  receiveCount: number;
}

export interface DrainDeps {
  receive(): Promise<DeletionMessage[]>;
  acknowledge(receiptHandle: string): Promise<void>;
  /** Puts a failed message back, visible again after `delaySeconds`: its receive count climbs until the queue's redrive moves it to the DLQ. */
  release(receiptHandle: string, delaySeconds: number): Promise<void>;
  /** Milliseconds this invocation has left. */
  timeLeftMs(): number;
  /** Starts another invocation to carry on with the backlog. */
  continueLater(): Promise<void>;
}

export interface DrainSummary {
  processed: number;
  eventsDeleted: number;
  failed: number;
  continued: boolean;
}

const deletionRequest = v.object({
  project_id: v.pipe(v.number(), v.integer(), v.minValue(1)),
  person_id: v.pipe(v.number(), v.integer()),
  distinct_ids: v.array(v.string()),
  requested_at: v.pipe(v.string(), v.isoTimestamp()),
});

/** Leaves room to finish the messages in hand before Lambda's timeout. */
const SAFETY_MARGIN_MS = 60_000;

/**
 * The weekly drain: takes deletion requests until the queue is empty, deletes every event of the
 * person's distinct ids in that project (up to the request time), then deletes the message. A message
 * is removed only after its events are gone, so re-running is harmless; one that cannot be processed
 * (malformed, or failing) is released and reaches the DLQ after the queue's max receives.
 */
export async function drainPersonDeletions(deps: DrainDeps): Promise<DrainSummary> {
  const summary: DrainSummary = { processed: 0, eventsDeleted: 0, failed: 0, continued: false };
  for (;;) {
    if (deps.timeLeftMs() < SAFETY_MARGIN_MS) {
      await deps.continueLater();
      summary.continued = true;
      return recordDrain(summary);
    }
    const messages = await deps.receive();
    if (messages.length === 0) return recordDrain(summary);
    await inParallel(messages, 4, async (m) => {
      try {
        const request = parse(m.body);
        // The lake stops serving the events before they go from the table (lake-hides.ts), then waits for their days' rewrite.
        const hide = await hideDeletedEvents(request.project_id, request.distinct_ids, request.requested_at);
        let deleted = 0;
        const days = new Set<string>();
        for (const distinctId of request.distinct_ids) {
          const out = await deleteEventsOfDistinctId(request.project_id, distinctId, request.requested_at);
          deleted += out.deleted;
          for (const day of out.days) days.add(day);
        }
        await deletedEventsSettled(hide, days);
        // Before the message goes: a failed bump is retried with it. (Counts move later, in the ingest worker, which bumps again.)
        if (deleted > 0) await bumpAnswersGeneration(request.project_id);
        await deps.acknowledge(m.receiptHandle);
        summary.processed += 1;
        summary.eventsDeleted += deleted;
        logger.info('person events deleted', {
          project_id: request.project_id,
          person_id: request.person_id,
          events_deleted: deleted,
        });
      } catch (error) {
        summary.failed += 1;
        // A malformed message will never succeed: straight back, so it reaches the DLQ within this drain.
        // Anything else may be transient: back off, so an outage does not burn its receives in seconds.
        const delay = error instanceof MalformedRequest ? 0 : Math.min(900, 30 * 2 ** (m.receiveCount - 1));
        logger.error('person deletion failed; message released', {
          receive_count: m.receiveCount,
          retry_in_s: delay,
          error: (error as Error).message,
        });
        await deps.release(m.receiptHandle, delay);
      }
    });
  }
}

/** PersonEventsDeleted (this invocation's) and DrainCompleted: 1 when the queue was emptied, 0 when handed to a continuation. */
function recordDrain(summary: DrainSummary): DrainSummary {
  metrics.addMetric(METRIC.personEventsDeleted, MetricUnit.Count, summary.eventsDeleted);
  metrics.addMetric(METRIC.drainCompleted, MetricUnit.Count, summary.continued ? 0 : 1);
  return summary;
}

class MalformedRequest extends Error {}

function parse(body: string): Pick<DeletionRequest, 'project_id' | 'person_id' | 'distinct_ids' | 'requested_at'> {
  return parseQueuedMessage(
    body,
    deletionRequest,
    (reason) => new MalformedRequest(`malformed deletion request: ${reason}`),
  );
}
