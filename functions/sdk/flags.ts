import { flags } from '#shared/domain/sdk.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { route } from '../routes.ts';

/** posthog-js's `/flags/?v=2`: the body in any encoding capture accepts; always no flags. */
export const handler = publicHandler(route('sdk_flags'), async ({ body, headers, query }) =>
  ok(await flags({ body, query, contentType: headers['content-type'], contentEncoding: headers['content-encoding'] })),
);
