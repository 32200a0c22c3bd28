/**
 * The lake's own Parquet encoder (shared/lake/parquet.ts; snappy by snappyjs, shared/lake/snappy.ts), read back by DuckDB
 * cell by cell: text of every shape (nulls, empty, astral and unpaired surrogates, long), times far
 * apart and out of order, dictionaries and their fallback to plain, row groups, the statistics a
 * reader prunes by, and the schema Glue declares (infra/constructs/lake.ts: STRING = BYTE_ARRAY UTF8,
 * TIMESTAMP = INT64 TIMESTAMP_MILLIS), the same as the batch exports' writer gives those types.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { writeParquet } from '#shared/exports/files.ts';
import { type LakeParquetColumn, PlainTextsBuilder, utf8Entries, writeLakeParquet } from '#shared/lake/parquet.ts';
import { type LakeEvent, LAKE_COLUMNS, lakeFiles } from '#shared/lake/rows.ts';
import { snappyCompress } from '#shared/lake/snappy.ts';
import { snappyUncompress } from 'hyparquet/src/snappy.js';
import { snappyCompress as hyparquetSnappy } from 'hyparquet-writer/src/snappy.js';
import { prng } from '../../support/prng.ts';

const duck = await (await DuckDBInstance.create(':memory:')).connect();
afterAll(() => duck.closeSync());

async function withFile<T>(body: Uint8Array, read: (path: string) => Promise<T>): Promise<T> {
  const path = join(tmpdir(), `lake-parquet-${process.pid}-${Math.random().toString(36).slice(2)}.parquet`);
  writeFileSync(path, body);
  try {
    return await read(path);
  } finally {
    rmSync(path, { force: true });
  }
}

const rowsOf = async (sql: string) => (await duck.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];

/** A text column of the encoder from one value a row. */
function textColumn(
  name: string,
  values: (string | null)[],
  options: { required?: boolean; dictionary?: boolean; statistics?: boolean } = {},
): LakeParquetColumn {
  // As rows.ts builds them: a dictionary column's equal texts are one entry, other columns' plain bytes a row.
  const allNull = values.every((v) => v === null);
  const base = {
    name,
    kind: 'text' as const,
    required: options.required ?? false,
    statistics: options.statistics ?? false,
  };
  if (options.dictionary === false) {
    const plain = new PlainTextsBuilder(values.length);
    values.forEach((v, i) => {
      if (v !== null) plain.add(i, v);
    });
    return { ...base, values: allNull ? null : plain.texts() };
  }
  const entries: string[] = [];
  const seen = new Map<string, number>();
  const ids = new Int32Array(values.length);
  values.forEach((v, i) => {
    if (v === null) ids[i] = -1;
    else {
      if (!seen.has(v)) seen.set(v, entries.push(v) - 1);
      ids[i] = seen.get(v)!;
    }
  });
  return { ...base, values: allNull ? null : { encoding: 'dictionary', entries: utf8Entries(entries), ids } };
}

/** What a reader gives back for a JS string: its UTF-8 (an unpaired surrogate is U+FFFD). */
const utf8 = (s: string | null) => (s === null ? null : Buffer.from(s, 'utf8').toString('utf8'));

/** Every cell of `path`, in file order, as text (times as epoch milliseconds). */
async function cells(path: string, columns: LakeParquetColumn[]) {
  const select = columns
    .map((c) => (c.kind === 'millis' ? `epoch_ms("${c.name}")::DOUBLE AS "${c.name}"` : `"${c.name}"`))
    .join(', ');
  return rowsOf(`SELECT ${select} FROM read_parquet('${path}')`);
}

const SHAPES = ['', 'a', 'é', '😀', '\ud800', 'x'.repeat(70), 'long ü '.repeat(2_000), '"q"\\\n', 'Chrome', 'Safari'];

describe('lake Parquet encoder', () => {
  it('reads back every cell: nulls, empty, unicode (astral, unpaired surrogates), long text, one value, all null, one row', async () => {
    const values = [...SHAPES, null, ...SHAPES.slice().reverse(), null, null];
    const n = values.length;
    const columns: LakeParquetColumn[] = [
      textColumn('mixed', values),
      textColumn('plain', values, { dictionary: false }),
      textColumn(
        'required',
        values.map((v) => v ?? 'filled'),
        { required: true },
      ),
      textColumn(
        'one_value',
        values.map(() => 'same'),
      ),
      textColumn(
        'all_null',
        values.map(() => null),
      ),
      {
        name: 'timestamp',
        kind: 'millis',
        values: Float64Array.from(values, (_, i) => 1_700_000_000_000 + i * 997),
        required: true,
        statistics: true,
      },
      {
        name: 'maybe_time',
        kind: 'millis',
        values: Float64Array.from(values, (v, i) => (v === null ? Number.NaN : -5_000 + i)),
        required: false,
        statistics: true,
      },
      {
        name: 'no_time',
        kind: 'millis',
        values: new Float64Array(n).fill(Number.NaN),
        required: false,
        statistics: false,
      },
    ];
    const rows = await withFile(writeLakeParquet(columns, n, 4), (path) => cells(path, columns));
    expect(rows).toHaveLength(n);
    rows.forEach((row, i) => {
      expect(row, `row ${i}`).toEqual({
        mixed: utf8(values[i]!),
        plain: utf8(values[i]!),
        required: utf8(values[i] ?? 'filled'),
        one_value: 'same',
        all_null: null,
        timestamp: 1_700_000_000_000 + i * 997,
        maybe_time: values[i] === null ? null : -5_000 + i,
        no_time: null,
      });
    });
    const one: LakeParquetColumn[] = [
      textColumn('only', ['😀x']),
      { name: 't', kind: 'millis', values: Float64Array.of(-1), required: true, statistics: true },
    ];
    expect(await withFile(writeLakeParquet(one, 1, 10), (path) => cells(path, one))).toEqual([{ only: '😀x', t: -1 }]);
  });

  it('reads back random columns cell by cell (seeded: nulls in runs and scattered, dictionaries of every width, times far apart)', async () => {
    const rng = prng(25);
    let nonVacuous = 0;
    for (let round = 0; round < 12; round += 1) {
      const n = 1 + Math.floor(rng() * 3_000);
      const distinct = 1 + Math.floor(rng() ** 2 * n);
      const nullRate = [0, 0.01, 0.5, 0.99][round % 4]!;
      const texts: (string | null)[] = Array.from({ length: n }, (_, i) =>
        rng() < nullRate || (i % 500 < 20 && round % 3 === 0)
          ? null
          : `${SHAPES[Math.floor(rng() * SHAPES.length)]!.slice(0, 30)}-${Math.floor(rng() * distinct)}`,
      );
      // Millisecond times: close, equal, decreasing, and deltas past 2^32 (years apart).
      let t = -86_400_000 * 365 * 10;
      const times = Float64Array.from({ length: n }, () => {
        const r = rng();
        t +=
          r < 0.1
            ? 0
            : r < 0.2
              ? -Math.floor(rng() * 1e6)
              : r < 0.25
                ? Math.floor(rng() * 2 ** 40)
                : Math.floor(rng() * 5_000);
        return t;
      });
      const columns: LakeParquetColumn[] = [
        textColumn('text', texts, { statistics: true }),
        textColumn('plain', texts, { dictionary: false, statistics: true }),
        { name: 'time', kind: 'millis', values: times, required: true, statistics: true },
        {
          name: 'nullable_time',
          kind: 'millis',
          values: times.map((x, i) => (texts[i] === null ? Number.NaN : x)),
          required: false,
          statistics: true,
        },
      ];
      const rowGroupRows = 1 + Math.floor(rng() * n);
      const { rows, stats, plainStats, timeNulls } = await withFile(
        writeLakeParquet(columns, n, rowGroupRows),
        async (path) => ({
          rows: await cells(path, columns),
          stats: await rowsOf(
            `SELECT stats_min_value AS min, stats_max_value AS max, stats_null_count AS nulls FROM parquet_metadata('${path}') WHERE path_in_schema = 'text' ORDER BY row_group_id`,
          ),
          plainStats: await rowsOf(
            `SELECT stats_min_value AS min, stats_max_value AS max, stats_null_count AS nulls FROM parquet_metadata('${path}') WHERE path_in_schema = 'plain' ORDER BY row_group_id`,
          ),
          timeNulls: await rowsOf(
            `SELECT stats_null_count AS nulls FROM parquet_metadata('${path}') WHERE path_in_schema = 'nullable_time' ORDER BY row_group_id`,
          ),
        }),
      );
      // The time column's nulls are the text's, per row group.
      expect(timeNulls.map((r) => r.nulls)).toEqual(stats.map((r) => r.nulls));
      // The same from plain bytes as from a dictionary.
      expect(plainStats).toEqual(stats);
      // Statistics per row group: min and max in byte order (unsigned UTF-8), nulls counted.
      expect(stats).toEqual(
        Array.from({ length: Math.ceil(n / rowGroupRows) }, (_, g) => {
          const part = texts.slice(g * rowGroupRows, (g + 1) * rowGroupRows);
          const present = part.filter((x) => x !== null).map((x) => Buffer.from(x));
          const sorted = present.sort(Buffer.compare);
          return {
            min: sorted.length ? sorted[0]!.toString() : null,
            max: sorted.length ? sorted.at(-1)!.toString() : null,
            nulls: BigInt(part.length - present.length),
          };
        }),
      );
      expect(rows.map((r) => r.text)).toEqual(texts.map(utf8));
      expect(rows.map((r) => r.plain)).toEqual(texts.map(utf8));
      expect(rows.map((r) => r.time)).toEqual([...times]);
      expect(rows.map((r) => r.nullable_time)).toEqual([...times].map((x, i) => (texts[i] === null ? null : x)));
      if (texts.some((x) => x === null) && texts.some((x) => x !== null) && rowGroupRows < n) nonVacuous += 1;
    }
    expect(nonVacuous).toBeGreaterThanOrEqual(4);
  });

  it('falls back to plain where a row group has more than half distinct values, and keeps a dictionary where they repeat', async () => {
    const n = 1_000;
    const columns: LakeParquetColumn[] = [
      // First row group: 500 rows of 10 values; second: 500 distinct.
      textColumn(
        'url',
        Array.from({ length: n }, (_, i) => (i < 500 ? `/page/${i % 10}` : `/unique/${i}`)),
      ),
    ];
    const groups = await withFile(writeLakeParquet(columns, n, 500), async (path) => ({
      encodings: await rowsOf(`SELECT row_group_id, encodings FROM parquet_metadata('${path}') ORDER BY row_group_id`),
      rows: await cells(path, columns),
    }));
    expect(groups.encodings.map((r) => r.encodings)).toEqual([
      expect.stringContaining('RLE_DICTIONARY'),
      expect.not.stringContaining('DICTIONARY'),
    ]);
    expect(groups.rows.map((r) => r.url)).toEqual(
      Array.from({ length: n }, (_, i) => (i < 500 ? `/page/${i % 10}` : `/unique/${i}`)),
    );
  });

  it('writes a day past ROW_GROUP_ROWS as several row groups sorted by (event, timestamp), with the min/max of event and timestamp per group', async () => {
    const n = 140_000;
    const day = Date.parse('2026-01-05T00:00:00Z');
    const names = ['$pageview', '$autocapture', 'signed up', 'évent 😀'];
    const events: LakeEvent[] = Array.from({ length: n }, (_, i) => ({
      uuid: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      event: names[(i * 7) % names.length]!,
      timestamp: new Date(day + ((i * 7919) % 86_400_000)).toISOString(),
      distinct_id: `user-${i % 300}`,
      person_id: i % 3 ? null : `person-${i % 100}`,
      properties: i % 2 ? { $browser: 'Chrome', n: i } : { $current_url: `https://ex.com/${i}` },
    }));
    const [body, more] = lakeFiles(events);
    expect(more).toBeUndefined();
    await withFile(body!, async (path) => {
      const rows = await rowsOf(`SELECT event, epoch_ms(timestamp)::DOUBLE AS ms, uuid FROM read_parquet('${path}')`);
      const expected = events
        .map((e) => ({ event: e.event, ms: Date.parse(e.timestamp), uuid: e.uuid }))
        .sort((a, b) => (a.event < b.event ? -1 : a.event > b.event ? 1 : a.ms - b.ms));
      expect(rows).toEqual(expected);
      const stats = await rowsOf(
        `SELECT row_group_id AS g, path_in_schema AS col, stats_min_value AS min, stats_max_value AS max, stats_null_count AS nulls, row_group_num_rows AS rows
         FROM parquet_metadata('${path}') WHERE path_in_schema IN ('event', 'timestamp') ORDER BY g, col`,
      );
      const groups = Math.ceil(n / 131_072);
      expect(stats).toHaveLength(groups * 2);
      for (let g = 0; g < groups; g += 1) {
        const part = expected.slice(g * 131_072, (g + 1) * 131_072);
        const texts = part.map((r) => Buffer.from(r.event));
        const byBytes = [...texts].sort(Buffer.compare);
        expect(stats[2 * g]).toMatchObject({
          col: 'event',
          min: byBytes[0]!.toString(),
          max: byBytes.at(-1)!.toString(),
          nulls: 0n,
        });
        const ms = part.map((r) => r.ms);
        const iso = (t: number) => new Date(t).toISOString().replace('T', ' ').replace('Z', '');
        expect(stats[2 * g + 1]).toMatchObject({ col: 'timestamp', nulls: 0n });
        expect(String(stats[2 * g + 1]!.min)).toContain(iso(ms.reduce((a, b) => Math.min(a, b))).slice(0, 19));
        expect(String(stats[2 * g + 1]!.max)).toContain(iso(ms.reduce((a, b) => Math.max(a, b))).slice(0, 19));
      }
      // DuckDB prunes by those statistics: a filter on a group's events reads that group alone.
      const count = await rowsOf(`SELECT count(*)::INT AS c FROM read_parquet('${path}') WHERE event = 'évent 😀'`);
      expect(count[0]!.c).toBe(n / names.length);
    });
  });

  it('declares the lake schema as the batch exports writer does for the same types (what Glue and Athena read)', async () => {
    const schema = async (body: Uint8Array) =>
      withFile(body, (path) =>
        rowsOf(
          `SELECT name, type, converted_type, logical_type FROM parquet_schema('${path}') WHERE name <> 'schema' AND name <> 'root'`,
        ),
      );
    const event: LakeEvent = {
      uuid: '0190f000-0000-7000-8000-000000000001',
      event: 'e',
      timestamp: '2026-01-01T00:00:00.000Z',
      distinct_id: 'd',
      person_id: 'p',
      properties: Object.fromEntries(['$session_id', '$browser'].map((k) => [k, 'v'])),
    };
    const ours = await schema(lakeFiles([event])[0]!);
    const theirs = await schema(
      new Uint8Array(
        writeParquet(
          LAKE_COLUMNS.map(({ name, type }) => ({ name, type, data: [type === 'TIMESTAMP' ? 0 : 'v'] })),
          'SNAPPY',
          1,
        ),
      ),
    );
    expect(ours).toEqual(theirs);
    expect(ours.find((c) => c.name === 'timestamp')).toMatchObject({
      type: 'INT64',
      converted_type: 'TIMESTAMP_MILLIS',
    });
    expect(ours.find((c) => c.name === 'browser')).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
  });

  it('compresses to snappy another decoder reads back, about as small as the compressor it replaced (text, runs and noise)', () => {
    const rng = prng(7);
    for (const size of [0, 1, 14, 15, 16, 61, 300, 70_000, 200_000]) {
      const inputs = [
        Uint8Array.from({ length: size }, () => Math.floor(rng() * 256)),
        new Uint8Array(size).fill(7),
        Uint8Array.from({ length: size }, (_, i) => 97 + ((i * 7 + (i >> 5)) % 8)),
      ];
      for (const input of inputs) {
        const compressed = snappyCompress(input);
        // hyparquet's decoder (what hyparquet reads Parquet pages with): not the compressor's own code.
        const back = new Uint8Array(input.length);
        snappyUncompress(compressed, back);
        expect(Buffer.from(back)).toEqual(Buffer.from(input));
        // snappyjs cuts blocks at 64 KB as Google's compressor does (hyparquet-writer's copy does not): up to
        // ~12% larger on these inputs past 64 KB; the lake's bytes per event are measured in docs/benchmarks.md.
        expect(compressed.length).toBeLessThanOrEqual(Math.ceil(hyparquetSnappy(input).length * 1.15));
      }
    }
  });
});
