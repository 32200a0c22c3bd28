import { remoteConfigScript } from '#shared/domain/sdk.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { route } from '../routes.ts';

/** posthog-js loads `/array/<token>/config.js` as a cross-origin script (crossorigin="anonymous"): CORS `*`. */
export const handler = publicHandler(
  route('sdk_remote_config_js'),
  async ({ params }) => ({
    status: 200,
    text: { contentType: 'application/javascript; charset=utf-8', body: await remoteConfigScript(params.token ?? '') },
    headers: { 'Cache-Control': 'public, max-age=300' },
  }),
  { cors: 'any' },
);
