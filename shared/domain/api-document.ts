/**
 * The committed docs/openapi.json that `GET /api/schema` serves (`npm run openapi` writes it from every
 * handler's schemas, too many modules to import here; a test fails when it is stale). Deployed, the file
 * sits beside the bundled handler (infra/build.ts copies it: imported as a module it was ~160 KB of that
 * function's bundle); locally it is read from docs/. Read on first use, so importing this module (as the
 * generator does through the handler) does not need the file to be valid.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The document's name beside the bundle's index.mjs. */
export const BUNDLED_OPENAPI_FILE = 'openapi.json';

let document: unknown;

function documentFile(): string {
  const bundled = fileURLToPath(new URL(`./${BUNDLED_OPENAPI_FILE}`, import.meta.url));
  return existsSync(bundled) ? bundled : fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));
}

export function openApiDocument(): unknown {
  document ??= JSON.parse(readFileSync(documentFile(), 'utf8')) as unknown;
  return document;
}
