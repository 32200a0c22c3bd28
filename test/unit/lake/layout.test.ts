import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataKey, dayPrefix, manifestText, manifestUris, newGeneration, pointerKey } from '#shared/lake/layout.ts';
import { lakeFiles } from '#shared/lake/rows.ts';
import { folderStore } from '#shared/lake/store.ts';

describe('lake layout', () => {
  it("names a day's files and pointer by project and day (Hive partitions Athena projects)", () => {
    const g = newGeneration(new Date('2024-04-18T00:00:00Z'), 'AB12-cd34');
    expect(dataKey(7, '2024-04-18', g, 3)).toBe(`events/project_id=7/day=2024-04-18/${g}-0003.parquet`);
    expect(pointerKey(7, '2024-04-18')).toBe('manifests/events/project_id=7/day=2024-04-18/manifest');
    expect(manifestUris(manifestText(['s3://b/x', 's3://b/y']))).toEqual(['s3://b/x', 's3://b/y']);
    // Later generations sort after earlier ones.
    expect(newGeneration(new Date('2030-01-01T00:00:00Z'), 'a') > g).toBe(true);
  });

  it('refuses any part that could leave the project prefix', () => {
    expect(() => dayPrefix(-1, '2024-04-18')).toThrow();
    expect(() => dayPrefix(1.5, '2024-04-18')).toThrow();
    expect(() => dayPrefix(7, '2024-04-18/../../project_id=8')).toThrow();
    expect(() => pointerKey(7, '../x')).toThrow();
    expect(() => dataKey(7, '2024-04-18', '../g', 0)).toThrow();
  });

  it('a folder store keeps keys inside its folder and hands out only its own keys', async () => {
    const root = await mkdtemp(join(tmpdir(), 'lake-'));
    const store = folderStore(root);
    await expect(store.put('../outside', new Uint8Array(1), 'x')).rejects.toThrow(/outside/);
    await store.put('a/b', Buffer.from('hi'), 'text/plain');
    expect(await store.getText('a/b')).toBe('hi');
    expect(await store.getText('a/missing')).toBeUndefined();
    expect(store.keyOf(store.uri('a/b'))).toBe('a/b');
    expect(store.keyOf('/elsewhere/a/b')).toBeUndefined();
    await store.delete('a/b');
    expect(await store.getText('a/b')).toBeUndefined();
  });
});

describe('lake rows', () => {
  it('keeps a property named __proto__ as data in the JSON column', async () => {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const root = await mkdtemp(join(tmpdir(), 'lake-'));
    const [file] = lakeFiles([
      {
        uuid: 'u',
        event: 'e',
        timestamp: '2024-04-18T10:00:00.000Z',
        distinct_id: 'd',
        person_id: null,
        properties: JSON.parse('{"__proto__": "x", "a": 1}'),
      },
    ]);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(root, 'f.parquet'), file!);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const rows = await (
      await duck.runAndReadAll(`SELECT properties FROM '${join(root, 'f.parquet')}'`)
    ).getRowObjectsJson();
    duck.closeSync();
    expect(JSON.parse(String(rows[0]!.properties))).toEqual(JSON.parse('{"__proto__": "x", "a": 1}'));
  });
});
