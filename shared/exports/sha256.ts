/**
 * Apart from destination-http.ts so the functions that only sign AWS calls (the lake's Athena and S3
 * requests) do not bundle the destination client's address filtering (request-filtering-agent, ipaddr.js).
 */
import { createHash, createHmac } from 'node:crypto';

type Data = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: Data) =>
  typeof d === 'string'
    ? Buffer.from(d)
    : ArrayBuffer.isView(d)
      ? Buffer.from(d.buffer, d.byteOffset, d.byteLength)
      : Buffer.from(d);

/** SigV4's hash for @smithy/signature-v4: SHA-256, or HMAC-SHA-256 when constructed with a secret. */
export class Sha256 {
  private hash;
  constructor(secret?: Data) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: Data): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}
