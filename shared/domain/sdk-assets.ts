/**
 * posthog-js's browser bundles, served from the pinned package as PostHog's asset CDN serves them:
 * `/static/array.js` (the snippet), `/static/<name>.js?v=<version>` and `/static/<version>/<name>.js`
 * (extensions the SDK loads lazily, posthog-js `external-scripts-loader`).
 * Deployed, the files sit beside the bundled handler (infra/build.ts copies them to `posthog-js/`);
 * locally they are read from node_modules. Only names listed in that `dist/` folder are served.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotFound } from '../errors.ts';

/** The browser bundles of posthog-js's `dist/`: scripts only (no source maps, type declarations or JSON). */
export const isServedAsset = (name: string) => /^[a-z0-9][a-z0-9.-]*\.js$/.test(name);

/** Where the bundle keeps the copied package (`<dir>/package.json`, `<dir>/dist/*.js`), relative to index.mjs. */
export const BUNDLED_ASSETS_DIR = 'posthog-js';

function packageDir(): string {
  const bundled = fileURLToPath(new URL(`./${BUNDLED_ASSETS_DIR}/`, import.meta.url));
  if (existsSync(join(bundled, 'package.json'))) return bundled;
  return dirname(createRequire(import.meta.url).resolve('posthog-js/package.json'));
}

interface Assets {
  version: string;
  dir: string;
  names: ReadonlySet<string>;
}

let assets: Assets | undefined;

/** Read once per container: the version and the list of file names are the allowlist. */
function loadAssets(): Assets {
  if (assets) return assets;
  const root = packageDir();
  const version = String(
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: unknown }).version,
  );
  const dir = join(root, 'dist');
  assets = { version, dir, names: new Set(readdirSync(dir).filter(isServedAsset)) };
  return assets;
}

export const sdkVersion = () => loadAssets().version;

export interface StaticAsset {
  body: string;
  cacheControl: string;
}

const contents = new Map<string, string>();

/**
 * A bundle by file name, optionally under its version (`/static/1.449.2/surveys.js`). Names are
 * looked up in the folder's listing, never joined into a path first, so `..`, slashes or encoded
 * separators find nothing. Another version is a 404: its code is not here.
 */
export function staticAsset(name: string, version?: string): StaticAsset {
  const { dir, names, version: pinned } = loadAssets();
  if (!names.has(name) || (version !== undefined && version !== pinned)) throw new NotFound();
  let body = contents.get(name);
  if (body === undefined) {
    body = readFileSync(join(dir, name), 'utf8');
    contents.set(name, body);
  }
  // A versioned path never changes; an unversioned name moves with the pinned version, so a day.
  const cacheControl = version === undefined ? 'public, max-age=86400' : 'public, max-age=31536000, immutable';
  return { body, cacheControl };
}
