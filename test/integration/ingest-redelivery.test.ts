import { randomUUID } from 'node:crypto';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { eventItem, type StoredEvent } from '#shared/db/events.ts';
import { getPerson, listPersonChanges, personIdOf } from '#shared/db/persons.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { handler } from '#functions/workers/ingest-events.ts';
import { lambdaContext } from '../../infra/local/lambda-context.ts';

// A project id no organization uses: these records never come from the table, so only this test's
// handler calls touch its rollups (the run's stream poller never sees them).
const PROJECT = 900_000 + Math.floor(Math.random() * 99_999);
let sequence = 0;

function event(name: string, timestamp: string, extra: Partial<StoredEvent> = {}): StoredEvent {
  return {
    uuid: randomUUID(),
    event: name,
    distinct_id: 'r1',
    project_id: PROJECT,
    properties: {},
    timestamp,
    inserted_at: timestamp,
    ...extra,
  };
}

function record(kind: 'INSERT' | 'MODIFY' | 'REMOVE', before?: StoredEvent, after?: StoredEvent): DynamoDBRecord {
  const item = (after ?? before)!;
  const image = (e?: StoredEvent) =>
    e ? (marshall(eventItem(e), { removeUndefinedValues: true }) as never) : undefined;
  sequence += 1;
  return {
    eventID: String(sequence),
    eventName: kind,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      Keys: marshall({ pk: `EVENT#${PROJECT}#${item.uuid}`, sk: 'EVENT' }) as never,
      NewImage: kind === 'REMOVE' ? undefined : image(after),
      OldImage: image(before),
      SequenceNumber: String(1_000_000 + sequence),
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

const deliver = (records: DynamoDBRecord[]) =>
  handler({ Records: records } as DynamoDBStreamEvent, lambdaContext('ingest_events'));
const hourly = (name: string | null) => readRollups(PROJECT, name, '2024-01-01T00', '2024-01-02T23');

describe('ingest worker redelivery', () => {
  it('counts a batch delivered twice once, and follows rewrites and removals exactly', async () => {
    const a = event('click', '2024-01-01T10:05:00.000Z', { properties: { $set: { plan: 'pro' } } });
    const b = event('click', '2024-01-01T10:40:00.000Z');
    const c = event('view', '2024-01-01T11:00:00.000Z');
    const batch = [record('INSERT', undefined, a), record('INSERT', undefined, b), record('INSERT', undefined, c)];

    expect(await deliver(batch)).toEqual({ batchItemFailures: [] });
    expect(await deliver(batch)).toEqual({ batchItemFailures: [] });
    expect(await hourly('click')).toEqual(new Map([['2024-01-01T10', 2]]));
    expect(await hourly(null)).toEqual(
      new Map([
        ['2024-01-01T10', 2],
        ['2024-01-01T11', 1],
      ]),
    );
    const personId = (await personIdOf(PROJECT, 'r1'))!;
    expect((await getPerson(PROJECT, personId))!.properties).toEqual({ plan: 'pro' });
    expect(await listPersonChanges(PROJECT, personId)).toHaveLength(1);

    // A resend that raced the first write rewrites the item with another time: the count moves, once.
    const bMoved = { ...b, timestamp: '2024-01-02T09:00:00.000Z' };
    const removal = record('REMOVE', c);
    const second = [record('MODIFY', b, bMoved), removal];
    await deliver(second);
    await deliver(second);
    expect(await hourly('click')).toEqual(
      new Map([
        ['2024-01-01T10', 1],
        ['2024-01-02T09', 1],
      ]),
    );
    expect(await hourly('view')).toEqual(new Map());
    expect(await hourly(null)).toEqual(
      new Map([
        ['2024-01-01T10', 1],
        ['2024-01-02T09', 1],
      ]),
    );
  });

  it('ignores stream records of other items', async () => {
    const other: DynamoDBRecord = {
      eventName: 'INSERT',
      dynamodb: { Keys: marshall({ pk: 'ORG#x', sk: 'ORG' }) as never, SequenceNumber: '1' },
    };
    expect(await deliver([other])).toEqual({ batchItemFailures: [] });
  });
});
