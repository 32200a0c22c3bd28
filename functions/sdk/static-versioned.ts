import { staticAsset } from '#shared/domain/sdk-assets.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { route } from '../routes.ts';

/** `/static/<version>/<name>.js`, which posthog-js builds with strict_script_versioning; only the pinned version. */
export const handler = publicHandler(
  route('sdk_static_versioned'),
  async ({ params }) => {
    const asset = staticAsset(params.file ?? '', params.version ?? '');
    return {
      status: 200,
      text: { contentType: 'application/javascript; charset=utf-8', body: asset.body },
      headers: { 'Cache-Control': asset.cacheControl },
    };
  },
  { cors: 'any' },
);
