import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { storeStagedEvents } from '#shared/domain/capture.ts';
import { logger } from '#shared/observability.ts';
import { unpackCaptureBatch } from '#shared/queues/capture-batches.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/**
 * Events capture staged (SQS, a batch of messages): each message's events are stored unless already
 * stored. A message that fails is reported so SQS retries only it; storing it again doubles nothing.
 */
export const handler = workerHandler('store_capture_batches', async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      const message = unpackCaptureBatch(record.body);
      const counts = await storeStagedEvents(message);
      logger.info('staged capture batch stored', { project_id: message.project_id, ...counts });
    } catch (error) {
      logger.error('staged capture batch failed; SQS retries it', {
        message_id: record.messageId,
        error: (error as Error).message,
      });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
});
