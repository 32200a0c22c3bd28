import { DeleteCommand, GetCommand, ScanCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { columnAttribute, type EncodedSegment, type FetchedSegment, type Projection } from '../segments/codec.ts';
import type { Tally } from '../segments/fingerprint.ts';
import { batchDelete, batchGet, batchPut, inParallel } from './batch.ts';
import { call, db, conditional, tableName, transact, type TransactItem } from './client.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { keys, type ItemKey } from './keys.ts';
import { SegmentCache, type CachedBuild } from './segment-cache.ts';
import { config } from '../config.ts';
import { dueKeys, queryAll, queryItems } from './query.ts';

/** One complete build of a (day, event name) segment: its chunks in order and what they hold. */
export interface SegmentBuild {
  event: string;
  build: string;
  /** Events ingested before this instant were considered; later ones are not in it. */
  through: string;
  tally: Tally;
  /** The chunks, with the columns that were read (a column a chunk lacks is undefined). */
  chunks: FetchedSegment[];
  /** Served from this container's memory (the day counter names it as the newest build). */
  cached?: true;
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

/** A (day, event name)'s counter as the ingest worker keeps it, with the newest build the compactor wrote. */
export interface DayCounter {
  tally: Tally;
  /** The newest complete build's id (absent before the first compaction, or on counters from before the field). */
  build?: string;
  /** What the day's lake files hold of this name (absent before the day's first lake write), with the persons version they were written with. */
  lake?: { tally: Tally; personsVersion: number };
}

/** The complete segments among a day's items (a segment's chunks must all carry chunk 0's build). */
function assembleSegments(
  items: Record<string, unknown>[],
  projection: Projection | null,
): Pick<EventDay, 'segments' | 'segmentChunks'> {
  const chunksByName = new Map<string, Record<string, unknown>[]>();
  const segmentChunks = new Map<string, number[]>();
  for (const item of items) {
    if (item.entity !== 'EventSegment') continue;
    const name = String(item.event);
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
  return { segments, segmentChunks };
}

/** The segment builds this container has read, kept for later queries (shared/db/segment-cache.ts). */
let containerCache: SegmentCache | undefined;
const segmentCache = () => (containerCache ??= new SegmentCache(config().segmentCacheMb * 1024 * 1024));

const dayOfPk = (pk: unknown) => String(pk).slice(String(pk).lastIndexOf('#') + 1);
const monthsOf = (days: readonly string[]) => [...new Set(days.map((day) => day.slice(0, 7)))];
/** Month partitions of counters read at once (a 3,700-day range spans ~120). */
const MONTHS_IN_FLIGHT = 16;

/** The day counters of these days, of one name or (null) of every name, by day then name: readDayCounters' shape. */
export type DayCounterReader = (
  days: readonly string[],
  event: string | null,
) => Promise<Map<string, Map<string, DayCounter>>>;

/**
 * The day counters of these days, of one name (a range Query per month) or of every name (the whole
 * month partitions), by day then name.
 */
export async function readDayCounters(
  projectId: number,
  days: readonly string[],
  event: string | null,
): Promise<Map<string, Map<string, DayCounter>>> {
  const wanted = new Set(days);
  const byDay = new Map<string, Map<string, DayCounter>>(days.map((day) => [day, new Map()]));
  const pages = await inParallel(monthsOf(days), MONTHS_IN_FLIGHT, (month) => {
    const { pk } = keys.dayCountPartition(projectId, month);
    if (event === null) return queryAll(pk, '');
    const inMonth = days.filter((day) => day.startsWith(month)).sort();
    const range = keys.dayCountRange(event, inMonth[0]!, inMonth.at(-1)!);
    return queryItems({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': range.from, ':to': range.to },
    });
  });
  for (const item of pages.flat()) {
    const day = String(item.sk).slice(-10);
    if (item.entity !== 'DayCount' || !wanted.has(day)) continue;
    byDay.get(day)!.set(String(item.event), {
      tally: { count: Number(item.count ?? 0), xsum: Number(item.xsum ?? 0) },
      ...(typeof item.build === 'string' ? { build: item.build } : {}),
      ...(item.lake_count === undefined
        ? {}
        : {
            lake: {
              tally: { count: Number(item.lake_count), xsum: Number(item.lake_xsum ?? 0) },
              personsVersion: Number(item.lake_persons ?? 0),
            },
          }),
    });
  }
  return byDay;
}

const countsOf = (counters: Map<string, DayCounter> | undefined) =>
  new Map([...(counters ?? [])].map(([name, c]) => [name, c.tally]));

/** The newest build of (day, name) if this container keeps it with the columns asked for. */
function keptBuild(
  projectId: number,
  day: string,
  event: string,
  counter: DayCounter | undefined,
  attributes: readonly string[],
): CachedBuild | undefined {
  const kept = counter?.build === undefined ? undefined : segmentCache().get(projectId, day, event, attributes);
  return kept?.build === counter?.build ? kept : undefined;
}

/** What a kept build must hold for this projection: the times, the distinct ids if asked, each property column. */
const keptAttributes = (projection: Projection): string[] => [
  't',
  ...(projection.distinctIds ? ['d'] : []),
  ...projection.properties.map(columnAttribute),
];

/** A day from its counters, the segment items read and the kept builds; the builds read whole are kept for later. */
function dayOf(
  projectId: number,
  day: string,
  counters: Map<string, DayCounter> | undefined,
  items: Record<string, unknown>[],
  projection: Projection,
  kept: Map<string, CachedBuild>,
): EventDay {
  const { segments, segmentChunks } = assembleSegments(items, projection);
  for (const segment of segments.values())
    segmentCache().put(projectId, day, { ...segment, attributes: new Set(keptAttributes(projection)) });
  for (const [event, build] of kept) {
    segments.set(event, { ...build, cached: true });
    segmentChunks.set(
      event,
      build.chunks.map((_, i) => i),
    );
  }
  return { counts: countsOf(counters), segments, segmentChunks };
}

/** Chunk 0 items just read: the keys of the chunks after them. */
const laterChunks = (projectId: number, heads: Record<string, unknown>[]): ItemKey[] =>
  heads.flatMap((head) =>
    head.entity === 'EventSegment' && Number(head.chunk) === 0
      ? Array.from({ length: Number(head.chunks) - 1 }, (_, i) =>
          keys.daySegment(projectId, dayOfPk(head.pk), String(head.event), i + 1),
        )
      : [],
  );

/**
 * Chunks by key, then the chunks after each chunk 0 among them (a second round when a build has more
 * than one chunk).
 */
async function readChunks(
  projectId: number,
  first: ItemKey[],
  expression: ReturnType<typeof projectionOf>,
): Promise<Record<string, unknown>[]> {
  if (!first.length) return [];
  const heads = await batchGet(first, expression, 16);
  const more = laterChunks(projectId, heads);
  return more.length ? [...heads, ...(await batchGet(more, expression, 16))] : heads;
}

/**
 * One day's counters and segments, of one name (or, `event` null, of every name). Only the projected
 * columns are transferred; `projection` null reads counters and segment metadata only. The day's
 * partition is not read when this container keeps every newest build the counters name.
 */
export async function readEventDay(
  projectId: number,
  day: string,
  event: string | null,
  projection: Projection | null,
  counters?: Map<string, DayCounter>,
): Promise<EventDay> {
  const { pk } = keys.eventDayPartition(projectId, day);
  const prefix = event === null ? '' : keys.eventDayPrefix(event);
  const readPartition = (p: Projection | null) => queryAll(pk, prefix, { projection: projectionOf(p) });
  if (!projection) {
    const [items, read] = await Promise.all([readPartition(null), readDayCounters(projectId, [day], event)]);
    return { counts: countsOf(read.get(day)), ...assembleSegments(items, null) };
  }
  const dayCounters = counters ?? (await readDayCounters(projectId, [day], event)).get(day) ?? new Map();
  const attributes = keptAttributes(projection);
  const kept = new Map<string, CachedBuild>();
  const missing: string[] = [];
  for (const [name, counter] of dayCounters) {
    if (event !== null && name !== event) continue;
    const build = keptBuild(projectId, day, name, counter, attributes);
    if (build) kept.set(name, build);
    else missing.push(name);
  }
  const items = !kept.size
    ? await readPartition(projection)
    : await readChunks(
        projectId,
        missing.map((name) => keys.daySegment(projectId, day, name, 0)),
        projectionOf(projection),
      );
  return dayOf(projectId, day, dayCounters, items, projection, kept);
}

/**
 * One name's counters and segments on many days: a Query of the counters per month, beside one round
 * of BatchGetItem (100 keys a call, in parallel) for chunk 0 of every day whose newest build this
 * container does not keep; a second round only for builds of more than one chunk, and for days whose
 * kept build turns out superseded.
 */
export async function readEventDays(
  projectId: number,
  days: readonly string[],
  event: string,
  projection: Projection,
  /** Where the counters come from: a read the caller already made (shared/domain/day-counters.ts), or their own Query. */
  readCounters: DayCounterReader = (d, e) => readDayCounters(projectId, d, e),
): Promise<Map<string, EventDay>> {
  const expression = projectionOf(projection);
  const attributes = keptAttributes(projection);
  // Kept builds are checked against the counters once these are read: until then, any kept build is a candidate.
  const candidates = new Map(
    days.flatMap((day) => {
      const build = segmentCache().get(projectId, day, event, attributes);
      return build ? [[day, build] as const] : [];
    }),
  );
  const [counters, cold] = await Promise.all([
    readCounters(days, event),
    readChunks(
      projectId,
      days.filter((day) => !candidates.has(day)).map((day) => keys.daySegment(projectId, day, event, 0)),
      expression,
    ),
  ]);
  const kept = new Map([...candidates].filter(([day, build]) => counters.get(day)?.get(event)?.build === build.build));
  const superseded = [...candidates.keys()].filter((day) => !kept.has(day));
  const items = [
    ...cold,
    ...(await readChunks(
      projectId,
      superseded.map((day) => keys.daySegment(projectId, day, event, 0)),
      expression,
    )),
  ];
  const byDay = new Map<string, Record<string, unknown>[]>(days.map((day) => [day, []]));
  for (const item of items) byDay.get(dayOfPk(item.pk))?.push(item);
  return new Map(
    days.map((day) => {
      const build = kept.get(day);
      return [
        day,
        dayOf(
          projectId,
          day,
          counters.get(day),
          byDay.get(day) ?? [],
          projection,
          build ? new Map([[event, build]]) : new Map(),
        ),
      ];
    }),
  );
}

/** Notes a build as the newest of its (day, name) on the day counter, for readers that keep builds in memory. */
export async function recordNewestBuild(projectId: number, day: string, event: string, build: string): Promise<void> {
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.dayCount(projectId, day, event),
        UpdateExpression: 'SET #b = :b',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#b': 'build' },
        ExpressionAttributeValues: { ':b': build },
      }),
    ),
  );
}

/**
 * Notes on each name's day counter what the day's lake files now hold of it (a name the files lack:
 * a zero tally), so a reader knows the lake is current exactly when these equal the counters.
 */
export async function recordLakeDay(
  projectId: number,
  day: string,
  tallies: Map<string, Tally>,
  personsVersion: number,
): Promise<void> {
  await inParallel([...tallies], 16, ([event, tally]) =>
    conditional(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.dayCount(projectId, day, event),
          UpdateExpression: 'SET #c = :c, #x = :x, #p = :p',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#c': 'lake_count', '#x': 'lake_xsum', '#p': 'lake_persons' },
          ExpressionAttributeValues: { ':c': tally.count, ':x': tally.xsum, ':p': personsVersion },
        }),
      ),
    ),
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
  await markCompactionsDue(days, dueAt, 'if-not-due');
}

/**
 * #54 made due at `dueAt` whatever it was due at before (a lake hide waits for these days: shared/domain/lake-hides.ts).
 * `touches` moves too, so a compaction running on the day leaves it due for the next tick.
 */
export async function scheduleCompactions(days: { projectId: number; day: string }[], dueAt: string): Promise<void> {
  await markCompactionsDue(days, dueAt, 'always');
}

/** The one marker write: `if-not-due` keeps an earlier due time, `always` replaces it. */
async function markCompactionsDue(
  days: { projectId: number; day: string }[],
  dueAt: string,
  replace: 'if-not-due' | 'always',
): Promise<void> {
  const due =
    replace === 'always'
      ? 'due_pk = :dp, due_sk = :ds'
      : 'due_pk = if_not_exists(due_pk, :dp), due_sk = if_not_exists(due_sk, :ds)';
  await inParallel(days, 8, ({ projectId, day }) => {
    const dueKey = keys.compactionDue(dueAt, projectId, day);
    return call(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.compactionMarker(projectId, day),
          UpdateExpression: `SET ${due}, entity = :entity, project_id = :p, #d = :d, attempts = :zero ADD touches :one`,
          ExpressionAttributeNames: { '#d': 'day' },
          ExpressionAttributeValues: {
            ':dp': dueKey.due_pk,
            ':ds': dueKey.due_sk,
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

/**
 * Moves the day counters kept before November 2026 (in the day's partition, `<name>#COUNT`) to their
 * month partition: each one added to the new counter and deleted in one transaction, so a run can be
 * repeated or interrupted, and events counted meanwhile (the ingest worker writes only the new key)
 * are kept. Scans the table; returns how many counters moved.
 */
export async function moveLegacyDayCounters(): Promise<number> {
  const legacy = keys.legacyDayCount;
  let moved = 0;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await call(() =>
      db().send(
        new ScanCommand({
          TableName: tableName(),
          FilterExpression: 'entity = :e AND begins_with(pk, :p)',
          ExpressionAttributeValues: { ':e': 'DayCount', ':p': legacy.pkPrefix },
          ExclusiveStartKey,
        }),
      ),
    );
    for (const item of page.Items ?? []) {
      if (!String(item.sk).endsWith(legacy.skSuffix)) continue;
      const committed = await retryTransient(
        'Moving a day counter',
        async () => {
          const outcome = await transact(moveCounter(item));
          return outcome.committed || ('conflict' in outcome ? TRANSIENT : false);
        },
        { attempts: 8 },
      );
      if (committed) moved += 1;
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return moved;
}

/** Adds a legacy counter to its month-partition counter and deletes it, in one transaction. */
function moveCounter(item: Record<string, unknown>): TransactItem[] {
  const [, project, day] = String(item.pk).split('#');
  return [
    {
      Update: {
        TableName: tableName(),
        Key: keys.dayCount(Number(project), String(day), String(item.event)),
        UpdateExpression: 'ADD #c :c, xsum :x SET entity = :e, #n = :n',
        ExpressionAttributeNames: { '#c': 'count', '#n': 'event' },
        ExpressionAttributeValues: {
          ':c': Number(item.count ?? 0),
          ':x': Number(item.xsum ?? 0),
          ':e': 'DayCount',
          ':n': item.event,
        },
      },
    },
    {
      Delete: {
        TableName: tableName(),
        Key: { pk: item.pk, sk: item.sk },
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
  ];
}
