/**
 * `npm run build`: every handler in the route table (plus the fallback) bundled with code splitting, one esbuild
 * call per function, into dist/functions/<operationId>/: index.mjs and the chunks it loads by `import()`, minified
 * ESM with the AWS SDK clients inside (shared/aws/), node 22 target.
 */
import { cp, mkdir, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';
import { fallbackHandler, routes, workers, type Route } from '#functions/routes.ts';
import { BUNDLED_OPENAPI_FILE } from '#shared/domain/api-document.ts';
import { BUNDLED_CONSOLE_DIR } from '#shared/domain/console-assets.ts';
import { BUNDLED_ASSETS_DIR, isServedAsset } from '#shared/domain/sdk-assets.ts';
import { buildConsole, CONSOLE_DIST } from './console-build.ts';

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

/** dist/console for the real build (the local server reads it too); beside any other outdir. */
const consoleOutdir = (outdir: string) => (outdir === DIST ? CONSOLE_DIST : `${outdir}-console`);

export const bundleDir = (functionName: string) => join(DIST, functionName);

/**
 * The files a route serves, copied beside its bundle: posthog-js's package.json (its version) and the
 * browser scripts of its dist/ folder, at `<bundle>/posthog-js/` where shared/domain/sdk-assets.ts looks first;
 * the console's build; docs/openapi.json where shared/domain/api-document.ts looks first.
 */
export async function copyFunctionAssets(outdir: string): Promise<void> {
  const source = dirname(createRequire(import.meta.url).resolve('posthog-js/package.json'));
  const scripts = (await readdir(join(source, 'dist'))).filter(isServedAsset);
  const consoleDir = consoleOutdir(outdir);
  for (const r of routes as readonly Route[]) {
    if (r.assets === 'openapi') {
      await cp(join(ROOT, 'docs', 'openapi.json'), join(outdir, r.operationId, BUNDLED_OPENAPI_FILE));
      continue;
    }
    if (r.assets === 'console') {
      await cp(consoleDir, join(outdir, r.operationId, BUNDLED_CONSOLE_DIR), { recursive: true });
      continue;
    }
    if (r.assets !== 'posthog-js') continue;
    const target = join(outdir, r.operationId, BUNDLED_ASSETS_DIR);
    await mkdir(join(target, 'dist'), { recursive: true });
    await cp(join(source, 'package.json'), join(target, 'package.json'));
    await Promise.all(scripts.map((name) => cp(join(source, 'dist', name), join(target, 'dist', name))));
  }
}

/**
 * Each route handler imports `route('<operationId>')` from functions/routes.ts, whose table (~19 KB minified, every
 * row with its summary) would otherwise ride in every bundle. Here a handler's `../routes.ts` resolves to a module
 * holding only that handler's own rows, the same data (the rows are plain JSON) behind the same `route()`. Other
 * importers (the fallback function, which matches every path) keep the whole table.
 */
export function ownRoutesPlugin(): Plugin {
  return {
    name: 'own-routes',
    setup(b) {
      b.onResolve({ filter: /^\.\.\/routes\.ts$/ }, ({ importer }) => {
        const handler = relative(join(ROOT, 'functions'), importer).replace(/\.ts$/, '');
        const own = (routes as readonly Route[]).filter((r) => r.handler === handler);
        if (!own.length) return undefined;
        return { path: handler, namespace: 'own-routes', pluginData: own };
      });
      b.onLoad({ filter: /.*/, namespace: 'own-routes' }, ({ pluginData }) => ({
        contents: `const rows = ${JSON.stringify(pluginData)};
export function route(operationId) {
  const found = rows.find((r) => r.operationId === operationId);
  if (!found) throw new Error(\`unknown operation \${operationId}\`);
  return found;
}`,
        loader: 'js',
      }));
    },
  };
}

/**
 * The files an output reaches through its imports (static, and dynamic unless `staticOnly`), itself first:
 * what a function's directory holds (all of them) and what its module init loads (the static ones).
 */
export function reachable(metafile: Metafile, output: string, staticOnly = false): string[] {
  const seen = new Set([output]);
  for (const file of seen)
    for (const i of metafile.outputs[file]?.imports ?? [])
      if (!i.external && (!staticOnly || i.kind === 'import-statement')) seen.add(i.path);
  return [...seen];
}

/**
 * One function's directory: its handler bundled with code splitting (ESM) into index.mjs, which holds everything
 * module init loads, and a chunk beside it for each `import()` (what a request rarely needs: loaded on first use).
 * One esbuild call per function, not one for all: shared code would otherwise be cut into chunks by the set of
 * functions using it, and init would load dozens of small files (measured slower than the single file); CDK
 * deploys each function from its own directory anyway (infra/constructs). The chunks' `import.meta.url` is the
 * function's directory, where the assets copied below sit.
 */
function buildFunction(outdir: string, name: string, handler: string) {
  return build({
    entryPoints: [{ in: join(ROOT, 'functions', `${handler}.ts`), out: 'index' }],
    outdir: join(outdir, name),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    chunkNames: '[name]-[hash]',
    minify: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // The SDK's ESM builds: with esbuild's defaults for node (main first) its CommonJS builds are bundled,
    // and the ESM bundle fails at load on their `require("node:https")`.
    mainFields: ['module', 'main'],
    // Some CommonJS dependencies call require() for node built-ins; give each ESM module (entry or chunk) one.
    banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
    legalComments: 'none',
    plugins: [ownRoutesPlugin()],
    // The lake's local engine (native binaries, ~60 MB): the local runtime, tests and bench load it; Lambdas use Athena.
    external: ['@duckdb/node-api'],
    metafile: true,
    logLevel: 'warning',
  });
}

/**
 * Every function's directory (buildFunction), built concurrently. The metafile returned has one output per
 * function, `<name>/index.mjs`, whose `bytes` are everything its directory holds, `initBytes` what its module
 * init loads (the entry and any chunk it imports statically), `inputs` what those loaded files hold (the rest
 * waits for an `import()`), and `imports` every import of every file.
 */
export async function buildFunctions(outdir = DIST): Promise<Metafile> {
  await rm(outdir, { recursive: true, force: true });
  const built = await Promise.all(
    Object.entries(functionEntries()).map(async ([name, handler]) => ({
      name,
      metafile: (await buildFunction(outdir, name, handler)).metafile,
    })),
  );
  const inputs: Metafile['inputs'] = {};
  const outputs: Metafile['outputs'] = {};
  for (const { name, metafile } of built) {
    Object.assign(inputs, metafile.inputs);
    const entry = relative(process.cwd(), join(outdir, name, 'index.mjs'));
    const files = reachable(metafile, entry);
    const loaded = reachable(metafile, entry, true);
    const loadedInputs: Metafile['outputs'][string]['inputs'] = {};
    for (const file of loaded)
      for (const [input, { bytesInOutput }] of Object.entries(metafile.outputs[file]?.inputs ?? {}))
        loadedInputs[input] = { bytesInOutput: (loadedInputs[input]?.bytesInOutput ?? 0) + bytesInOutput };
    const bytesOf = (list: string[]) => list.reduce((sum, file) => sum + (metafile.outputs[file]?.bytes ?? 0), 0);
    outputs[entry] = {
      ...(metafile.outputs[entry] as Metafile['outputs'][string]),
      bytes: bytesOf(files),
      initBytes: bytesOf(loaded),
      inputs: loadedInputs,
      imports: files.flatMap((file) => metafile.outputs[file]?.imports ?? []),
    } as Metafile['outputs'][string];
  }
  // The console is built beside the functions (dist/console) and copied into the routes that serve it.
  await buildConsole(consoleOutdir(outdir));
  await copyFunctionAssets(outdir);
  return { inputs, outputs };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = performance.now();
  const metafile = await buildFunctions();
  const outputs = Object.entries(metafile.outputs);
  for (const [file, out] of outputs)
    console.log(`${(out.bytes / 1024).toFixed(1).padStart(8)} KB  ${file} (with its chunks)`);
  console.log(`${outputs.length} bundles in ${Math.round(performance.now() - started)} ms`);
}
