import { publicHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { route } from '../routes.ts';

/**
 * The committed docs/openapi.json, bundled into this function: `npm run openapi` writes it from every
 * handler's schemas (too many modules to import here), and a test fails when it is stale. Loaded on
 * first use, so importing this module (as the generator does) does not need the file to be valid.
 */
let document: Promise<unknown> | undefined;
const openApiDocument = () =>
  (document ??= import('../../docs/openapi.json', { with: { type: 'json' } }).then((m) => m.default));

export const handler = publicHandler(route('schema'), async () => ok(await openApiDocument()));
