import { CONSOLE_HEADERS, consoleIndex } from '#shared/domain/console-assets.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { route } from '../routes.ts';

/** `/`: the web console's page; it signs in with a personal API key and calls this API like any client. */
export const handler = publicHandler(route('console_index'), async () => {
  const file = consoleIndex();
  return {
    status: 200,
    text: { contentType: file.contentType, body: file.body },
    headers: { ...CONSOLE_HEADERS, 'Cache-Control': file.cacheControl },
  };
});
