/**
 * The lake writer's row building (shared/lake/rows.ts), read back by DuckDB: the same values as the
 * events hold (times, text of every script, the JSON of the other properties, byte for byte what
 * JSON.stringify writes), and text encoded by what it holds: repeated values with a dictionary.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { type LakeEvent, lakeFiles, PROPERTY_COLUMNS } from '#shared/lake/rows.ts';
import { prng } from '../../support/prng.ts';

const duck = await (await DuckDBInstance.create(':memory:')).connect();
afterAll(() => duck.closeSync());

const read = (events: LakeEvent[]) => readFile(lakeFiles(events)[0]!);

async function readFile(body: Uint8Array) {
  const path = join(tmpdir(), `lake-rows-${process.pid}-${Math.random().toString(36).slice(2)}.parquet`);
  writeFileSync(path, body);
  try {
    const rows = (
      await duck.runAndReadAll(
        `SELECT uuid, event, epoch_ms(timestamp)::DOUBLE AS ms, distinct_id, person_id, epoch_ms(person_created_at)::DOUBLE AS person_created_ms, current_url, browser, properties FROM read_parquet('${path}')`,
      )
    ).getRowObjectsJS() as Record<string, unknown>[];
    const encodings = Object.fromEntries(
      (
        (
          await duck.runAndReadAll(
            `SELECT path_in_schema AS name, string_agg(DISTINCT encodings) AS encodings FROM parquet_metadata('${path}') GROUP BY 1`,
          )
        ).getRowObjectsJS() as { name: string; encodings: string }[]
      ).map((r) => [r.name, r.encodings]),
    );
    return { rows, encodings };
  } finally {
    rmSync(path, { force: true });
  }
}

/** What the JSON column must hold: JSON.stringify of the properties without a column of their own. */
const restJson = (properties: Record<string, unknown>) =>
  JSON.stringify(Object.fromEntries(Object.entries(properties).filter(([k]) => !Object.hasOwn(PROPERTY_COLUMNS, k))));

describe('lake rows', () => {
  it("hold the events as they were: times in every ISO form (the person's creation too), text in any script, the other properties as JSON.stringify writes them", async () => {
    const odd = [
      JSON.parse(
        '{"__proto__": {"x": 1}, "2": "two", "a": "é\\u2028\\"q\\"", "1": [1, null, {"b": true}], "$browser": 7}',
      ),
      { emoji: '😀 \ud800', n: -0.5, big: 1e21, $current_url: 'https://ex.com/ü' },
      { undef: undefined, kept: 'x', fn: () => 1, sym: Symbol('s') },
      {},
      { $current_url: null, nested: { deep: { deeper: ['z'] } } },
    ];
    const times = [
      '2026-03-29T00:59:59.999Z',
      '2026-03-29T01:00:00Z',
      '2026-03-29T02:30:00.000+02:00',
      '2026-03-29T23:59:59.000Z',
      '2026-03-30T00:00:00.001Z',
    ];
    const events: LakeEvent[] = odd.map((properties, i) => ({
      uuid: `0190f000-0000-7000-8000-00000000000${i}`,
      event: `évent ${i}`,
      timestamp: times[i]!,
      distinct_id: `user-ü-${i}`,
      person_id: i % 2 ? `0190f000-0000-7000-9000-00000000000${i}` : null,
      // Years before the day, with milliseconds; none without a person.
      person_created_at: i % 2 ? Date.parse(`2019-0${i}-1${i}T23:59:59.99${i}Z`) : null,
      properties,
    }));
    const { rows } = await read(events);
    const byUuid = new Map(rows.map((r) => [String(r.uuid), r]));
    for (const [i, e] of events.entries()) {
      const row = byUuid.get(e.uuid)!;
      expect(row, e.uuid).toMatchObject({
        event: e.event,
        ms: Date.parse(e.timestamp),
        distinct_id: e.distinct_id,
        person_id: e.person_id,
        person_created_ms: e.person_created_at,
      });
      expect(String(row.properties), `event ${i}`).toBe(restJson(e.properties));
    }
    expect(byUuid.get(events[0]!.uuid)!.browser).toBe('7');
    expect(byUuid.get(events[1]!.uuid)!.current_url).toBe('https://ex.com/ü');
    expect(byUuid.get(events[4]!.uuid)!.current_url).toBe(null);
  });

  it('dictionary-encodes text that repeats (a few hundred urls over thousands of events) and writes unique text plain', async () => {
    const events: LakeEvent[] = Array.from({ length: 4_000 }, (_, i) => ({
      uuid: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      event: '$pageview',
      timestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
      distinct_id: `user-${i % 300}`,
      person_id: null,
      properties: { $current_url: `https://example.com/${i % 200}`, $browser: 'Chrome', n: i },
    }));
    const { rows, encodings } = await read(events);
    expect(rows).toHaveLength(4_000);
    expect(encodings.current_url).toContain('RLE_DICTIONARY');
    expect(encodings.distinct_id).toContain('RLE_DICTIONARY');
    expect(encodings.uuid).toBe('PLAIN');
    expect(encodings.properties).toBe('PLAIN');
    expect(rows.find((r) => r.uuid === events[1234]!.uuid)).toMatchObject({
      current_url: 'https://example.com/34',
      properties: '{"n":1234}',
    });
  });

  it('keeps every cell of a column that starts repeating and turns unique past half the day (nulls between), whatever order the events come in', async () => {
    const rng = prng(7);
    const n = 3_000;
    const events: LakeEvent[] = Array.from({ length: n }, (_, i) => ({
      uuid: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      event: i % 7 === 0 ? 'signed up' : '$pageview',
      timestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
      distinct_id: `user-${i % 300}`,
      person_id: null,
      properties: i % 3 === 0 ? {} : { $current_url: i < 500 ? `/p/${i % 5}` : `/unique/${i}/é` },
    }));
    // Shuffled: the writer's order is the file's (event, timestamp), not the input's.
    for (let i = n - 1; i > 0; i -= 1) {
      const j = Math.floor(rng() * (i + 1));
      [events[i], events[j]] = [events[j]!, events[i]!];
    }
    const { rows, encodings } = await read(events);
    expect(encodings.current_url).not.toContain('DICTIONARY');
    const byUuid = new Map(rows.map((r) => [r.uuid, r.current_url]));
    for (const e of events)
      expect(byUuid.get(e.uuid), e.uuid).toBe((e.properties.$current_url as string | undefined) ?? null);
  });

  it("keeps each day's file its own when days are written one after another (the writer reuses its buffers from day to day)", async () => {
    const day = (n: number, tag: string): LakeEvent[] =>
      Array.from({ length: n }, (_, i) => ({
        uuid: `${tag}-${String(i).padStart(8, '0')}`,
        event: '$pageview',
        timestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
        distinct_id: `${tag}-user-${i % 40}`,
        person_id: null,
        properties: { $current_url: `/${tag}/${i % 9}`, note: `${tag} ${i}` },
      }));
    const first = day(2_000, 'first');
    const [firstBody] = lakeFiles(first);
    // A larger day then a smaller one: written into the buffers the first day's file came from.
    lakeFiles(day(5_000, 'second'));
    const [thirdBody] = lakeFiles(day(300, 'third'));
    for (const [body, events] of [
      [firstBody!, first],
      [thirdBody!, day(300, 'third')],
    ] as const) {
      const { rows } = await readFile(body);
      expect(rows.map((r) => [r.uuid, r.distinct_id, r.current_url, r.properties])).toEqual(
        events.map((e) => [e.uuid, e.distinct_id, e.properties.$current_url, restJson(e.properties)]),
      );
    }
  });
});
