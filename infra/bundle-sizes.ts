/**
 * What each Lambda bundle is made of, from the metafile of `buildFunctions()`: its size, and its bytes
 * grouped by package (node_modules) or folder (our code), so a bundle over its budget says why.
 * Read by bench/bundles.ts (the report) and test/integration/bundles.test.ts (the budget).
 */
import type { Metafile } from 'esbuild';

/** A bundle's budget, minified (1 KB = 1024 bytes): docs/benchmarks.md, "Bundles and module init". */
export const BUNDLE_BUDGET_KB = 400;

/**
 * Functions allowed over the budget for a while, each held to a ceiling a little above its size so it
 * cannot grow unnoticed while it is brought under (the bundles test fails a ceiling no longer needed).
 * The SDK's S3 client (about 420 KB minified with its share of @smithy/core) is in the exporter's two
 * functions (with STS) and, while the lake store writes through the export writer, in the compactor
 * and the functions that may route a query to the lake (measured with `buildFunctions`, 2026-11-28).
 */
export const OVER_BUDGET_CEILINGS_KB: Readonly<Record<string, number>> = {
  query_create: 1020,
  run_queries: 1000,
  insights_trend: 930,
  insights_trend_retrieve: 930,
  run_batch_exports: 850,
  batch_exports_test: 770,
  compact_events: 750,
};

export const ceilingOf = (name: string): number => OVER_BUDGET_CEILINGS_KB[name] ?? BUNDLE_BUDGET_KB;

export interface BundleSize {
  /** The function (dist/functions/<name>/index.mjs). */
  name: string;
  bytes: number;
  /** Each input file's bytes in the output, by its path as esbuild reports it. */
  inputs: Record<string, number>;
}

export function bundleSizes(metafile: Metafile): BundleSize[] {
  return Object.entries(metafile.outputs)
    .filter(([file]) => file.endsWith('/index.mjs'))
    .map(([file, out]) => ({
      name: file.split('/').at(-2) ?? file,
      bytes: out.bytes,
      inputs: Object.fromEntries(Object.entries(out.inputs).map(([input, v]) => [input, v.bytesInOutput])),
    }))
    .sort((a, b) => b.bytes - a.bytes);
}

/**
 * An input's group: its package for node_modules (`@scope/name` or `name`), else its folder
 * (`shared/trends/columnar`); a file directly under shared/ or functions/, and data files, stand alone.
 */
export function groupOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at >= 0) {
    const [first = '', second = ''] = input.slice(at + 'node_modules/'.length).split('/');
    return first.startsWith('@') ? `${first}/${second}` : first;
  }
  const parts = input.replace(/^(\.\.\/)+/, '').split('/');
  if (parts.length <= 2 || !/\.[cm]?[jt]s$/.test(input)) return parts.join('/');
  return parts.slice(0, -1).join('/');
}

/** A bundle's bytes by group, largest first. */
export function breakdown(bundle: BundleSize): { group: string; bytes: number }[] {
  const groups = new Map<string, number>();
  for (const [input, bytes] of Object.entries(bundle.inputs)) {
    const group = groupOf(input);
    groups.set(group, (groups.get(group) ?? 0) + bytes);
  }
  return [...groups].map(([group, bytes]) => ({ group, bytes })).sort((a, b) => b.bytes - a.bytes);
}

/** Bytes of the inputs whose path contains `part` (e.g. a package's folder). */
export const bytesOf = (bundle: BundleSize, part: string): number =>
  Object.entries(bundle.inputs).reduce((sum, [input, bytes]) => sum + (input.includes(part) ? bytes : 0), 0);

export const kb = (bytes: number) => bytes / 1024;

/** Lines for a report: the bundle, then its `top` largest groups with their share. */
export function breakdownLines(bundle: BundleSize, top = 12): string[] {
  const lines = [`${bundle.name}: ${kb(bundle.bytes).toFixed(1)} KB`];
  for (const { group, bytes } of breakdown(bundle).slice(0, top))
    lines.push(
      `  ${kb(bytes).toFixed(1).padStart(7)} KB  ${((100 * bytes) / bundle.bytes).toFixed(0).padStart(3)}%  ${group}`,
    );
  return lines;
}
