// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';

import { randomUUID } from 'node:crypto';
import { DeleteCommand, UpdateCommand } from '#shared/aws/dynamodb.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '#shared/db/client.ts';
import { eventItem, putEventItems } from '#shared/db/events.ts';
import { keys } from '#shared/db/keys.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { dueCompactions, getCompactionMarker, readEventDay } from '#shared/db/segments.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { eventually, newProject, useApi, type Client } from '../support/api.ts';
import { withItemsRead } from '../support/items-read.ts';

/**
 * Two projects receive the same events; only one is compacted. Every answer of the compacted one
 * must equal the raw one's, whichever path each day takes (segments, segments topped up with later
 * events, or raw after a deletion).
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
const DAYS = ['2024-04-17', '2024-04-18', '2024-04-19', '2024-04-20'];

interface Twin {
  c: Client;
  projectId: number;
  token: string;
  path: string;
}

async function twin(): Promise<Twin> {
  const p = await newProject(api.as);
  return {
    c: api.as(p.key),
    projectId: p.projectId,
    token: p.token,
    path: `/api/environments/${p.projectId}/insights/trend/?refresh=true`,
  };
}

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23')).values()].reduce((a, b) => a + b, 0);

const browsers = ['Chrome', 'Safari', 'Firefox'];
const batch = Array.from({ length: 60 }, (_, i) => ({
  event: ['$pageview', '$pageview', 'signed up', '$autocapture'][i % 4],
  distinct_id: `user-${i % 7}`,
  timestamp: new Date(Date.parse('2024-04-17T00:30:00Z') + i * 97 * 60_000).toISOString(),
  uuid: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  properties: {
    $browser: browsers[i % 3],
    ...(i % 5 ? { $os: i % 2 ? 'iOS' : 'Windows' } : {}),
    amount: i,
    $session_id: `s-${i % 9}`,
  },
}));
batch.push({
  event: '$identify',
  distinct_id: 'user-1',
  timestamp: '2024-04-19T10:00:00Z',
  uuid: randomUUID(),
  properties: { $anon_distinct_id: 'user-2' } as never,
});

const QUERIES: Record<string, unknown>[] = [
  {
    events: [{ id: '$pageview', properties: [{ key: '$browser', operator: 'exact', value: ['Chrome', 'Firefox'] }] }],
    breakdown: '$os',
    date_from: '-7d',
  },
  {
    events: [
      { id: '$pageview', math: 'dau' },
      { id: 'signed up', math: 'sum', math_property: 'amount' },
    ],
    date_from: '-3d',
    interval: 'hour',
  },
  {
    events: [{ id: null, properties: [{ key: 'amount', operator: 'gt', value: 10 }] }],
    breakdown: '$browser',
    date_from: '2024-04-18T06:00:00',
    date_to: '2024-04-19T18:00:00',
  },
  {
    events: [{ id: '$pageview' }],
    breakdown: '$session_duration',
    breakdown_type: 'session',
    date_from: '-7d',
    display: 'ActionsTable',
  },
];

async function answers(t: Twin): Promise<{ sources: (string | null)[]; results: unknown[]; timing: string[] }> {
  const replies = await Promise.all(QUERIES.map((q) => t.c.post(t.path, q)));
  for (const r of replies) expect(r.status).toBe(200);
  return {
    sources: replies.map((r) => r.headers.get('x-trend-source')),
    results: replies.map((r) => r.body.result),
    timing: replies.map((r) => r.headers.get('server-timing') ?? ''),
  };
}

/** What DynamoDB hands back while `run` runs: day counters, segment chunks, the bytes of their columns and the days those came from. */
async function segmentBytesRead<T extends { timing?: string[] }>(
  run: () => Promise<T>,
): Promise<{
  result: T;
  chunks: number;
  counters: number;
  columnBytes: number;
  columnDays: Set<string>;
  timing: string[];
}> {
  let chunks = 0;
  let counters = 0;
  let columnBytes = 0;
  const columnDays = new Set<string>();
  const result = await withItemsRead((item) => {
    if (item.entity === 'DayCount') counters += 1;
    if (item.entity !== 'EventSegment') return;
    chunks += 1;
    const bytes = Object.values(item).reduce<number>((n, v) => n + (v instanceof Uint8Array ? v.byteLength : 0), 0);
    columnBytes += bytes;
    if (bytes) columnDays.add(String(item.pk).slice(-10));
  }, run);
  return { result, chunks, counters, columnBytes, columnDays, timing: result.timing ?? [] };
}

describe('trends from compacted segments', () => {
  let compacted: Twin;
  let raw: Twin;
  beforeAll(async () => {
    [compacted, raw] = [await twin(), await twin()];
    for (const t of [compacted, raw])
      expect((await api.as().post('/batch', { api_key: t.token, batch })).body.accepted).toBe(batch.length);
    await eventually(
      async () =>
        expect([await total(compacted.projectId), await total(raw.projectId)]).toEqual([batch.length, batch.length]),
      20_000,
    );
    // The ingest worker marks the changed days after it counts them (shared/domain/ingest.ts): wait for the marks too.
    const days = [...new Set(batch.map((e) => new Date(e.timestamp).toISOString().slice(0, 10)))];
    await eventually(async () => {
      for (const t of [compacted, raw])
        for (const day of days) expect((await getCompactionMarker(t.projectId, day))?.touches).toBeGreaterThan(0);
    }, 20_000);
  });

  it('the ingest worker keeps day counters and marks changed days for compaction', async () => {
    const day = await readEventDay(compacted.projectId, '2024-04-18', '$pageview', null);
    const expected = batch.filter((e) => e.event === '$pageview' && e.timestamp.startsWith('2024-04-18')).length;
    expect(day.counts.get('$pageview')?.count).toBe(expected);
    expect(day.segments.size).toBe(0);
    const marker = await getCompactionMarker(compacted.projectId, '2024-04-18');
    expect(marker?.touches).toBeGreaterThan(0);
    // Due ten minutes after the worker's (real) clock saw the change, not before.
    const due = (at: number) =>
      dueCompactions(new Date(at)).then((list) =>
        list.some((d) => d.projectId === compacted.projectId && d.day === '2024-04-18'),
      );
    expect(await due(Date.now() - 60_000)).toBe(false);
    expect(await due(Date.now() + 11 * 60_000)).toBe(true);
  });

  it('answers from segments once compacted, with exactly the raw numbers', async () => {
    const before = await answers(compacted);
    expect(before.sources).toEqual(['events', 'events', 'events', 'events']);
    for (const day of DAYS) {
      const result = await compactDay(compacted.projectId, day, new Date(NOW + 70_000));
      expect(result.complete).toBe(true);
      expect(await getCompactionMarker(compacted.projectId, day)).toBeUndefined();
    }
    const after = await answers(compacted);
    const reference = await answers(raw);
    expect(after.sources).toEqual(['segments', 'segments', 'segments', 'segments']);
    expect(reference.sources).toEqual(['events', 'events', 'events', 'events']);
    expect(after.results).toEqual(reference.results);
    expect(after.results).toEqual(before.results);
    // Not vacuous: the breakdown has rows with counts.
    expect((after.results[0] as { count: number }[]).reduce((n, r) => n + r.count, 0)).toBeGreaterThan(5);
  });

  it('a warm container transfers compacted columns once: later trends read the day counters only, a rebuilt day again', async () => {
    // The answers above read every compacted day with its columns, and this process kept them.
    const warm = await segmentBytesRead(() => answers(compacted));
    const reference = await answers(raw);
    expect(warm.result.results).toEqual(reference.results);
    expect(warm.result.sources).toEqual(['segments', 'segments', 'segments', 'segments']);
    expect(warm.counters).toBeGreaterThan(0);
    expect(warm.chunks).toBe(0);
    expect(warm.timing[0]).toMatch(/desc="\d+ days; (\d+) of \1 segments in memory"/);

    await compactDay(compacted.projectId, '2024-04-18', new Date(NOW + 75_000));
    const rebuilt = await segmentBytesRead(() => answers(compacted));
    expect(rebuilt.result.results).toEqual(reference.results);
    expect(rebuilt.columnDays).toEqual(new Set(['2024-04-18']));
    expect(rebuilt.columnBytes).toBeGreaterThan(0);
    expect(rebuilt.timing[0]).toMatch(/desc="\d+ days; (\d+) of (\d+) segments in memory"/);
    const [, inMemory, read] = /(\d+) of (\d+) segments in memory/.exec(rebuilt.timing[0]!)!;
    expect(Number(inMemory)).toBe(Number(read) - 1);
  });

  it('a recompaction replaces the previous build, and a build split in chunks reads the same', async () => {
    const before = (await readEventDay(compacted.projectId, '2024-04-18', '$pageview', null)).segments.get(
      '$pageview',
    )!;
    await compactDay(compacted.projectId, '2024-04-18', new Date(NOW + 80_000), { chunkBytes: 100 });
    const day = await readEventDay(compacted.projectId, '2024-04-18', '$pageview', null);
    const after = day.segments.get('$pageview')!;
    expect(after.build).not.toBe(before.build);
    expect(after.chunks.length).toBeGreaterThan(2);
    expect(day.segmentChunks.get('$pageview')).toHaveLength(after.chunks.length);
    const chunked = await answers(compacted);
    expect(chunked.sources[0]).toBe('segments');
    expect(chunked.results).toEqual((await answers(raw)).results);
    // Back to one chunk: the extra chunks of the split build are removed.
    await compactDay(compacted.projectId, '2024-04-18', new Date(NOW + 85_000));
    expect(
      (await readEventDay(compacted.projectId, '2024-04-18', '$pageview', null)).segmentChunks.get('$pageview'),
    ).toHaveLength(1);
  });

  it('reads a day raw when its chunks come from two builds (an interrupted rewrite)', async () => {
    await compactDay(compacted.projectId, '2024-04-18', new Date(NOW + 86_000), { chunkBytes: 100 });
    const key = keys.daySegment(compacted.projectId, '2024-04-18', '$pageview', 1);
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET #b = :b',
        ExpressionAttributeNames: { '#b': 'build' },
        ExpressionAttributeValues: { ':b': 'older-build' },
      }),
    );
    const torn = await answers(compacted);
    expect(torn.sources[0]).toBe('segments+events');
    expect(torn.results).toEqual((await answers(raw)).results);
    await compactDay(compacted.projectId, '2024-04-18', new Date(NOW + 87_000));
    expect((await answers(compacted)).sources[0]).toBe('segments');
  });

  it('tops segments up with events ingested after the compaction (late events), still exact', async () => {
    const late = (projectId: number, i: number) =>
      eventItem({
        uuid: `0190f000-0000-7000-9000-${String(i).padStart(12, '0')}`,
        event: '$pageview',
        distinct_id: 'user-3',
        project_id: projectId,
        properties: { $browser: 'Chrome', $os: 'Linux', amount: 1000 + i },
        timestamp: `2024-04-18T1${i}:15:00.000Z`,
        // After the last compaction's horizon (now - 1 min = NOW + 20 s), within a minute of the frozen clock.
        inserted_at: new Date(NOW + 30_000).toISOString(),
      });
    // Stored with capture's own write (not POST /batch): capture would stamp inserted_at with the frozen clock, before the compaction.
    for (const t of [compacted, raw]) await putEventItems([late(t.projectId, 1), late(t.projectId, 2)]);
    await eventually(
      async () =>
        expect([await total(compacted.projectId), await total(raw.projectId)]).toEqual([
          batch.length + 2,
          batch.length + 2,
        ]),
      20_000,
    );
    const after = await answers(compacted);
    const reference = await answers(raw);
    expect(after.sources[0]).toBe('segments');
    expect(after.results).toEqual(reference.results);
    expect(JSON.stringify(after.results[0])).toContain('Linux');
  });

  it('falls back to the raw day when an event is deleted, and a recompaction makes the day whole again', async () => {
    const gone = batch.find(
      (e) =>
        e.event === '$pageview' &&
        e.timestamp.startsWith('2024-04-19') &&
        ['Chrome', 'Firefox'].includes(String(e.properties.$browser)),
    )!;
    // What the deferred person-event deletion does to each event item; the stream takes it out of the counters.
    for (const t of [compacted, raw])
      await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.event(t.projectId, gone.uuid) }));
    await eventually(
      async () =>
        expect([await total(compacted.projectId), await total(raw.projectId)]).toEqual([
          batch.length + 1,
          batch.length + 1,
        ]),
      20_000,
    );
    const stale = await answers(compacted);
    const reference = await answers(raw);
    expect(stale.sources[0]).toBe('segments+events');
    expect(stale.results).toEqual(reference.results);
    await compactDay(compacted.projectId, '2024-04-19', new Date(NOW + 10 * 60_000));
    await compactDay(compacted.projectId, '2024-04-18', new Date(NOW + 10 * 60_000));
    const whole = await answers(compacted);
    expect(whole.sources).toEqual(['segments', 'segments', 'segments', 'segments']);
    expect(whole.results).toEqual(reference.results);
  });
});
