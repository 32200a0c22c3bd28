/**
 * `npm run bench -- parquet`: the Parquet writer alone, without the HTTP stack.
 *   (a) file sizes: the exports benchmark's 100k-event window (bench/exports.ts's generator, as the rows
 *       shared/domain/export-runs.ts hands encodeFiles) as gzip JSON Lines and as Parquet in each codec,
 *       with each column's compressed bytes read back by DuckDB (`parquet_metadata`);
 *   (b) the lake writer's rate (shared/lake/rows.ts lakeFiles) in events per CPU-second
 *       (process.cpuUsage, user + system: what a Lambda is billed for, not disturbed by other load).
 * BENCH_PARQUET_EVENTS (default 100,000) for (a), BENCH_PARQUET_LAKE_EVENTS (default 500,000) for (b).
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Compression, COMPRESSIONS, encodeFiles } from '#shared/exports/files.ts';
import { EVENT_COLUMNS } from '#shared/exports/hogql.ts';
import { type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';
import { asTheCompactorReadsThem } from './lake.ts';
import { fixed, heading, table } from './lib/format.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';
import { DISTINCT_IDS, duckdb, EVENT_MIX, syntheticProperties, weighted } from './trends.ts';
import { prng } from '../test/support/prng.ts';

const TARGET_SIZE_RATIO = 0.5;
const TARGET_WRITE_PER_CPU_S = 200_000;

function intEnv(name: string, fallback: number): number {
  const n = Number(process.env[name] || fallback);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer`);
  return n;
}

/**
 * uuidv7 as capture makes them (shared/ids.ts): 48 bits of milliseconds, a 12-bit sequence, then
 * random bits. Built here from a fixed clock so that the figures do not depend on the bench's speed.
 */
function uuidv7At(ms: number, sequence: number): string {
  const hex = ms.toString(16).padStart(12, '0');
  const rand = randomBytes(8);
  rand[0] = (rand[0]! & 0x3f) | 0x80;
  const tail = rand.toString('hex');
  const seq = (0x7000 | (sequence & 0xfff)).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8)}-${seq}-${tail.slice(0, 4)}-${tail.slice(4)}`;
}

/** The exports benchmark's window (bench/exports.ts), as the rows the export run encodes. */
function exportRows(count: number): Record<string, unknown>[] {
  const windowStart = Date.parse('2026-01-01T08:00:00Z');
  const ingestedFrom = windowStart + 3_600_000;
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(windowStart + Math.floor((i / count) * 3_600_000)).toISOString();
    return {
      // Ingestion speed of the bench's seeding: ~100 events per millisecond of ids.
      uuid: uuidv7At(ingestedFrom + Math.floor(i / 100), i % 100),
      event: i % 4 ? '$pageview' : 'signed up',
      distinct_id: `user-${i % 5000}`,
      person_id: null,
      properties: {
        $current_url: `https://example.com/p/${i % 97}`,
        $browser: ['Chrome', 'Firefox', 'Safari'][i % 3],
        amount: i % 50,
      },
      person_properties: {},
      elements_chain: '',
      timestamp: at,
      created_at: at,
      _inserted_at: at,
    };
  });
}

/** The lake benchmark's events (bench/lake.ts): one day of them, as the compactor hands them over. */
function lakeEvents(count: number): LakeEvent[] {
  const rng = prng(25);
  const dayStart = Date.parse('2026-01-01T00:00:00Z');
  const events = Array.from({ length: count }, (_, i): LakeEvent => {
    const user = Math.floor(rng() * DISTINCT_IDS);
    const t = dayStart + Math.floor((i / count) * 86_400_000);
    return {
      uuid: uuidv7At(t, i),
      event: weighted(rng, EVENT_MIX),
      timestamp: new Date(t).toISOString(),
      distinct_id: `user-${user}`,
      person_id: user % 2 ? `0190f000-0000-7000-9000-${String(user >> 1).padStart(12, '0')}` : null,
      properties: syntheticProperties(rng, user, t),
    };
  });
  return asTheCompactorReadsThem(events);
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

export const parquetBenchmark: Benchmark = {
  name: 'parquet',
  title: 'Parquet writer alone: export file sizes per codec and column, lake write rate per CPU-second',
  async run(): Promise<BenchResult> {
    const rows: SummaryRow[] = [];
    const count = intEnv('BENCH_PARQUET_EVENTS', 100_000);
    heading(`export files: ${count.toLocaleString('en')} events (bench/exports.ts's window)`);
    const events = exportRows(count);
    const jsonl = encodeFiles(events, EVENT_COLUMNS, 'JSONLines', 'gzip')[0]!;
    const { DuckDBInstance } = await duckdb();
    const connection = await (await DuckDBInstance.create(':memory:')).connect();
    const codecs = COMPRESSIONS.Parquet.filter((c): c is Compression => c !== 'none');
    const sizes: string[][] = [['JSONLines gzip', String(jsonl.body.length), '1.00', '', '']];
    const perColumn = new Map<string, Map<string, number>>();
    for (const codec of codecs) {
      const cpu = cpuMs();
      const file = encodeFiles(events, EVENT_COLUMNS, 'Parquet', codec)[0]!;
      const encodeMs = cpuMs() - cpu;
      const path = join(tmpdir(), `bench-parquet-${process.pid}-${codec}.parquet`);
      writeFileSync(path, file.body);
      try {
        const meta = (
          await connection.runAndReadAll(
            `SELECT path_in_schema AS col, sum(total_compressed_size)::BIGINT AS bytes, string_agg(DISTINCT encodings) AS enc FROM parquet_metadata('${path}') GROUP BY 1`,
          )
        ).getRowObjectsJS() as { col: string; bytes: bigint; enc: string }[];
        for (const m of meta) {
          const byCodec = perColumn.get(m.col) ?? new Map<string, number>();
          byCodec.set(codec, Number(m.bytes));
          byCodec.set('encoding', 0);
          perColumn.set(m.col, byCodec);
          if (codec === codecs[0]) console.log(`  ${m.col}: ${m.enc}`);
        }
      } finally {
        rmSync(path, { force: true });
      }
      const ratio = file.body.length / jsonl.body.length;
      sizes.push([`Parquet ${codec}`, String(file.body.length), fixed(ratio, 2), fixed(encodeMs), '']);
      rows.push({
        benchmark: 'parquet',
        metric: `export file size, Parquet ${codec} vs JSONLines gzip`,
        value: fixed(ratio, 2),
        target: `<= ${TARGET_SIZE_RATIO}`,
        status: ratio <= TARGET_SIZE_RATIO ? 'pass' : 'OVER TARGET',
      });
    }
    connection.closeSync?.();
    console.log(`\n${table(['file', 'bytes', 'vs JSONLines gzip', 'encode CPU ms', ''], sizes)}`);
    console.log(
      `\n${table(
        ['column', ...codecs.map((c) => `${c} bytes`)],
        [...perColumn].map(([col, byCodec]) => [col, ...codecs.map((c) => String(byCodec.get(c) ?? ''))]),
      )}`,
    );

    const lakeCount = intEnv('BENCH_PARQUET_LAKE_EVENTS', 500_000);
    heading(`lake writer: ${lakeCount.toLocaleString('en')} events (bench/lake.ts's generator, one day)`);
    const day = lakeEvents(lakeCount);
    lakeFiles(day.slice(0, 20_000)); // warm-up: compiled code, not the first pass's interpreter
    const cpu = cpuMs();
    const wall = performance.now();
    const files = lakeFiles(day);
    const spent = cpuMs() - cpu;
    const wallMs = performance.now() - wall;
    const bytes = files.reduce((sum, f) => sum + f.byteLength, 0);
    const rate = lakeCount / (spent / 1000);
    console.log(
      `${files.length} file(s), ${fixed(bytes / 2 ** 20)} MB (${fixed(bytes / lakeCount, 2)} bytes/event); ${fixed(spent)} CPU ms, ${fixed(wallMs)} ms wall: ${Math.round(rate).toLocaleString('en')} events per CPU-second`,
    );
    rows.push({
      benchmark: 'parquet',
      metric: `lake write rate (${lakeCount.toLocaleString('en')} events)`,
      value: `${Math.round(rate).toLocaleString('en')} ev/CPU-s`,
      target: `>= ${TARGET_WRITE_PER_CPU_S.toLocaleString('en')}`,
      status: rate >= TARGET_WRITE_PER_CPU_S ? 'pass' : 'OVER TARGET',
    });
    return { rows, errors: [] };
  },
};
