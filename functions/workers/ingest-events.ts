import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { eventChanges } from '#shared/db/stream.ts';
import { ingestEventChanges } from '#shared/domain/ingest.ts';
import { workerHandler } from '#shared/workers/handler.ts';

/** Table stream -> persons and hourly rollups. Failed records are reported per record (ReportBatchItemFailures). */
export const handler = workerHandler(
  'ingest_events',
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const failed = await ingestEventChanges(eventChanges(event.Records));
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  },
);
