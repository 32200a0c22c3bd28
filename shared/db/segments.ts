import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { columnAttribute, type EncodedSegment, type FetchedSegment, type Projection } from '../segments/codec.ts';
import type { Tally } from '../segments/fingerprint.ts';
import { batchDelete, batchGet, batchPut, inParallel } from './batch.ts';
import { call, db, conditional, tableName } from './client.ts';
import { keys } from './keys.ts';
import { dueKeys, queryAll } from './query.ts';

/** One complete build of a (day, event name) segment: its chunks in order and what they hold. */
export interface SegmentBuild {
  event: string;
  build: string;
  /** Events ingested before this instant were considered; later ones are not in it. */
  through: string;
  tally: Tally;
  /** The chunks, with the columns that were read (a column a chunk lacks is undefined). */
  chunks: FetchedSegment[];
}

const META = ['pk', 'sk', 'entity', 'event', 'count', 'xsum', 'build', 'chunk', 'chunks', 'through', 'n', 'base'];

/** What one UTC day of a project holds, for one event name or all of them. */
export interface EventDay {
  /** Day counters by event name, as the ingest worker keeps them. */
  counts: Map<string, Tally>;
  /** The newest complete build per event name. */
  segments: Map<string, SegmentBuild>;
  /** The chunk numbers of every stored segment chunk by event name, complete builds or not (the compactor removes the superseded ones). */
  segmentChunks: Map<string, number[]>;
}

function projectionOf(projection: Projection | null): { expression: string; names: Record<string, string> } {
  const attributes = [
    ...META,
    ...(projection
      ? ['t', ...(projection.distinctIds ? ['d'] : []), ...projection.properties.map(columnAttribute)]
      : []),
  ];
  const names = Object.fromEntries(attributes.map((a, i) => [`#a${i}`, a]));
  return { expression: Object.keys(names).join(', '), names };
}

/** Counters and complete segments from a day's items (a segment's chunks must all carry chunk 0's build). */
function assemble(items: Record<string, unknown>[], projection: Projection | null): EventDay {
  const counts = new Map<string, Tally>();
  const chunksByName = new Map<string, Record<string, unknown>[]>();
  const segmentChunks = new Map<string, number[]>();
  for (const item of items) {
    const name = String(item.event);
    if (item.entity === 'DayCount') counts.set(name, { count: Number(item.count ?? 0), xsum: Number(item.xsum ?? 0) });
    if (item.entity !== 'EventSegment') continue;
    const chunks = chunksByName.get(name) ?? [];
    chunks[Number(item.chunk)] = item;
    chunksByName.set(name, chunks);
    segmentChunks.set(name, [...(segmentChunks.get(name) ?? []), Number(item.chunk)]);
  }
  const segments = new Map<string, SegmentBuild>();
  for (const [name, chunks] of chunksByName) {
    const head = chunks[0];
    if (!head) continue;
    const used = chunks.slice(0, Number(head.chunks));
    if (used.length !== Number(head.chunks) || !used.every((c) => c !== undefined && c.build === head.build)) continue;
    segments.set(name, {
      event: name,
      build: String(head.build),
      through: String(head.through),
      tally: { count: Number(head.count), xsum: Number(head.xsum) },
      chunks: used.map((c) => ({
        n: Number(c.n),
        base: Number(c.base),
        time: c.t as Uint8Array,
        dids: c.d as Uint8Array,
        columns: new Map(
          (projection?.properties ?? []).map((key) => [key, c[columnAttribute(key)] as Uint8Array | undefined]),
        ),
      })),
    });
  }
  return { counts, segments, segmentChunks };
}

/**
 * One Query: the day's counters and segments of one name (or, `event` null, of every name). Only the
 * projected columns are transferred; `projection` null reads counters and segment metadata only.
 */
export async function readEventDay(
  projectId: number,
  day: string,
  event: string | null,
  projection: Projection | null,
): Promise<EventDay> {
  const items = await queryAll(
    keys.eventDayPartition(projectId, day).pk,
    event === null ? '' : keys.eventDayPrefix(event),
    { projection: projectionOf(projection) },
  );
  return assemble(items, projection);
}

/**
 * One name's counters and segments on many days: one BatchGetItem round for every day's counter and
 * first chunk (100 keys a call, in parallel), and a second only for days whose segment has more chunks.
 */
export async function readEventDays(
  projectId: number,
  days: readonly string[],
  event: string,
  projection: Projection,
): Promise<Map<string, EventDay>> {
  const expression = projectionOf(projection);
  const first = await batchGet(
    days.flatMap((day) => [keys.dayCount(projectId, day, event), keys.daySegment(projectId, day, event, 0)]),
    expression,
    16,
  );
  const more = first.flatMap((item) => {
    if (item.entity !== 'EventSegment' || Number(item.chunks) <= 1) return [];
    const day = String(item.pk).slice(String(item.pk).lastIndexOf('#') + 1);
    return Array.from({ length: Number(item.chunks) - 1 }, (_, i) => keys.daySegment(projectId, day, event, i + 1));
  });
  const items = more.length ? [...first, ...(await batchGet(more, expression, 16))] : first;
  const byDay = new Map<string, Record<string, unknown>[]>(
    days.map((day) => [keys.eventDayPartition(projectId, day).pk, []]),
  );
  for (const item of items) byDay.get(String(item.pk))?.push(item);
  return new Map(
    days.map((day) => [day, assemble(byDay.get(keys.eventDayPartition(projectId, day).pk) ?? [], projection)]),
  );
}

/** Writes a build's chunks over the previous ones, chunk 0 last (readers check every chunk carries chunk 0's build). */
export async function putSegmentBuild(
  projectId: number,
  day: string,
  build: { event: string; build: string; through: string; tally: Tally; chunks: EncodedSegment[] },
): Promise<void> {
  const items = build.chunks.map((segment, chunk) => ({
    ...keys.daySegment(projectId, day, build.event, chunk),
    entity: 'EventSegment',
    event: build.event,
    build: build.build,
    chunk,
    chunks: build.chunks.length,
    through: build.through,
    count: build.tally.count,
    xsum: build.tally.xsum,
    n: segment.n,
    base: segment.base,
    t: segment.time,
    d: segment.dids,
    ...Object.fromEntries([...segment.columns].map(([key, blob]) => [columnAttribute(key), blob])),
  }));
  await batchPut(items.slice(1));
  if (items[0]) await batchPut(items.slice(0, 1));
}

/** Deletes these chunks of a day's segments (chunks of superseded builds). */
export async function deleteSegmentChunks(
  projectId: number,
  day: string,
  chunks: { event: string; chunk: number }[],
): Promise<void> {
  await batchDelete(chunks.map(({ event, chunk }) => keys.daySegment(projectId, day, event, chunk)));
}

/**
 * Notes that these days' events changed, so the compactor rebuilds them from `dueAt` on. The due time
 * is set by the first change after a compaction and not pushed back by later ones (an always-busy day
 * is still compacted every so often); `touches` counts changes, so the compactor only clears a marker
 * nothing touched while it worked.
 */
export async function touchCompactionMarkers(days: { projectId: number; day: string }[], dueAt: string): Promise<void> {
  await inParallel(days, 8, ({ projectId, day }) => {
    const due = keys.compactionDue(dueAt, projectId, day);
    return call(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.compactionMarker(projectId, day),
          UpdateExpression:
            'SET due_pk = if_not_exists(due_pk, :dp), due_sk = if_not_exists(due_sk, :ds), entity = :entity, project_id = :p, #d = :d, attempts = :zero ADD touches :one',
          ExpressionAttributeNames: { '#d': 'day' },
          ExpressionAttributeValues: {
            ':dp': due.due_pk,
            ':ds': due.due_sk,
            ':entity': 'CompactionMarker',
            ':p': projectId,
            ':d': day,
            ':one': 1,
            ':zero': 0,
          },
        }),
      ),
    );
  });
}

export interface CompactionMarker {
  projectId: number;
  day: string;
  touches: number;
  /** Compactions that could not match the day counters since the marker was set. */
  attempts: number;
}

/** Days whose compaction is due by `now`. */
export async function dueCompactions(now: Date): Promise<{ projectId: number; day: string }[]> {
  const found = await dueKeys(keys.compactionDue('', 0, '').due_pk, now);
  return found.map(({ pk }) => {
    const [, projectId, day] = pk.split('#');
    return { projectId: Number(projectId), day: day! };
  });
}

export async function getCompactionMarker(projectId: number, day: string): Promise<CompactionMarker | undefined> {
  const out = await call(() =>
    db().send(
      new GetCommand({ TableName: tableName(), Key: keys.compactionMarker(projectId, day), ConsistentRead: true }),
    ),
  );
  return out.Item
    ? { projectId, day, touches: Number(out.Item.touches ?? 0), attempts: Number(out.Item.attempts ?? 0) }
    : undefined;
}

/** Takes the day for one compaction (`until`), unless another compaction holds it. False: someone else is on it. */
export async function leaseCompaction(marker: CompactionMarker, now: Date, until: Date): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.compactionMarker(marker.projectId, marker.day),
          UpdateExpression: 'SET lease_until = :until',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lease_until) OR lease_until < :now)',
          ExpressionAttributeValues: { ':until': until.toISOString(), ':now': now.toISOString() },
        }),
      ),
    )) !== undefined
  );
}

/** Removes the marker unless the day changed since `touches` was read (then it stays due). */
export async function clearCompactionMarker(marker: CompactionMarker): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new DeleteCommand({
          TableName: tableName(),
          Key: keys.compactionMarker(marker.projectId, marker.day),
          ConditionExpression: 'touches = :t',
          ExpressionAttributeValues: { ':t': marker.touches },
        }),
      ),
    )) !== undefined
  );
}

/** Gives the day back without clearing it (it changed while compacting: the next tick takes it again). */
export async function releaseCompaction(marker: CompactionMarker): Promise<void> {
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.compactionMarker(marker.projectId, marker.day),
        UpdateExpression: 'REMOVE lease_until',
        ConditionExpression: 'attribute_exists(pk)',
      }),
    ),
  );
}

/** Keeps the marker and makes it due again at `at` (the day could not be completed yet), counting the attempt. */
export async function rescheduleCompaction(marker: CompactionMarker, at: string): Promise<void> {
  const due = keys.compactionDue(at, marker.projectId, marker.day);
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.compactionMarker(marker.projectId, marker.day),
        UpdateExpression: 'SET due_pk = :dp, due_sk = :ds REMOVE lease_until ADD attempts :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':dp': due.due_pk, ':ds': due.due_sk, ':one': 1 },
      }),
    ),
  );
}
