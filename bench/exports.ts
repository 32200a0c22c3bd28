/**
 * Export throughput: a 100k-event window exported into the local S3 (s3rver) as JSONLines (gzip) and Parquet (snappy, gzip, brotli) by the real scheduler
 * (`npm run cron -- run-batch-exports` against a child local stack), as rows/s. Events are seeded
 * straight into the table's ingestion-time index with BatchWriteItem under a key prefix the stream
 * worker ignores: what is measured is the export (read the window, resolve persons, encode, gzip,
 * upload, manifest), not ingestion.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { eventItem } from '#shared/db/events.ts';
import { uuidv7 } from '#shared/ids.ts';
import { ROOT } from '#infra/build.ts';
import { batchWriteAll, localDynamo } from './lib/dynamo-seed.ts';
import { startChildStack } from './lib/local-stack.ts';
import { fixed, heading, table } from './lib/format.ts';
import type { Benchmark, BenchResult } from './lib/types.ts';

const run = promisify(execFile);
const intEnv = (name: string, fallback: number) => Number(process.env[name] || fallback);

export const exportsBenchmark: Benchmark = {
  name: 'exports',
  title: 'Batch export throughput: a 100k-event window into s3rver (local stack)',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const count = intEnv('BENCH_EXPORT_EVENTS', 100_000);
    // No scheduler in the stack: the timed `cron` below must be the one that runs the export.
    const stack = await startChildStack({ scheduler: false });
    try {
      const { info } = stack;
      const s3 = new S3Client({
        endpoint: info.s3_endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
        requestChecksumCalculation: 'WHEN_REQUIRED',
      });
      const bucket = `bench-${randomUUID().slice(0, 8)}`;
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      // One closed hour, two hours ago: the window the backfill below exports.
      const windowStart = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000);
      const items = function* () {
        for (let i = 0; i < count; i += 1) {
          const at = new Date(windowStart.getTime() + Math.floor((i / count) * 3_600_000)).toISOString();
          const item = eventItem({
            // Time-ordered, as posthog-js and our capture make them (random v4 ids would be half of any file).
            uuid: uuidv7(),
            event: i % 4 ? '$pageview' : 'signed up',
            distinct_id: `user-${i % 5000}`,
            project_id: info.project_id,
            properties: {
              $current_url: `https://example.com/p/${i % 97}`,
              $browser: ['Chrome', 'Firefox', 'Safari'][i % 3],
              amount: i % 50,
            },
            timestamp: at,
            inserted_at: at,
          });
          yield { ...item, pk: `BENCHEXPORT#${String(item.pk)}` };
        }
      };
      const seedStarted = performance.now();
      const dynamo = localDynamo(info.dynamodb_endpoint);
      await batchWriteAll(dynamo, info.table_name, items(), { inFlight: 16 });
      dynamo.destroy();
      console.log(`seeded ${count} events in ${fixed((performance.now() - seedStarted) / 1000)} s`);
      const headers = { authorization: `Bearer ${info.personal_api_key}`, 'content-type': 'application/json' };
      const base = `${info.base_url}/api/organizations/${info.organization_id}/batch_exports/`;
      const cron = () =>
        run('npx', ['tsx', 'infra/cli/cron.ts', 'run-batch-exports'], {
          cwd: ROOT,
          env: { ...process.env, DATA_DIR: stack.dataDir },
          maxBuffer: 10 * 1024 * 1024,
        });
      // The same command with nothing to do: its start-up cost, to subtract.
      let started = performance.now();
      await cron();
      const idleMs = performance.now() - started;
      const windowEnd = new Date(windowStart.getTime() + 3_600_000);
      /** One export of the window in this format: its rows/s (start-up subtracted) and its bytes. */
      const exportAs = async (file_format: string, compression: string) => {
        const prefix = `bench-${file_format}-${compression}`;
        const created = (await (
          await fetch(base, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              name: prefix,
              interval: 'hour',
              paused: false,
              end_at: windowStart.toISOString(),
              destination: {
                type: 'S3Compatible',
                config: {
                  bucket_name: bucket,
                  region: 'us-east-1',
                  prefix,
                  file_format,
                  compression,
                  endpoint_url: info.s3_endpoint,
                  aws_access_key_id: 'S3RVER',
                  aws_secret_access_key: 'S3RVER',
                },
              },
            }),
          })
        ).json()) as { id: string };
        await fetch(`${base}${created.id}/backfill/`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ start_at: windowStart.toISOString(), end_at: windowEnd.toISOString() }),
        });
        started = performance.now();
        const out = await cron();
        const busyMs = performance.now() - started;
        const runs = (
          (await (await fetch(`${base}${created.id}/`, { headers })).json()) as {
            latest_runs: { status: string; records_completed: number; bytes_exported: number }[];
          }
        ).latest_runs;
        const done = runs[0];
        if (done?.status !== 'Completed' || done.records_completed !== count)
          throw new Error(`run did not export ${count} rows: ${JSON.stringify(runs)}\n${out.stdout.slice(-2000)}`);
        const key = `${prefix}/${windowStart.toISOString()}-${windowEnd.toISOString()}.manifest.json`;
        const manifest = JSON.parse(
          await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString(),
        ) as { records: number };
        if (manifest.records !== count) throw new Error(`manifest says ${manifest.records} records`);
        const exportMs = busyMs - idleMs;
        return {
          format: `${file_format} ${compression}`,
          rate: (count / exportMs) * 1000,
          bytes: done.bytes_exported,
          exportMs,
        };
      };
      const jsonl = await exportAs('JSONLines', 'gzip');
      const parquets = [
        await exportAs('Parquet', 'snappy'),
        await exportAs('Parquet', 'gzip'),
        await exportAs('Parquet', 'brotli'),
      ];
      const all = [jsonl, ...parquets];
      console.log(
        `\n${table(
          ['format', 'rows', 'bytes', 'export time (s)', 'rows/s', 'rows/s vs JSONLines', 'bytes vs JSONLines gzip'],
          all.map((r) => [
            r.format,
            String(count),
            String(r.bytes),
            fixed(r.exportMs / 1000, 2),
            fixed(r.rate, 0),
            fixed(r.rate / jsonl.rate, 2),
            fixed(r.bytes / jsonl.bytes, 2),
          ]),
        )}\n(cron with nothing to do: ${fixed(idleMs / 1000, 2)} s, subtracted)`,
      );
      const best = parquets.reduce((a, b) => (b.bytes < a.bytes ? b : a));
      s3.destroy();
      return {
        rows: [
          {
            benchmark: 'exports',
            metric: `${count}-event window to s3rver, JSONLines gzip`,
            value: `${fixed(jsonl.rate, 0)} rows/s`,
            target: '-',
            status: 'info',
          },
          ...parquets.map((p) => ({
            benchmark: 'exports',
            metric: `${count}-event window, ${p.format}: rows/s vs JSONLines`,
            value: `${fixed(p.rate, 0)} rows/s (${fixed(p.rate / jsonl.rate, 2)}x)`,
            target: '>= 0.5x',
            status: p.rate >= 0.5 * jsonl.rate ? ('pass' as const) : ('OVER TARGET' as const),
          })),
          {
            benchmark: 'exports',
            metric: `${count}-event window, ${best.format}: bytes vs JSONLines gzip`,
            value: `${best.bytes} (${fixed(best.bytes / jsonl.bytes, 2)}x)`,
            target: '<= 0.5x',
            status: best.bytes <= 0.5 * jsonl.bytes ? ('pass' as const) : ('OVER TARGET' as const),
          },
        ],
        errors: [],
      };
    } finally {
      await stack.stop();
    }
  },
};
