import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';

export class Sha256 {
  private h;
  constructor(secret?: unknown) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', Buffer.from(secret as Uint8Array));
  }
  update(d: unknown) {
    this.h.update(Buffer.from(d as Uint8Array));
  }
  async digest() {
    return new Uint8Array(this.h.digest());
  }
}

const S3_AUTHORIZATION =
  /Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]+)/;

/** The access key id an S3 request's SigV4 Authorization header names, or undefined without one. */
export const s3AccessKeyId = (req: IncomingMessage) => S3_AUTHORIZATION.exec(String(req.headers.authorization))?.[1];

/**
 * Checks an S3 request's SigV4 signature as S3 does: rebuilds the request from the wire (signed headers
 * only), re-signs it with the SDK's signer at the request's x-amz-date with this secret (and session
 * token), and compares the signatures.
 */
export async function hasS3Signature(
  req: IncomingMessage,
  body: Buffer,
  secret: { secretAccessKey: string; sessionToken?: string },
): Promise<boolean> {
  const m = S3_AUTHORIZATION.exec(String(req.headers.authorization ?? ''));
  if (!m) return false;
  const url = new URL(req.url!, 'http://x');
  const headers = Object.fromEntries(m[4]!.split(';').map((h) => [h, String(req.headers[h])]));
  const d = String(req.headers['x-amz-date']);
  const when = new Date(
    `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({
    service: 's3',
    region: m[3]!,
    credentials: { accessKeyId: m[1]!, ...secret },
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const again = await signer.sign(
    {
      method: req.method!,
      protocol: 'http:',
      hostname: 'x',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
    },
    { signingDate: when },
  );
  return String(again.headers.authorization).endsWith(`Signature=${m[5]}`);
}
