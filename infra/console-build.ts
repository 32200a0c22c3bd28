/**
 * The web console (console/): one esbuild call bundles console/main.ts (uPlot and its stylesheet
 * included) into `<outdir>/<version>/app.js` and `app.css`, where `<version>` is a hash of the bundle
 * so a path never changes content (served immutable); `index.html` names that version and is the
 * only file that moves. shared/domain/console-assets.ts serves the folder.
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { CONSOLE_INDEX, CONSOLE_MANIFEST, consoleIndexHtml } from '#shared/domain/console-assets.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CONSOLE_DIST = join(ROOT, 'dist', 'console');

export interface ConsoleBuild {
  version: string;
  /** Bytes of each output file, before compression. */
  files: Record<string, number>;
}

export async function buildConsole(outdir = CONSOLE_DIST): Promise<ConsoleBuild> {
  const result = await build({
    entryPoints: { app: join(ROOT, 'console', 'main.ts') },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari16'],
    write: false,
    outdir: '/out',
    legalComments: 'none',
    logLevel: 'warning',
  });
  const outputs = result.outputFiles.map((f) => ({ name: f.path.slice('/out/'.length), contents: f.contents }));
  const hash = createHash('sha256');
  for (const o of outputs) hash.update(o.name).update(o.contents);
  const version = hash.digest('hex').slice(0, 16);
  // Build beside, then swap: a server reading the folder never sees half a build.
  const staging = `${outdir}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(join(staging, version), { recursive: true });
  const files: Record<string, number> = {};
  for (const o of outputs) {
    await writeFile(join(staging, version, o.name), o.contents);
    files[o.name] = o.contents.byteLength;
  }
  await writeFile(join(staging, CONSOLE_INDEX), consoleIndexHtml(version));
  await writeFile(join(staging, CONSOLE_MANIFEST), JSON.stringify({ version, files: Object.keys(files) }));
  await rm(outdir, { recursive: true, force: true });
  await mkdir(dirname(outdir), { recursive: true });
  await rename(staging, outdir);
  return { version, files };
}
