import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { storedEvent, type StoredEvent } from './events.ts';
import { keys } from './keys.ts';

/**
 * Which stream records the ingest worker wants: raw event items only. CDK turns this into the event
 * source mapping's filter (so Lambda is not even invoked for other items); the local poller applies it as is.
 */
export const RAW_EVENT_RECORD_FILTER = { pkPrefix: keys.eventPkPrefix, sk: 'EVENT' } as const;

export function isRawEventRecord(record: DynamoDBRecord): boolean {
  const k = record.dynamodb?.Keys;
  return Boolean(k?.pk?.S?.startsWith(RAW_EVENT_RECORD_FILTER.pkPrefix) && k?.sk?.S === RAW_EVENT_RECORD_FILTER.sk);
}

/** One raw event's change as the stream saw it: a new event, a rewrite, or a deletion. */
export interface EventChange {
  /** The record's sequence number: what Lambda wants back in batchItemFailures. */
  id: string;
  before?: StoredEvent;
  after?: StoredEvent;
}

function image(value: Record<string, AttributeValue> | undefined): StoredEvent | undefined {
  if (!value) return undefined;
  return storedEvent(unmarshall(value as never) as Record<string, unknown>);
}

/**
 * The changes of a batch's raw event records. A record with no image at all changes nothing and is
 * dropped: DynamoDB Local streams a keys-only REMOVE for each of several BatchWriteItem deletes racing on
 * one item (two drains deleting the same event), which DynamoDB itself never does.
 */
export function eventChanges(records: DynamoDBRecord[]): EventChange[] {
  return records.filter(isRawEventRecord).flatMap((r) => {
    const before = image(r.dynamodb!.OldImage);
    const after = r.eventName === 'REMOVE' ? undefined : image(r.dynamodb!.NewImage);
    return before || after ? [{ id: r.dynamodb!.SequenceNumber!, before, after }] : [];
  });
}
