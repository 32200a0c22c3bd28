import { randomBytes } from 'node:crypto';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  type BatchWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { normalizeEvents } from '#shared/capture/decode.ts';
import type { StoredEvent } from '#shared/db/events.ts';
import { keys } from '#shared/db/keys.ts';
import { captureEvents, INLINE_EVENT_LIMIT } from '#shared/domain/capture.ts';
import {
  forgetTokenLookups,
  projectOfToken,
  TOKEN_FOUND_TTL_MS,
  TOKEN_UNKNOWN_TTL_MS,
} from '#shared/domain/project-tokens.ts';
import { MAX_CAPTURE_MESSAGE_BYTES, packCaptureBatches, unpackCaptureBatch } from '#shared/queues/capture-batches.ts';

const TOKEN = 'phc_unit_staging';

// The unit environment names no queues; nothing listens there (every send below is faked).
vi.hoisted(() => {
  process.env.CAPTURE_BATCH_QUEUE_URL = 'http://127.0.0.1:9/queue/capture-batches';
});

function storedEvent(i: number, properties: Record<string, unknown> = { n: i }): StoredEvent {
  return {
    uuid: `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`,
    event: 'e',
    distinct_id: `d${i % 7}`,
    project_id: 7,
    properties,
    timestamp: '2024-05-01T10:00:00.000Z',
    inserted_at: '2024-05-01T10:00:01.000Z',
  };
}

function batchBody(count: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      api_key: TOKEN,
      batch: Array.from({ length: count }, (_, i) => ({
        event: 'e',
        distinct_id: `d${i % 7}`,
        timestamp: '2024-05-01T10:00:00.000Z',
      })),
    }),
  );
}

/** The table's and the queue's clients, mocked (aws-sdk-client-mock). */
const table = mockClient(DynamoDBDocumentClient);
const queue = mockClient(SQSClient);

/**
 * The table and queue answer: the token names project 7; BatchWriteItem calls after `fastWrites` never
 * answer, or fail when `fail` is set.
 */
function fakeAws(fastWrites: number, fail = false) {
  let writes = 0;
  const written: string[] = [];
  const sent: string[] = [];
  table.resolves({});
  table.on(GetCommand).resolves({ Item: { project_id: 7, organization_id: 'o' } });
  table.on(BatchGetCommand).resolves({ Responses: {} });
  table.on(BatchWriteCommand).callsFake(async (input: BatchWriteCommandInput) => {
    writes += 1;
    if (writes > fastWrites) {
      if (fail) throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
      return new Promise(() => undefined);
    }
    for (const r of Object.values(input.RequestItems!)[0]!) written.push(String(r.PutRequest!.Item!.uuid));
    return {};
  });
  queue.on(SendMessageCommand).callsFake(async (input: { MessageBody?: string }) => {
    sent.push(input.MessageBody!);
    return {};
  });
  return { written, sent };
}

const queuedUuids = (sent: string[]) => sent.flatMap((m) => unpackCaptureBatch(m).events.map((e) => e.uuid));

describe('capture: staging and deadlines', () => {
  beforeEach(() => forgetTokenLookups());
  afterEach(() => {
    vi.restoreAllMocks();
    table.reset();
    queue.reset();
  });

  it('stages a batch over the inline limit without writing it, and answers with the count queued', async () => {
    const { written, sent } = fakeAws(Infinity);
    const count = INLINE_EVENT_LIMIT + 1;
    const result = await captureEvents({ body: batchBody(count), query: {}, deadline: Date.now() + 8_000 });
    expect(result).toMatchObject({ status: 1, accepted: 0, deduplicated: 0, rejected: 0, queued: count });
    expect(written).toEqual([]);
    expect(new Set(queuedUuids(sent)).size).toBe(count);
  });

  it('stops storing when the deadline nears and stages the rest, so a slow table is a 200 and not a 5xx', async () => {
    // Four BatchWriteItem calls (one step of 100 events) answer; the second step hangs past the deadline.
    const { written, sent } = fakeAws(4);
    const result = await captureEvents({ body: batchBody(250), query: {}, deadline: Date.now() + 1_800 });
    expect(result).toMatchObject({ status: 1, accepted: 100, queued: 150 });
    expect(written).toHaveLength(100);
    const queued = queuedUuids(sent);
    expect(queued).toHaveLength(150);
    expect(queued.filter((u) => written.includes(u))).toEqual([]);
  });

  it('stages the rest when a write fails after earlier steps were stored, rather than answering 503', async () => {
    const { written, sent } = fakeAws(4, true);
    const result = await captureEvents({ body: batchBody(250), query: {}, deadline: Date.now() + 8_000 });
    expect(result).toMatchObject({ status: 1, accepted: 100, queued: 150 });
    expect(written).toHaveLength(100);
    expect(queuedUuids(sent)).toHaveLength(150);
  });
});

describe('capture: a request out of time', () => {
  beforeEach(() => forgetTokenLookups());
  afterEach(() => {
    vi.restoreAllMocks();
    table.reset();
    queue.reset();
  });

  it('answers 503 and stores and stages nothing when validating took past the deadline', async () => {
    const { written, sent } = fakeAws(Infinity);
    await expect(
      captureEvents({ body: batchBody(INLINE_EVENT_LIMIT + 1), query: {}, deadline: Date.now() - 1 }),
    ).rejects.toMatchObject({ status: 503 });
    expect([written, sent]).toEqual([[], []]);
  });
});

describe('capture: uuids of events sent without one', () => {
  const opts = { now: new Date('2024-05-01T10:00:05Z'), newUuid: () => 'random' };
  const event = { event: 'e', distinct_id: 'd', timestamp: '2024-05-01T10:00:00Z' };

  it('derives the same uuid from the same request and position, and different ones for identical events', () => {
    const first = normalizeEvents([event, event], { ...opts, retryKey: 'k' }).accepted.map((e) => e.uuid);
    const again = normalizeEvents([event, event], { ...opts, retryKey: 'k' }).accepted.map((e) => e.uuid);
    expect(first).toEqual(again);
    expect(first[0]).not.toBe(first[1]);
    expect(first[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const other = normalizeEvents([event], { ...opts, retryKey: 'other body' }).accepted[0]!.uuid;
    expect(other).not.toBe(first[0]);
  });

  it('keeps a random uuid for an event with no client time (its time is its arrival), and the client uuid when sent', () => {
    expect(normalizeEvents([{ event: 'e', distinct_id: 'd' }], { ...opts, retryKey: 'k' }).accepted[0]!.uuid).toBe(
      'random',
    );
    const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    expect(normalizeEvents([{ ...event, uuid }], { ...opts, retryKey: 'k' }).accepted[0]!.uuid).toBe(uuid);
  });
});

describe('capture batch messages', () => {
  it('packs events into messages under the size limit and unpacks them unchanged', () => {
    const events = Array.from({ length: 3_000 }, (_, i) => storedEvent(i, { n: i, text: `${i}`.repeat(60) }));
    const { messages, alone } = packCaptureBatches(7, events);
    expect(alone).toEqual([]);
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages) expect(m.length).toBeLessThanOrEqual(MAX_CAPTURE_MESSAGE_BYTES);
    expect(messages.flatMap((m) => unpackCaptureBatch(m).events)).toEqual(events);
  });

  it('leaves an event too large for any message to the caller', () => {
    const random = randomBytes(300_000).toString('base64');
    const events = [storedEvent(1), storedEvent(2, { blob: random }), storedEvent(3)];
    const { messages, alone } = packCaptureBatches(7, events);
    expect(alone.map((e) => e.uuid)).toEqual([events[1]!.uuid]);
    expect(messages.flatMap((m) => unpackCaptureBatch(m).events.map((e) => e.uuid))).toEqual([
      events[0]!.uuid,
      events[2]!.uuid,
    ]);
  });
});

describe('project token lookups', () => {
  beforeEach(() => forgetTokenLookups());
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
    table.reset();
  });

  it('reads an unknown token once per container per TTL, however often and however concurrently it is sent', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    table.resolves({ Item: undefined });
    const results = await Promise.all(Array.from({ length: 50 }, () => projectOfToken('phc_unknown')));
    for (let i = 0; i < 50; i += 1) results.push(await projectOfToken('phc_unknown'));
    expect(results.every((r) => r === undefined)).toBe(true);
    expect(table.calls()).toHaveLength(1);
    const command = table.call(0).args[0] as GetCommand;
    expect(command.input).toMatchObject({ Key: keys.projectToken('phc_unknown'), ConsistentRead: true });
    vi.advanceTimersByTime(TOKEN_UNKNOWN_TTL_MS + 1);
    await projectOfToken('phc_unknown');
    expect(table.calls()).toHaveLength(2);
  });

  it('remembers a found project for its own TTL, and forgets a failed read at once', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    table.rejectsOnce(new Error('table down')).resolves({ Item: { project_id: 3, organization_id: 'o' } });
    await expect(projectOfToken('phc_known')).rejects.toThrow();
    expect(await projectOfToken('phc_known')).toEqual({ project_id: 3, organization_id: 'o' });
    vi.advanceTimersByTime(TOKEN_FOUND_TTL_MS - 1);
    await projectOfToken('phc_known');
    expect(table.calls()).toHaveLength(2);
    vi.advanceTimersByTime(2);
    await projectOfToken('phc_known');
    expect(table.calls()).toHaveLength(3);
  });
});
