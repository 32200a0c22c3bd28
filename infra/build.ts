/**
 * `npm run build`: every handler in the route table (plus the fallback) bundled by ONE esbuild call
 * into dist/functions/<operationId>/index.mjs: minified ESM, AWS SDK bundled, node 22 target.
 */
import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { fallbackHandler, routes, workers } from '#functions/routes.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = join(ROOT, 'dist', 'functions');
export const FALLBACK_FUNCTION = 'fallback';

/** Function name -> handler module (under functions/) for everything deployed as a Lambda. */
export function functionEntries(): Record<string, string> {
  const entries: Record<string, string> = { [FALLBACK_FUNCTION]: fallbackHandler };
  for (const r of routes) entries[r.operationId] = r.handler;
  for (const w of workers) entries[w.name] = w.handler;
  return entries;
}

export const bundleDir = (functionName: string) => join(DIST, functionName);

export async function buildFunctions(outdir = DIST): Promise<Metafile> {
  await rm(outdir, { recursive: true, force: true });
  const entryPoints = Object.entries(functionEntries()).map(([name, handler]) => ({
    in: join(ROOT, 'functions', `${handler}.ts`),
    out: `${name}/index`,
  }));
  const result = await build({
    entryPoints,
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    mainFields: ['module', 'main'],
    // Some CommonJS dependencies call require() for node built-ins; give the ESM bundle one.
    banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
    legalComments: 'none',
    // Lambda gives credentials in the environment: skip the SDK's full provider chain (infra/lambda/credentials.ts).
    alias: { '@aws-sdk/credential-provider-node': join(ROOT, 'infra', 'lambda', 'credentials.ts') },
    metafile: true,
    logLevel: 'warning',
  });
  return result.metafile;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = performance.now();
  const metafile = await buildFunctions();
  const outputs = Object.entries(metafile.outputs).filter(([file]) => file.endsWith('.mjs'));
  for (const [file, out] of outputs) console.log(`${(out.bytes / 1024).toFixed(1).padStart(8)} KB  ${file}`);
  console.log(`${outputs.length} bundles in ${Math.round(performance.now() - started)} ms`);
}
