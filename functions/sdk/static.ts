import { staticAsset } from '#shared/domain/sdk-assets.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { route } from '../routes.ts';

/** `/static/array.js` (the snippet) and `/static/<name>.js?v=<version>` (extensions posthog-js loads lazily). */
export const handler = publicHandler(
  route('sdk_static'),
  async ({ params }) => {
    const asset = staticAsset(params.file ?? '');
    return {
      status: 200,
      text: { contentType: 'application/javascript; charset=utf-8', body: asset.body },
      headers: { 'Cache-Control': asset.cacheControl },
    };
  },
  { cors: 'any' },
);
