/**
 * The web console's files (built by infra/console-build.ts): `index.html` at `/`, and the bundle at
 * `/console/<version>/<file>`. Deployed, the folder sits beside the bundled handler (infra/build.ts
 * copies it to `console/`); locally it is read from dist/console, which `npm start` and the test run
 * build. Only names listed in the build's manifest are served, never a path joined from the request.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotFound } from '../errors.ts';

export const CONSOLE_INDEX = 'index.html';
export const CONSOLE_MANIFEST = 'manifest.json';
/** Where the bundle keeps the built console, relative to index.mjs. */
export const BUNDLED_CONSOLE_DIR = 'console';

/**
 * The page runs only its own bundle: no inline script or style, no eval, nothing framed or framing,
 * and it talks only to its own origin (the API it signs in to).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every console file: the CSP, no sniffing, no referrer leaving the console. */
export const CONSOLE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

/** The page: no inline code, only the versioned script and stylesheet. */
export function consoleIndexHtml(version: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Analytics console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/${version}/app.css">
<script type="module" src="/console/${version}/app.js"></script>
</head>
<body><noscript>The console needs JavaScript.</noscript><main id="app"></main></body>
</html>
`;
}

function consoleDir(): string | undefined {
  const bundled = fileURLToPath(new URL(`./${BUNDLED_CONSOLE_DIR}/`, import.meta.url));
  if (existsSync(join(bundled, CONSOLE_MANIFEST))) return bundled;
  const local = fileURLToPath(new URL('../../dist/console/', import.meta.url));
  if (existsSync(join(local, CONSOLE_MANIFEST))) return local;
  return undefined;
}

interface Built {
  dir: string;
  version: string;
  names: ReadonlySet<string>;
}

/** Read per request locally (a rebuild shows at once), once per container deployed (the folder is fixed). */
function built(): Built {
  const dir = consoleDir();
  if (!dir) throw new NotFound('The console is not built here: run `npm run build` (deployed) or `npm start`.');
  const manifest = JSON.parse(readFileSync(join(dir, CONSOLE_MANIFEST), 'utf8')) as {
    version: string;
    files: string[];
  };
  return { dir, version: manifest.version, names: new Set(manifest.files) };
}

export interface ConsoleFile {
  body: string;
  contentType: string;
  cacheControl: string;
}

const TYPES: Record<string, string> = {
  js: 'application/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

export function consoleIndex(): ConsoleFile {
  const { dir } = built();
  return {
    body: readFileSync(join(dir, CONSOLE_INDEX), 'utf8'),
    contentType: 'text/html; charset=utf-8',
    // The page names the current bundle: always asked again, so a deploy shows at once.
    cacheControl: 'no-cache',
  };
}

/** A bundle file of the current version; any other version is a 404 (its bytes are not here). */
export function consoleAsset(version: string, name: string): ConsoleFile {
  const current = built();
  const type = TYPES[name.split('.').pop() ?? ''];
  if (version !== current.version || !current.names.has(name) || !type) throw new NotFound();
  return {
    body: readFileSync(join(current.dir, version, name), 'utf8'),
    contentType: type,
    cacheControl: 'public, max-age=31536000, immutable',
  };
}
