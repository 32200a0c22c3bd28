import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DUCKDB_MEMORY_LIMIT,
  DUCKDB_THREADS,
  duckdbEngine,
  LakeAccessDenied,
  openDuckdbSandbox,
} from '#shared/lake/engine.ts';
import { dataKey } from '#shared/lake/layout.ts';
import { type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';

/**
 * The second wall, DuckDB's side: hand-written hostile SQL (not printed by the printer) run against
 * the engine object directly, and against the bare sandbox, where only DuckDB's own checks stand.
 * Project 7 is the caller; project 70 (a name that starts like 7's) and 8 are the others.
 */
const P = 7;
const ROOT = mkdtempSync(join(tmpdir(), 'lake-sandbox-'));
const OUTSIDE = mkdtempSync(join(tmpdir(), 'lake-sandbox-outside-'));
const SECRET = join(OUTSIDE, 'secret.txt');
const engine = duckdbEngine(ROOT);

const event = (project: number, i: number): LakeEvent => ({
  uuid: `0190f100-0000-7000-8000-${String(project * 1000 + i).padStart(12, '0')}`,
  event: project === P ? 'ours' : 'theirs',
  timestamp: `2024-03-02T0${i}:00:00.000Z`,
  distinct_id: `p${project}-u${i}`,
  person_id: null,
  properties: { email: `user${i}@project${project}.io` },
});

function writeDay(project: number, count: number, generation = 'g1'): string {
  const path = join(ROOT, dataKey(project, '2024-03-02', generation, 0));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, lakeFiles(Array.from({ length: count }, (_, i) => event(project, i)))[0]!);
  return path;
}

let own: string;
let other: string;
let prefixTwin: string;
beforeAll(() => {
  own = writeDay(P, 3);
  other = writeDay(8, 4);
  prefixTwin = writeDay(70, 5);
  writeFileSync(SECRET, 'root:x:0:0\n');
});

const run = (sql: string, project = P) => engine.run(project, sql, () => {}, Date.now() + 60_000);
const ownDir = () => join(ROOT, 'events', `project_id=${P}`);

/** Each attack, and what DuckDB itself answers in the bare sandbox (no check of ours in front of it). */
const ATTACKS = (): { name: string; sql: string; duckdb: RegExp }[] => [
  {
    // The attack as the printer printed it: `(--7)` opened a comment, a newline in a string ended it.
    name: 'the original attack: another project rows UNIONed in',
    sql: `SELECT "event", "properties" FROM read_parquet(['${own}']) WHERE "project_id" = ${P} AND (--7) > 0 AND "event" = '
1 = 1) UNION ALL SELECT "event", "properties" FROM read_parquet(['${other}']) WHERE ('' = '') --'`,
    duckdb: /^Permission Error: Cannot access file/,
  },
  {
    name: 'the original attack: a local file UNIONed in',
    sql: `SELECT "event" FROM read_parquet(['${own}']) UNION ALL SELECT content FROM read_text('${SECRET}')`,
    duckdb: /^Permission Error: Cannot access file/,
  },
  {
    name: 'the original attack: several statements, one writing a file',
    sql: `SELECT 1; COPY (SELECT * FROM read_parquet(['${own}'])) TO '${join(OUTSIDE, 'copied.csv')}'`,
    duckdb: /Cannot prepare multiple statements at once/,
  },
  { name: 'read_text', sql: `SELECT * FROM read_text('${SECRET}')`, duckdb: /^Permission Error/ },
  { name: 'read_csv', sql: `SELECT * FROM read_csv('${SECRET}')`, duckdb: /^Permission Error/ },
  { name: 'read_blob', sql: `SELECT * FROM read_blob('/etc/hostname')`, duckdb: /^Permission Error/ },
  { name: 'glob of the lake', sql: `SELECT * FROM glob('${ROOT}/events/*/*/*')`, duckdb: /^Permission Error/ },
  { name: 'glob of the disk', sql: `SELECT * FROM glob('/*')`, duckdb: /^Permission Error/ },
  {
    name: 'COPY … TO a file',
    sql: `COPY (SELECT 1) TO '${join(OUTSIDE, 'out.csv')}'`,
    duckdb: /^Permission Error/,
  },
  { name: 'ATTACH a database file', sql: `ATTACH '${join(OUTSIDE, 'x.db')}' AS x`, duckdb: /^Permission Error/ },
  { name: 'SET', sql: 'SET enable_external_access = true', duckdb: /the configuration has been locked/ },
  { name: 'RESET', sql: 'RESET lock_configuration', duckdb: /the configuration has been locked/ },
  { name: 'PRAGMA', sql: "PRAGMA memory_limit = '64GB'", duckdb: /the configuration has been locked/ },
  { name: 'SET threads', sql: 'SET threads = 64', duckdb: /the configuration has been locked/ },
  { name: 'INSTALL', sql: 'INSTALL httpfs', duckdb: /^Permission Error/ },
  { name: 'LOAD', sql: 'LOAD httpfs', duckdb: /^Permission Error/ },
  {
    name: 'a URL',
    sql: `SELECT * FROM read_parquet('https://example.com/x.parquet')`,
    duckdb: /^Permission Error/,
  },
  {
    name: ';-chained statements',
    sql: `SELECT * FROM read_parquet(['${own}']); SELECT * FROM read_text('${SECRET}')`,
    duckdb: /Cannot prepare multiple statements at once/,
  },
  {
    name: "another project's lake file by path",
    sql: `SELECT * FROM read_parquet('${other}')`,
    duckdb: /^Permission Error/,
  },
  {
    name: "project 70's file (its folder's name starts with project 7's)",
    sql: `SELECT * FROM read_parquet('${prefixTwin}')`,
    duckdb: /^Permission Error/,
  },
  {
    name: "another project's file through ..",
    sql: `SELECT * FROM read_parquet('${ownDir()}/../project_id=8/day=2024-03-02/g1-0000.parquet')`,
    duckdb: /^Permission Error/,
  },
  {
    name: "every project's files by glob",
    sql: `SELECT * FROM read_parquet('${ROOT}/events/*/*/*.parquet')`,
    duckdb: /^Permission Error/,
  },
];

describe('the DuckDB engine refuses hostile SQL for a project (hand-written, not printed)', () => {
  it.each(ATTACKS().map((a) => [a.name, a] as const))('%s: refused, a 403', async (_, attack) => {
    const refused = await run(attack.sql).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LakeAccessDenied);
    expect(refused).toMatchObject({ status: 403, code: 'permission_denied' });
    // Our paths are not echoed back.
    expect((refused as Error).message).not.toContain(ROOT);
    expect((refused as Error).message).not.toContain(OUTSIDE);
  });

  it('nothing was written, and the secret never came back', () => {
    for (const file of ['copied.csv', 'out.csv', 'x.db']) expect(existsSync(join(OUTSIDE, file))).toBe(false);
  });

  it('COPY, CREATE and ATTACH that DuckDB would allow inside the sandbox are refused before they run: one SELECT only', async () => {
    const inside = join(ownDir(), 'written.csv');
    for (const sql of [
      `COPY (SELECT 1) TO '${inside}'`,
      'CREATE TABLE t AS SELECT 1',
      "ATTACH ':memory:' AS scratch",
      'CREATE MACRO m() AS 1',
    ]) {
      const refused = await run(sql).catch((e: unknown) => e);
      expect([sql, refused]).toEqual([sql, expect.any(LakeAccessDenied)]);
      expect((refused as Error).message).toContain('other than one SELECT');
    }
    expect(existsSync(inside)).toBe(false);
  });
});

describe("DuckDB itself refuses them (the bare sandbox: DuckDB's own checks, nothing of ours in front)", () => {
  let sandbox: Awaited<ReturnType<typeof openDuckdbSandbox>>;
  beforeAll(async () => {
    sandbox = await openDuckdbSandbox(ROOT, P);
  });
  afterAll(() => sandbox.closeSync());

  it.each(ATTACKS().map((a) => [a.name, a] as const))('%s', async (_, attack) => {
    const connection = await sandbox.connect();
    try {
      const refused = await connection
        .prepare(attack.sql)
        .then((statement) => statement.run())
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(refused).toBeInstanceOf(Error);
      expect((refused as Error).message).toMatch(attack.duckdb);
    } finally {
      connection.closeSync();
    }
  });

  it('the attacks are real: an unsandboxed DuckDB answers them with the other project rows and the local file', async () => {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const open = await DuckDBInstance.create(':memory:');
    const connection = await open.connect();
    try {
      const [rows, file] = ATTACKS().slice(0, 2);
      const leaked = (await connection.runAndReadAll(rows!.sql)).getRowObjectsJson();
      expect(leaked.filter((r) => r.event === 'theirs')).toHaveLength(4);
      const read = (await connection.runAndReadAll(file!.sql)).getRowObjectsJson();
      expect(read.map((r) => r.event)).toContain('root:x:0:0\n');
    } finally {
      connection.closeSync();
      open.closeSync();
    }
  });

  it("where DuckDB alone is not enough: a COPY into the project's own folder (hence the engine's one-SELECT rule)", async () => {
    const connection = await sandbox.connect();
    const inside = join(ownDir(), 'bare-sandbox.csv');
    await (await connection.prepare(`COPY (SELECT 1) TO '${inside}'`)).run();
    connection.closeSync();
    expect(existsSync(inside)).toBe(true);
  });
});

describe("the project's own files still read, through the same sandbox", () => {
  it('reads its rows (3 events of project 7), and only with its own project id', async () => {
    const rows = await run(`SELECT count(*) AS n, min("event") AS e FROM read_parquet(['${own}'])`);
    expect(rows).toEqual([{ n: '3', e: 'ours' }]);
    // Project 8's engine call reads project 8's file (its own sandbox) and is refused project 7's.
    expect(await run(`SELECT count(*) AS n FROM read_parquet(['${other}'])`, 8)).toEqual([{ n: '4' }]);
    await expect(run(`SELECT count(*) AS n FROM read_parquet(['${own}'])`, 8)).rejects.toThrow(LakeAccessDenied);
  });

  it('a day file written after the sandbox opened reads too (the folder is allowed, not a list of files)', async () => {
    await run(`SELECT count(*) FROM read_parquet(['${own}'])`);
    const later = writeDay(P, 2, 'g2');
    expect(await run(`SELECT count(*) AS n FROM read_parquet(['${own}', '${later}'])`)).toEqual([{ n: '5' }]);
  });

  it('runs locked, without external access, with its memory and thread caps', async () => {
    const settings = await run(
      "SELECT current_setting('enable_external_access') AS external, current_setting('lock_configuration') AS locked, current_setting('threads') AS threads, current_setting('autoload_known_extensions') AS autoload, current_setting('autoinstall_known_extensions') AS autoinstall, current_setting('temp_directory') AS temp, current_setting('memory_limit') AS memory",
    );
    expect(settings).toEqual([
      {
        external: 'false',
        locked: 'true',
        threads: String(DUCKDB_THREADS),
        autoload: 'false',
        autoinstall: 'false',
        temp: '',
        memory: expect.stringMatching(/^(953\.6 MiB|1\.0 GiB)$/),
      },
    ]);
    expect(DUCKDB_MEMORY_LIMIT).toBe('1GB');
  });

  it('keeps working past its sandbox cache: evicted projects reopen', async () => {
    for (let project = 100; project < 120; project++)
      expect(await run('SELECT 1 AS one', project)).toEqual([{ one: '1' }]);
    expect(await run(`SELECT count(*) AS n FROM read_parquet(['${own}'])`)).toEqual([{ n: '3' }]);
  });
});
