import { remoteConfig } from '#shared/domain/sdk.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { route } from '../routes.ts';

/** posthog-js's `/array/<token>/config`: the same for every site, so CORS `*` and five minutes of caching. */
export const handler = publicHandler(
  route('sdk_remote_config'),
  async ({ params }) => ({
    status: 200,
    body: await remoteConfig(params.token ?? ''),
    headers: { 'Cache-Control': 'public, max-age=300' },
  }),
  { cors: 'any' },
);
