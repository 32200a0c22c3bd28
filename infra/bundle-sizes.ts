/**
 * What each Lambda bundle is made of, from the metafile of `buildFunctions()`: its size, and its bytes
 * grouped by package (node_modules) or folder (our code), so the report says what makes a bundle big.
 * Read by bench/bundles.ts (the report) and test/integration/bundles.test.ts. Bytes have no ceiling
 * (issue 36: the AWS SDK is paid for once; start-up is held by module-init time, not by size).
 */
import type { Metafile } from 'esbuild';

export interface BundleSize {
  /** The function (dist/functions/<name>/index.mjs). */
  name: string;
  /** Everything its directory holds: the entry and every chunk it can import (infra/build.ts). */
  bytes: number;
  /** What its module init loads: the entry and the chunks it imports statically (the rest wait for `import()`). */
  initBytes: number;
  /** Each input file's bytes in what module init loads (the entry and its static chunks), by its path as esbuild reports it. */
  inputs: Record<string, number>;
}

export function bundleSizes(metafile: Metafile): BundleSize[] {
  return Object.entries(metafile.outputs)
    .filter(([file]) => file.endsWith('/index.mjs'))
    .map(([file, out]) => ({
      name: file.split('/').at(-2) ?? file,
      bytes: out.bytes,
      initBytes: (out as { initBytes?: number }).initBytes ?? out.bytes,
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
