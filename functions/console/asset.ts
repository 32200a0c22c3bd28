import { CONSOLE_HEADERS, consoleAsset } from '#shared/domain/console-assets.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { route } from '../routes.ts';

/** `/console/<version>/<file>`: the console's script and stylesheet, immutable under their version. */
export const handler = publicHandler(route('console_asset'), async ({ params }) => {
  const file = consoleAsset(params.version ?? '', params.file ?? '');
  return {
    status: 200,
    text: { contentType: file.contentType, body: file.body },
    headers: { ...CONSOLE_HEADERS, 'Cache-Control': file.cacheControl },
  };
});
