import { gunzipSync, gzipSync } from 'node:zlib';
import { QueryCommand } from '../aws/dynamodb.ts';
import { batchDelete, batchGet, batchPut, inParallel } from './batch.ts';
import { call, db, tableName } from './client.ts';
import { keys } from './keys.ts';
import { queryItems } from './query.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

/** An event as stored: what capture accepted plus when it was ingested (batch exports window on it). */
export interface StoredEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  project_id: number;
  properties: Record<string, unknown>;
  /** Event time (client time corrected for skew), ISO UTC. */
  timestamp: string;
  /** Ingestion time, ISO UTC. */
  inserted_at: string;
}

/** DynamoDB items stop at 400 KB; bigger property blobs are gzipped, and what is still too big is refused. */
const INLINE_LIMIT = 64 * 1024;
const STORED_LIMIT = 380 * 1024;

/**
 * An event whose JSON is at most this many bytes always fits: its properties are smaller still, and
 * gzip adds at most a few hundred bytes to what it cannot compress. Capture encodes only larger ones early.
 */
export const ALWAYS_STORABLE_BYTES = STORED_LIMIT - 4 * 1024;

export class EventTooLarge extends Error {
  override name = 'EventTooLarge';
}

/** The eventsByDay shard of an event: the last byte of its uuid. */
export function shardOf(uuid: string): number {
  return parseInt(uuid.slice(-2), 16) % TABLE_SCHEMA.eventDayShards;
}

export function eventItem(e: StoredEvent): Record<string, unknown> {
  const json = JSON.stringify(e.properties);
  const encoded: Record<string, unknown> =
    Buffer.byteLength(json) <= INLINE_LIMIT ? { properties: json } : { properties_gz: gzipSync(json) };
  const size =
    typeof encoded.properties === 'string'
      ? Buffer.byteLength(encoded.properties)
      : (encoded.properties_gz as Buffer).length;
  if (size > STORED_LIMIT)
    throw new EventTooLarge(`event ${e.uuid} is too large to store (${size} bytes of properties after compression)`);
  return {
    ...keys.event(e.project_id, e.uuid),
    ...keys.eventsByDay(e.project_id, e.timestamp.slice(0, 10), shardOf(e.uuid)),
    day_sk: keys.eventsByDaySk(e.event, e.timestamp, e.uuid),
    ...keys.eventsOfDistinctId(e.project_id, e.distinct_id),
    ...keys.eventsByInsertedHour(e.project_id, e.inserted_at.slice(0, 13), shardOf(e.uuid)),
    ins_sk: `${e.inserted_at}#${e.uuid}`,
    did_sk: `${e.timestamp}#${e.uuid}`,
    entity: 'Event',
    uuid: e.uuid,
    event: e.event,
    distinct_id: e.distinct_id,
    project_id: e.project_id,
    timestamp: e.timestamp,
    inserted_at: e.inserted_at,
    ...encoded,
  };
}

declare const encodedEvent: unique symbol;
/** An event checked and encoded for the table (opaque above shared/db): encodeEvent() refuses one too large before anything is written. */
export type EncodedEvent = { readonly [encodedEvent]: true };

/** Encodes an event for storeEvents; throws EventTooLarge when it cannot be stored. */
export function encodeEvent(e: StoredEvent): EncodedEvent {
  return eventItem(e) as unknown as EncodedEvent;
}

export function storedEvent(item: Record<string, unknown>): StoredEvent {
  // Lambda delivers stream binaries base64-encoded; the SDK hands them over as bytes.
  const gz = item.properties_gz;
  const raw = gz
    ? gunzipSync(typeof gz === 'string' ? Buffer.from(gz, 'base64') : (gz as Uint8Array)).toString('utf8')
    : String(item.properties ?? '{}');
  return {
    uuid: String(item.uuid),
    event: String(item.event),
    distinct_id: String(item.distinct_id),
    project_id: Number(item.project_id),
    properties: JSON.parse(raw) as Record<string, unknown>,
    timestamp: String(item.timestamp),
    inserted_at: String(item.inserted_at),
  };
}

/** Which of these uuids a project already has (one BatchGetItem per 100). */
export async function existingEventUuids(projectId: number, uuids: readonly string[]): Promise<Set<string>> {
  const found = await batchGet(
    uuids.map((u) => keys.event(projectId, u)),
    { expression: '#u', names: { '#u': 'uuid' } },
  );
  return new Set(found.map((item) => String(item.uuid)));
}

/**
 * Capture's write: 25 items a call, 4 calls in flight. Each call waits behind every other one the
 * table is serving, so fewer in flight per request keeps each call well inside the API's SDK timeout
 * when many capture requests arrive at once (8 in flight x 8 clients made DynamoDB Local answer past it).
 */
const CAPTURE_WRITES_IN_FLIGHT = 4;

export async function putEventItems(items: readonly Record<string, unknown>[]): Promise<void> {
  await batchPut(items, CAPTURE_WRITES_IN_FLIGHT);
}

/** Capture's write of encoded events. */
export async function storeEvents(events: readonly EncodedEvent[]): Promise<void> {
  await putEventItems(events as unknown as Record<string, unknown>[]);
}

export async function getEvent(projectId: number, uuid: string): Promise<StoredEvent | undefined> {
  const [item] = await batchGet([keys.event(projectId, uuid)]);
  return item ? storedEvent(item) : undefined;
}

/** One page after another of a distinct id's event keys (the keys-only eventsByDistinctId index), up to `until`. */
async function* distinctIdEventPages(projectId: number, distinctId: string, until: string) {
  const index = TABLE_SCHEMA.indexes.eventsByDistinctId;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const out = await call(() =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: index.name,
          KeyConditionExpression: '#p = :p AND #s <= :until',
          ExpressionAttributeNames: { '#p': index.partitionKey, '#s': index.sortKey },
          ExpressionAttributeValues: {
            ':p': keys.eventsOfDistinctId(projectId, distinctId).did_pk,
            ':until': `${until}#\uffff`,
          },
          ExclusiveStartKey,
          Limit: 1000,
        }),
      ),
    );
    const items = out.Items ?? [];
    yield {
      keys: items.map((item) => ({ pk: String(item.pk), sk: String(item.sk) })),
      // The index's sort key is `<timestamp>#<uuid>`: the event's UTC day without reading the event.
      days: items.map((item) => String(item[index.sortKey]).slice(0, 10)),
    };
    ExclusiveStartKey = out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

/**
 * Deletes a distinct id's events with a timestamp up to `until` (later ones belong to whoever uses the
 * id after the deletion). Keys come from the keys-only eventsByDistinctId index; the stream's REMOVE
 * records then take the events out of the rollups. Returns how many were deleted, and their UTC days.
 */
export async function deleteEventsOfDistinctId(
  projectId: number,
  distinctId: string,
  until: string,
): Promise<{ deleted: number; days: Set<string> }> {
  let deleted = 0;
  const days = new Set<string>();
  for await (const page of distinctIdEventPages(projectId, distinctId, until)) {
    await batchDelete(page.keys);
    deleted += page.keys.length;
    for (const day of page.days) days.add(day);
  }
  return { deleted, days };
}

/** The UTC days holding a distinct id's events up to `until` (the keys-only index: no event is read). */
export async function daysOfDistinctId(projectId: number, distinctId: string, until: string): Promise<Set<string>> {
  const days = new Set<string>();
  for await (const page of distinctIdEventPages(projectId, distinctId, until))
    for (const day of page.days) days.add(day);
  return days;
}

/**
 * Raw range reads: bounded pages, few in flight. A slow table (DynamoDB Local on two cores, or a hot
 * partition) serves queued requests one after another, so 32 in flight made each wait past the API's
 * SDK timeout; 8 keeps every request short at the same total throughput.
 */
const RANGE_QUERIES_IN_FLIGHT = 8;
const RANGE_PAGE_ITEMS = 500;
/** Ingestion-time windows (batch exports, run by workers with long SDK timeouts; trends' small top-ups). */
const WINDOW_QUERIES_IN_FLIGHT = 32;

/** Every UTC day from `from`'s day to `to`, as YYYY-MM-DD. */
export function utcDays(from: Date, to: Date): string[] {
  const days: string[] = [];
  for (
    let t = Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate());
    t <= to.getTime();
    t += 86_400_000
  ) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  return days;
}

/**
 * A window whose lower bound is after its upper bound holds no event. Every read below answers it
 * empty without a Query: DynamoDB refuses such a BETWEEN (a ValidationException, a 500), and a clock
 * a few minutes ahead (the compactor's `through` against a reader's "now") makes one from ordinary inputs.
 */
const isInverted = (from: Date, to: Date) => from.getTime() > to.getTime();

/** One shard of a day in eventsByDay, events timed in [fromIso, toIso], of one name (the sort key's prefix) or all. */
function dayShardRange(
  projectId: number,
  day: string,
  shard: number,
  name: string | null,
  fromIso: string,
  toIso: string,
) {
  const index = TABLE_SCHEMA.indexes.eventsByDay;
  return {
    IndexName: index.name,
    KeyConditionExpression: name === null ? '#p = :p' : '#p = :p AND #s BETWEEN :a AND :b',
    FilterExpression: '#t BETWEEN :from AND :to',
    ExpressionAttributeNames: {
      '#p': index.partitionKey,
      '#t': 'timestamp',
      ...(name === null ? {} : { '#s': index.sortKey }),
    },
    ExpressionAttributeValues: {
      ':p': keys.eventsByDay(projectId, day, shard).day_pk,
      ':from': fromIso,
      ':to': toIso,
      ...(name === null
        ? {}
        : {
            ':a': `${keys.eventsByDayPrefix(name)}${fromIso}`,
            ':b': `${keys.eventsByDayPrefix(name)}${toIso}\uffff`,
          }),
    },
  };
}

/**
 * A project's events with from <= timestamp <= to, of the given names (null: every event), read from
 * the eventsByDay partitions the range covers: one Query per (UTC day, shard[, name]), in parallel.
 */
export async function readEventsInRange(
  projectId: number,
  from: Date,
  to: Date,
  names: string[] | null,
): Promise<StoredEvent[]> {
  return readEventsOnDays(projectId, utcDays(from, to), from, to, names);
}

/** As readEventsInRange, for some UTC days of the range only, all their Queries sharing one pool. */
export async function readEventsOnDays(
  projectId: number,
  days: readonly string[],
  from: Date,
  to: Date,
  names: string[] | null,
  /** Called before each partition is read: throws to stop the read (a query's deadline or cancellation). */
  check: () => void = () => {},
): Promise<StoredEvent[]> {
  if (isInverted(from, to)) return [];
  const fromIso = from.toISOString();
  const toIso = to.toISOString();
  const queries = days.flatMap((day) =>
    Array.from({ length: TABLE_SCHEMA.eventDayShards }, (_, shard) =>
      (names ?? [null]).map((name) => ({ day, shard, name })),
    ).flat(),
  );
  const found: StoredEvent[] = [];
  await inParallel(queries, RANGE_QUERIES_IN_FLIGHT, async ({ day, shard, name }) => {
    check();
    const items = await queryItems({
      ...dayShardRange(projectId, day, shard, name, fromIso, toIso),
      // Bounded pages: each request stays well inside the API's SDK timeout even on a slow table.
      Limit: RANGE_PAGE_ITEMS,
    });
    for (const item of items) found.push(storedEvent(item));
  });
  return found;
}

function utcHours(from: Date, to: Date): string[] {
  const hours: string[] = [];
  for (let t = Math.floor(from.getTime() / 3_600_000) * 3_600_000; t < to.getTime(); t += 3_600_000)
    hours.push(new Date(t).toISOString().slice(0, 13));
  return hours;
}

/** Events of a project ingested in [start, end), in ingestion order (batch export windows). */
export async function readEventsInsertedBetween(projectId: number, start: Date, end: Date): Promise<StoredEvent[]> {
  const index = TABLE_SCHEMA.indexes.eventsByInsertedHour;
  // [start, end): empty unless start is before end.
  if (start.getTime() >= end.getTime()) return [];
  const startIso = start.toISOString();
  const endIso = end.toISOString();
  const partitions = utcHours(start, end).flatMap((hour) =>
    Array.from(
      { length: TABLE_SCHEMA.eventDayShards },
      (_, shard) => keys.eventsByInsertedHour(projectId, hour, shard).ins_pk,
    ),
  );
  const found: StoredEvent[] = [];
  await inParallel(partitions, WINDOW_QUERIES_IN_FLIGHT, async (pk) => {
    const items = await queryItems({
      IndexName: index.name,
      KeyConditionExpression: '#p = :p AND #s BETWEEN :a AND :b',
      ExpressionAttributeNames: { '#p': index.partitionKey, '#s': index.sortKey },
      ExpressionAttributeValues: { ':p': pk, ':a': startIso, ':b': endIso },
    });
    for (const item of items) if (String(item.inserted_at) < endIso) found.push(storedEvent(item));
  });
  return found.sort((a, b) =>
    a.inserted_at === b.inserted_at ? (a.uuid < b.uuid ? -1 : 1) : a.inserted_at < b.inserted_at ? -1 : 1,
  );
}

/** What one day's read for an event explorer page returned. */
export interface OrderedDayRead {
  /** The events `keep` accepted, in the requested order. */
  events: StoredEvent[];
  /** False when the read stopped at the budget before the day was covered. */
  complete: boolean;
}

/**
 * One UTC day's events with from <= timestamp <= to, in time order (newest first or oldest first), for
 * an event explorer page. For one name, each shard's Query walks only that name's range of the sort key
 * (`<len>:<name>#<timestamp>#<uuid>`: no other name is read) in the requested direction and stops once
 * it holds `want` events that `keep` accepts, so the day's first `want` kept events are among those
 * returned. For every name (null) the whole day is read (the sort key orders by name first). Every
 * item read is taken from `budget.items` (shared by reads running side by side); the read stops when
 * it runs out (then `complete` is false).
 */
export async function readDayEventsInOrder(
  projectId: number,
  day: string,
  name: string | null,
  window: { from: Date; to: Date; newestFirst: boolean },
  want: number,
  keep: (e: StoredEvent) => boolean,
  budget: { items: number },
): Promise<OrderedDayRead> {
  if (isInverted(window.from, window.to)) return { events: [], complete: true };
  const fromIso = window.from.toISOString();
  const toIso = window.to.toISOString();
  let complete = true;
  const perShard = await Promise.all(
    Array.from({ length: TABLE_SCHEMA.eventDayShards }, async (_, shard) => {
      const kept: StoredEvent[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        if (budget.items <= 0) {
          complete = false;
          break;
        }
        const out = await call(() =>
          db().send(
            new QueryCommand({
              TableName: tableName(),
              ...dayShardRange(projectId, day, shard, name, fromIso, toIso),
              ScanIndexForward: !window.newestFirst,
              ExclusiveStartKey,
              // One name: a first page a little over what is wanted (filters may ask for more); every name: the whole day.
              Limit: Math.min(
                RANGE_PAGE_ITEMS,
                budget.items,
                name === null || ExclusiveStartKey ? RANGE_PAGE_ITEMS : want + 1,
              ),
            }),
          ),
        );
        budget.items -= out.ScannedCount ?? out.Items?.length ?? 0;
        for (const item of out.Items ?? []) {
          const e = storedEvent(item);
          if (keep(e)) kept.push(e);
        }
        ExclusiveStartKey = name !== null && kept.length >= want ? undefined : out.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return kept;
    }),
  );
  const sign = window.newestFirst ? -1 : 1;
  const events = perShard
    .flat()
    .sort(
      (a, b) => sign * (a.timestamp === b.timestamp ? (a.uuid < b.uuid ? -1 : 1) : a.timestamp < b.timestamp ? -1 : 1),
    );
  return { events, complete };
}
