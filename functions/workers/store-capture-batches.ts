import type { SQSEvent } from 'aws-lambda';
import { storeStagedEvents } from '#shared/domain/capture.ts';
import { logger } from '#shared/observability.ts';
import { unpackCaptureBatch } from '#shared/queues/capture-batches.ts';
import { eachRecord, workerHandler } from '#shared/workers/handler.ts';

/**
 * Events capture staged (SQS, a batch of messages): each message's events are stored unless already
 * stored. A message that fails is reported so SQS retries only it; storing it again doubles nothing.
 */
export const handler = workerHandler('store_capture_batches', (event: SQSEvent) =>
  eachRecord(event, 'staged capture batch', async (record) => {
    const message = unpackCaptureBatch(record.body);
    const counts = await storeStagedEvents(message);
    logger.info('staged capture batch stored', { project_id: message.project_id, ...counts });
  }),
);
