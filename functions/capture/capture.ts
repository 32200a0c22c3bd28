import { MAX_REQUEST_BYTES } from '#shared/capture/decode.ts';
import { captureEvents } from '#shared/domain/capture.ts';
import { publicHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { route } from '../routes.ts';

/** PostHog's capture paths (/capture, /batch, /e, /i/v0/e): SDKs send here unchanged. */
export const handler = publicHandler(
  route('capture'),
  async ({ body, headers, query, deadline }) =>
    ok(
      await captureEvents({
        body,
        query,
        contentType: headers['content-type'],
        contentEncoding: headers['content-encoding'],
        deadline,
      }),
    ),
  { maxBodyBytes: MAX_REQUEST_BYTES },
);
