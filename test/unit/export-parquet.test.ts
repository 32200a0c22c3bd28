/**
 * Export Parquet files, read back by DuckDB: uuids as 16-byte UUIDs, repeated text dictionary-encoded,
 * unique text plain, the same rows as the JSON Lines file, and issue 24's size (<= half the gzip JSON Lines).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeRows } from '#shared/exports/files.ts';
import { EVENT_COLUMNS } from '#shared/exports/hogql.ts';
import { prng } from '../support/prng.ts';

const duck = await (await DuckDBInstance.create(':memory:')).connect();
afterAll(() => duck.closeSync());

const hex = (rng: () => number, n: number) =>
  Array.from({ length: n }, () => Math.floor(rng() * 16).toString(16)).join('');

/** uuidv7 as capture makes them: milliseconds, a sequence, random bits. */
const uuidv7 = (rng: () => number, ms: number, seq: number) => {
  const t = ms.toString(16).padStart(12, '0');
  return `${t.slice(0, 8)}-${t.slice(8)}-7${(seq & 0xfff).toString(16).padStart(3, '0')}-${'89ab'[Math.floor(rng() * 4)]}${hex(rng, 3)}-${hex(rng, 12)}`;
};

/** The exports benchmark's rows (bench/exports.ts), as the export run hands them to the encoder. */
function rows(count: number): Record<string, unknown>[] {
  const rng = prng(24);
  const start = Date.parse('2026-01-01T08:00:00Z');
  // One person a distinct id, created before the window.
  const persons = Array.from({ length: 500 }, (_, i) => uuidv7(rng, start - 86_400_000 + i * 1000, 0));
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(start + Math.floor((i / count) * 3_600_000)).toISOString();
    return {
      uuid: uuidv7(rng, start + 3_600_000 + Math.floor(i / 100), i % 100),
      event: i % 4 ? '$pageview' : 'signed up',
      distinct_id: `user-${i % 500}`,
      person_id: i % 3 ? persons[i % 500] : null,
      properties: {
        $current_url: `https://example.com/p/${i % 10}`,
        $browser: ['Chrome', 'Firefox'][i % 2],
        amount: i % 5,
      },
      person_properties: {},
      elements_chain: '',
      timestamp: at,
      created_at: at,
      _inserted_at: at,
    };
  });
}

async function read(body: Buffer) {
  const path = join(tmpdir(), `export-parquet-${process.pid}-${Math.random().toString(36).slice(2)}.parquet`);
  writeFileSync(path, body);
  try {
    const schema = Object.fromEntries(
      (
        (
          await duck.runAndReadAll(
            `SELECT name, type, logical_type FROM parquet_schema('${path}') WHERE name <> 'duckdb_schema'`,
          )
        ).getRowObjectsJS() as { name: string; type: string; logical_type: string | null }[]
      ).map((r) => [r.name, `${r.type}${r.logical_type ? ` ${r.logical_type}` : ''}`]),
    );
    const encodings = Object.fromEntries(
      (
        (
          await duck.runAndReadAll(
            `SELECT path_in_schema AS name, string_agg(DISTINCT encodings) AS encodings FROM parquet_metadata('${path}') GROUP BY 1`,
          )
        ).getRowObjectsJS() as { name: string; encodings: string }[]
      ).map((r) => [r.name, r.encodings]),
    );
    const reader = await duck.runAndReadAll(`SELECT * FROM read_parquet('${path}')`);
    const types = Object.fromEntries(reader.columnNames().map((n, i) => [n, String(reader.columnTypes()[i])]));
    return { schema, encodings, types, rows: reader.getRowObjectsJS() as Record<string, unknown>[] };
  } finally {
    rmSync(path, { force: true });
  }
}

describe('export Parquet files', () => {
  it('write canonical uuids as 16-byte UUIDs that read back as the exported text, repeated text with a dictionary, unique text plain', async () => {
    const input = rows(2_000).map((r, i) =>
      i % 10 ? r : { ...r, properties: { unique: i, ...(r.properties as object) } },
    );
    const file = await read(encodeRows(input, EVENT_COLUMNS, 'Parquet', 'snappy').body);
    expect(file.schema.uuid).toMatch(/^FIXED_LEN_BYTE_ARRAY UUID/);
    expect(file.schema.person_id).toMatch(/^FIXED_LEN_BYTE_ARRAY UUID/);
    expect(file.types).toMatchObject({
      uuid: 'UUID',
      person_id: 'UUID',
      distinct_id: 'VARCHAR',
      properties: 'VARCHAR',
    });
    expect(file.encodings.uuid).toBe('PLAIN');
    expect(file.encodings.person_id).toContain('RLE_DICTIONARY');
    expect(file.encodings.distinct_id).toContain('RLE_DICTIONARY');
    expect(file.encodings.event).toContain('RLE_DICTIONARY');
    expect(file.encodings.properties).toContain('RLE_DICTIONARY');
    const back = file.rows.map((r) => ({
      ...r,
      properties: JSON.parse(String(r.properties)),
      person_properties: JSON.parse(String(r.person_properties)),
      timestamp: (r.timestamp as Date).toISOString(),
      created_at: (r.created_at as Date).toISOString(),
      _inserted_at: (r._inserted_at as Date).toISOString(),
    }));
    expect(back).toEqual(input);

    // Properties that never repeat: plain, as a dictionary would only add its indexes.
    const unique = input.map((r, i) => ({ ...r, properties: { n: i } }));
    expect((await read(encodeRows(unique, EVENT_COLUMNS, 'Parquet', 'snappy').body)).encodings.properties).toBe(
      'PLAIN',
    );
  });

  it('keeps uuids that are not canonical (upper case, no dashes) as the text they were', async () => {
    const input = [
      { uuid: '0190F000-0000-7000-8000-000000000001', n: 1 },
      { uuid: '0190f000000070008000000000000002', n: 2 },
    ];
    const file = await read(encodeRows(input, ['uuid', 'n'], 'Parquet', 'snappy').body);
    expect(file.types.uuid).toBe('VARCHAR');
    expect(file.rows.map((r) => r.uuid)).toEqual(input.map((r) => r.uuid));
  });

  it('are at most half the gzip JSON Lines file of the same window, in the default and common codecs', () => {
    const window = rows(20_000);
    const jsonl = encodeRows(window, EVENT_COLUMNS, 'JSONLines', 'gzip').body.length;
    for (const codec of ['snappy', 'gzip', 'brotli'] as const) {
      const parquet = encodeRows(window, EVENT_COLUMNS, 'Parquet', codec).body.length;
      expect(parquet / jsonl, codec).toBeLessThanOrEqual(0.5);
    }
  });
});
