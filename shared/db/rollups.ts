import { batchGet, inParallel } from './batch.ts';
import { tableName, transact, type TransactItem } from './client.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { keys, type ItemKey } from './keys.ts';
import { queryItems } from './query.ts';
import { fingerprint } from '../segments/fingerprint.ts';

/** Where an event is counted: its name and UTC hour (`YYYY-MM-DDTHH`). */
export interface Bucket {
  event: string;
  hour: string;
}

/** Move one event's count from one bucket to another (either side absent: first count, or removal). */
export interface CountMove {
  projectId: number;
  uuid: string;
  from?: Bucket;
  to?: Bucket;
}

const sameBucket = (a?: Bucket, b?: Bucket) => a?.event === b?.event && a?.hour === b?.hour;

/** The bucket each event is currently counted in, from its marker item. */
export async function countedBuckets(events: { projectId: number; uuid: string }[]): Promise<Map<string, Bucket>> {
  const idOf = new Map(events.map((e) => [keys.eventCounted(e.projectId, e.uuid).pk, markerId(e.projectId, e.uuid)]));
  const items = await batchGet(events.map((e) => keys.eventCounted(e.projectId, e.uuid)));
  const out = new Map<string, Bucket>();
  for (const item of items) out.set(idOf.get(String(item.pk))!, { event: String(item.event), hour: String(item.hour) });
  return out;
}

/** An event's identity in countedBuckets' answer (not a table key). */
export const markerId = (projectId: number, uuid: string) => `${projectId}/${uuid}`;

const TRANSACTION_LIMIT = 100;

/**
 * Applies count moves in transactions that pair each event's marker (conditional on where it was
 * counted) with the rollup deltas, so a replayed move fails its condition instead of counting twice.
 * Returns the moves whose condition failed (someone else moved them): the caller re-reads and retries.
 */
export async function applyCountMoves(moves: CountMove[]): Promise<CountMove[]> {
  // Sorted by bucket, a transaction covers few rollup items and has room for ~95 markers.
  const order = (m: CountMove) => `${m.projectId}|${m.to?.event ?? m.from?.event}|${m.to?.hour ?? m.from?.hour}`;
  const pending = moves
    .filter((m) => !sameBucket(m.from, m.to))
    .sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  const groups: { moves: CountMove[]; deltas: Map<string, Delta> }[] = [];
  let group: (typeof groups)[number] = { moves: [], deltas: new Map() };
  for (const m of pending) {
    const added = rollupDeltas(m).filter(({ key }) => !group.deltas.has(`${key.pk}|${key.sk}`)).length;
    if (group.moves.length && group.moves.length + group.deltas.size + 1 + added > TRANSACTION_LIMIT) {
      groups.push(group);
      group = { moves: [], deltas: new Map() };
    }
    group.moves.push(m);
    addDeltas(group.deltas, rollupDeltas(m));
  }
  if (group.moves.length) groups.push(group);
  const failed: CountMove[] = [];
  await inParallel(groups, TRANSACTIONS_IN_FLIGHT, async (g) => {
    if (!(await writeGroup(g.moves, [...g.deltas.values()]))) failed.push(...(await retryOneByOne(g.moves)));
  });
  return failed;
}

const TRANSACTIONS_IN_FLIGHT = 4;

/** A change to one counter item: hourly rollups change `count`; day counters also `xsum` (see fingerprint). */
interface Delta {
  key: ItemKey;
  count: number;
  xsum?: number;
  event?: string;
}

/**
 * What moving one event changes: the hourly rollup of its name and of all events, and the day counter
 * of its name (the count and fingerprint sum that tell a compacted segment is complete).
 */
function rollupDeltas(m: CountMove): Delta[] {
  const print = fingerprint(m.uuid);
  return (
    [
      [m.from, -1],
      [m.to, 1],
    ] as const
  ).flatMap(([b, sign]) =>
    b
      ? [
          { key: keys.rollup(m.projectId, b.event, b.hour), count: sign },
          { key: keys.rollup(m.projectId, null, b.hour), count: sign },
          {
            key: keys.dayCount(m.projectId, b.hour.slice(0, 10), b.event),
            count: sign,
            xsum: sign * print,
            event: b.event,
          },
        ]
      : [],
  );
}

function addDeltas(into: Map<string, Delta>, deltas: Delta[]): void {
  for (const d of deltas) {
    const id = `${d.key.pk}|${d.key.sk}`;
    const seen = into.get(id);
    if (!seen) into.set(id, { ...d });
    else {
      seen.count += d.count;
      if (d.xsum !== undefined) seen.xsum = (seen.xsum ?? 0) + d.xsum;
    }
  }
}

/** When a group's transaction is refused, find the culprits one move at a time (rare: replays and races). */
async function retryOneByOne(group: CountMove[]): Promise<CountMove[]> {
  const failed: CountMove[] = [];
  for (const m of group) {
    const deltas = new Map<string, Delta>();
    addDeltas(deltas, rollupDeltas(m));
    if (!(await writeGroup([m], [...deltas.values()]))) failed.push(m);
  }
  return failed;
}

async function writeGroup(group: CountMove[], deltas: Delta[]): Promise<boolean> {
  const Table = tableName();
  const markers: TransactItem[] = group.map((m) => {
    const Key = keys.eventCounted(m.projectId, m.uuid);
    const condition = m.from
      ? {
          ConditionExpression: '#e = :fe AND #h = :fh',
          ExpressionAttributeNames: { '#e': 'event', '#h': 'hour' },
          ExpressionAttributeValues: { ':fe': m.from.event, ':fh': m.from.hour },
        }
      : { ConditionExpression: 'attribute_not_exists(pk)' };
    if (!m.to) return { Delete: { TableName: Table, Key, ...condition } };
    return {
      Put: {
        TableName: Table,
        Item: { ...Key, entity: 'EventCounted', event: m.to.event, hour: m.to.hour },
        ...condition,
      },
    };
  });
  const rollups: TransactItem[] = deltas
    .filter((d) => d.count !== 0 || (d.xsum ?? 0) !== 0)
    .map(
      ({ key, count, xsum, event }): TransactItem => ({
        Update: {
          TableName: Table,
          Key: key,
          ...(xsum === undefined
            ? {
                UpdateExpression: 'ADD #c :d SET entity = :entity',
                ExpressionAttributeNames: { '#c': 'count' },
                ExpressionAttributeValues: { ':d': count, ':entity': 'Rollup' },
              }
            : {
                UpdateExpression: 'ADD #c :d, xsum :x SET entity = :entity, #e = :e',
                ExpressionAttributeNames: { '#c': 'count', '#e': 'event' },
                ExpressionAttributeValues: { ':d': count, ':x': xsum, ':entity': 'DayCount', ':e': event },
              }),
        },
      }),
    );
  // TransactionConflict: another transaction is writing the same rollup item; back off and retry.
  return retryTransient(
    'Rollup transaction',
    async () => {
      const outcome = await transact([...markers, ...rollups]);
      return outcome.committed || ('conflict' in outcome ? TRANSIENT : false);
    },
    {
      attempts: ROLLUP_ATTEMPTS,
      baseMs: 10,
      capMs: 1_280,
      gaveUp: () => new Error(`rollup transaction kept conflicting after ${ROLLUP_ATTEMPTS} attempts`),
    },
  );
}

const ROLLUP_ATTEMPTS = 8;

/** Hourly counts for one event name (or all events) between two UTC hours inclusive (`YYYY-MM-DDTHH`). */
export async function readRollups(
  projectId: number,
  event: string | null,
  fromHour: string,
  toHour: string,
): Promise<Map<string, number>> {
  const months: string[] = [];
  for (
    let d = new Date(`${fromHour.slice(0, 7)}-01T00:00:00Z`);
    d.toISOString().slice(0, 7) <= toHour.slice(0, 7);
    d.setUTCMonth(d.getUTCMonth() + 1)
  ) {
    months.push(d.toISOString().slice(0, 10));
  }
  const counts = new Map<string, number>();
  await Promise.all(
    months.map(async (month) => {
      const { pk } = keys.rollup(projectId, event, `${month}T00`);
      const items = await queryItems({
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
        ExpressionAttributeValues: { ':pk': pk, ':a': fromHour, ':b': toHour },
      });
      for (const item of items) if (Number(item.count)) counts.set(String(item.sk), Number(item.count));
    }),
  );
  return counts;
}
