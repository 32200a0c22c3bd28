/**
 * Per-function bundle size and module init time: one `buildFunctions()` (the same esbuild call
 * `npm run build` makes), then for every function in `functionEntries()` the minified size (reported,
 * no ceiling) and the median of N cold imports, each in a fresh node process, against the init targets
 * of issue 36 (on a quiet machine). The largest few bundles are broken down by package / folder
 * (infra/bundle-sizes.ts) so the report says what makes them big.
 *
 * `npx tsx bench/bundles.ts [<function> ...]`: the build and the breakdowns only (no timing): the named
 * functions, or the largest few.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile } from 'esbuild';
import { buildFunctions, bundleDir, functionEntries } from '#infra/build.ts';
import { breakdownLines, bundleSizes } from '#infra/bundle-sizes.ts';
import { coldImportMs } from './lib/cold-import.ts';
import { fixed, heading, table } from './lib/format.ts';
import { settings } from './lib/env.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';

/** The largest this many bundles are broken down. */
const LARGEST_SHOWN = 5;
/** Module-init medians (issue 36): the capture path loads in ≤ 70 ms, every other function in ≤ 100 ms. */
const HOT_PATH = new Set(['capture', 'ingest_events']);
export const initTargetMs = (name: string): number => (HOT_PATH.has(name) ? 70 : 100);

interface FunctionFigures {
  name: string;
  handler: string;
  /** The copy that is imported. */
  file: string;
  /** Its directory: the entry and every chunk it can import (infra/build.ts). */
  kb: number;
  /** What module init loads: the entry and its static chunks. */
  initKb: number;
  runs: number[];
  initMs: number;
}

export const bundlesBenchmark: Benchmark = {
  name: 'bundles',
  title: 'Per-function bundle size and module init time',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const entries = Object.entries(functionEntries());
    const runs = settings.importRuns();
    const errors: string[] = [];

    const buildStarted = performance.now();
    const metafile = await buildFunctions();
    console.log(`buildFunctions(): ${entries.length} bundles in ${Math.round(performance.now() - buildStarted)} ms`);

    // Imports run on copies outside the repo, as on Lambda: no node_modules to fall back on (a bundle
    // that is not self-contained fails here), and a concurrent `npm run build` cannot swap files mid-run.
    const copies = await mkdtemp(join(tmpdir(), 'analytics-bench-bundles-'));
    const figures: FunctionFigures[] = [];
    try {
      const sizes = new Map(bundleSizes(metafile).map((b) => [b.name, b]));
      for (const [name, handler] of entries) {
        // The whole directory, as CDK deploys it: the entry's chunks sit beside it.
        await cp(bundleDir(name), join(copies, name), { recursive: true });
        const size = sizes.get(name);
        figures.push({
          name,
          handler,
          file: join(copies, name, 'index.mjs'),
          kb: (size?.bytes ?? Number.NaN) / 1024,
          initKb: (size?.initBytes ?? Number.NaN) / 1024,
          runs: [],
          initMs: Number.NaN,
        });
      }

      // Round-robin over functions so slow drift on the machine spreads over all of them alike.
      console.log(
        `cold import(): ${runs} fresh node processes per function (TABLE_NAME=bench AWS_REGION=us-east-1), median reported`,
      );
      for (let i = 0; i < runs; i++) {
        for (const f of figures) {
          try {
            f.runs.push(await coldImportMs(f.file));
          } catch (error) {
            errors.push(error instanceof Error ? error.message : String(error));
          }
        }
      }
    } finally {
      await rm(copies, { recursive: true, force: true });
    }
    for (const f of figures) f.initMs = f.runs.length === runs ? median(f.runs) : Number.NaN;

    const flag = (over: boolean, missing: boolean) => (missing ? 'ERROR' : over ? 'OVER' : 'ok');
    console.log(
      `\n${table(
        ['function', 'handler', 'min KB (all)', 'min KB (init)', 'init ms (median)', 'init', 'runs (ms)'],
        figures.map((f) => [
          f.name,
          f.handler,
          fixed(f.kb),
          fixed(f.initKb),
          fixed(f.initMs),
          flag(f.initMs > initTargetMs(f.name), !Number.isFinite(f.initMs)),
          f.runs.map((r) => fixed(r)).join(' '),
        ]),
        ['l', 'l', 'r', 'r', 'r', 'l', 'l'],
      )}`,
    );
    console.log(
      `sizes: minified, 1 KB = 1024 bytes, no ceiling; all = the entry and every chunk it can import, init = the entry and the chunks it imports statically; init targets: <= 70 ms (${[...HOT_PATH].join(', ')}), <= 100 ms (the others)`,
    );
    const overInit = figures.filter((f) => f.initMs > initTargetMs(f.name));
    for (const f of overInit)
      console.log(`  ! ${f.name}: init ${fixed(f.initMs)} ms is over the ${initTargetMs(f.name)} ms target`);
    if (!overInit.length && !errors.length) console.log('  all functions within their init targets');
    printBreakdowns(metafile);

    const rows: SummaryRow[] = [];
    for (const f of figures) {
      rows.push({
        benchmark: 'bundles',
        metric: `${f.name} size (all / loaded at init)`,
        value: `${fixed(f.kb)} / ${fixed(f.initKb)} KB`,
        target: 'reported',
        status: 'info',
      });
      rows.push({
        benchmark: 'bundles',
        metric: `${f.name} init (median of ${runs})`,
        value: `${fixed(f.initMs)} ms`,
        target: `<= ${initTargetMs(f.name)} ms`,
        status: !Number.isFinite(f.initMs) ? 'ERROR' : f.initMs > initTargetMs(f.name) ? 'OVER TARGET' : 'pass',
      });
    }
    return { rows, errors };
  },
};

/** The named bundles, or the LARGEST_SHOWN largest, by package / folder. */
export function printBreakdowns(metafile: Metafile, names: readonly string[] = []): void {
  const sizes = bundleSizes(metafile);
  const shown = names.length ? sizes.filter((b) => names.includes(b.name)) : sizes.slice(0, LARGEST_SHOWN);
  console.log(`\nwhat the ${names.length ? 'named' : 'largest'} bundles hold (by package / folder):`);
  for (const bundle of shown) console.log(breakdownLines(bundle).join('\n'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const names = process.argv.slice(2).filter((a) => a !== '--');
  const unknown = names.filter((n) => !(n in functionEntries()));
  if (unknown.length) throw new Error(`unknown function(s): ${unknown.join(', ')}`);
  printBreakdowns(await buildFunctions(), names);
}
