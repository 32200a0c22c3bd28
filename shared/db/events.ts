import { gunzipSync, gzipSync } from 'node:zlib';
import { batchGet, batchPut } from './batch.ts';
import { keys } from './keys.ts';
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

export class EventTooLarge extends Error {
  override name = 'EventTooLarge';
}

function shardOf(uuid: string): number {
  return parseInt(uuid.slice(-2), 16) % TABLE_SCHEMA.eventDayShards;
}

export function eventItem(e: StoredEvent): Record<string, unknown> {
  const json = JSON.stringify(e.properties);
  const encoded: Record<string, unknown> = Buffer.byteLength(json) <= INLINE_LIMIT ? { properties: json } : { properties_gz: gzipSync(json) };
  const size = typeof encoded.properties === 'string' ? Buffer.byteLength(encoded.properties) : (encoded.properties_gz as Buffer).length;
  if (size > STORED_LIMIT) throw new EventTooLarge(`event ${e.uuid} is too large to store (${size} bytes of properties after compression)`);
  return {
    ...keys.event(e.project_id, e.uuid),
    ...keys.eventsByDay(e.project_id, e.timestamp.slice(0, 10), shardOf(e.uuid)),
    day_sk: keys.eventsByDaySk(e.event, e.timestamp, e.uuid),
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

export function storedEvent(item: Record<string, unknown>): StoredEvent {
  // Lambda delivers stream binaries base64-encoded; the SDK hands them over as bytes.
  const gz = item.properties_gz;
  const raw = gz ? gunzipSync(typeof gz === 'string' ? Buffer.from(gz, 'base64') : (gz as Uint8Array)).toString('utf8') : String(item.properties ?? '{}');
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

export async function putEventItems(items: readonly Record<string, unknown>[]): Promise<void> {
  await batchPut(items);
}

export async function getEvent(projectId: number, uuid: string): Promise<StoredEvent | undefined> {
  const [item] = await batchGet([keys.event(projectId, uuid)]);
  return item ? storedEvent(item) : undefined;
}
