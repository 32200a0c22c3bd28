import { decide } from '#shared/domain/sdk.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { route } from '../routes.ts';

/** The legacy `/decide/?v=3|4` of older SDKs: no flags, plus the remote config they read from it. */
export const handler = publicHandler(route('sdk_decide'), async ({ body, headers, query }) =>
  ok(await decide({ body, query, contentType: headers['content-type'], contentEncoding: headers['content-encoding'] })),
);
