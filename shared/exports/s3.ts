import { createHash, createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * The five S3 calls batch exports make (PutObject, and the multipart trio plus abort), signed with
 * SigV4 by @smithy/signature-v4. The SDK's S3 client would add ~170 KB of serialization schemas and
 * S3-only middleware to the exporter's bundle for calls this small.
 */
export interface S3Destination {
  bucket_name: string;
  region: string;
  aws_access_key_id?: string | null;
  aws_secret_access_key?: string | null;
  endpoint_url?: string | null;
}

type Data = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: Data) => (typeof d === 'string' ? Buffer.from(d) : ArrayBuffer.isView(d) ? Buffer.from(d.buffer, d.byteOffset, d.byteLength) : Buffer.from(d));

/** SigV4's hash: SHA-256, or HMAC-SHA-256 when constructed with a secret. */
class Sha256 {
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

/** The destination's own keys, else the function's role (Lambda puts its credentials in the environment). */
function credentials(d: S3Destination) {
  if (d.aws_access_key_id && d.aws_secret_access_key) return { accessKeyId: d.aws_access_key_id, secretAccessKey: d.aws_secret_access_key };
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = process.env;
  if (!AWS_ACCESS_KEY_ID || !AWS_SECRET_ACCESS_KEY) throw new Error('No credentials for the S3 destination: configure keys or run with a role.');
  return { accessKeyId: AWS_ACCESS_KEY_ID, secretAccessKey: AWS_SECRET_ACCESS_KEY, ...(AWS_SESSION_TOKEN ? { sessionToken: AWS_SESSION_TOKEN } : {}) };
}

/** Path-style for custom endpoints and dotted bucket names (TLS), virtual-hosted otherwise (AWS's default). */
function target(d: S3Destination, key: string): { url: URL; path: string } {
  const encodedKey = key.split('/').map(encodeURIComponent).join('/');
  if (d.endpoint_url) {
    const url = new URL(d.endpoint_url);
    return { url, path: `${url.pathname.replace(/\/$/, '')}/${encodeURIComponent(d.bucket_name)}/${encodedKey}` };
  }
  if (d.bucket_name.includes('.')) return { url: new URL(`https://s3.${d.region}.amazonaws.com`), path: `/${d.bucket_name}/${encodedKey}` };
  return { url: new URL(`https://${d.bucket_name}.s3.${d.region}.amazonaws.com`), path: `/${encodedKey}` };
}

export class S3Error extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = code;
  }
}

interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(url: URL, init: { method: string; path: string; headers: Record<string, string>; body?: Buffer }): Promise<Response> {
  const requester = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = requester(
      { hostname: url.hostname, port: url.port || undefined, method: init.method, path: init.path, headers: init.headers, timeout: 60_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('S3 request timed out')));
    req.on('error', reject);
    req.end(init.body);
  });
}

const ATTEMPTS = 3;

async function call(d: S3Destination, method: string, key: string, query: Record<string, string>, body?: Buffer, headers: Record<string, string> = {}): Promise<Response> {
  const { url, path } = target(d, key);
  const signer = new SignatureV4({ service: 's3', region: d.region, credentials: credentials(d), sha256: Sha256, uriEscapePath: false, applyChecksum: true });
  for (let attempt = 1; ; attempt += 1) {
    const signed = await signer.sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path,
      query,
      headers: { host: url.host, 'content-length': String(body?.length ?? 0), ...headers },
      body,
    });
    const search = new URLSearchParams(query).toString().replace(/=(?=&|$)/g, '');
    try {
      const res = await send(url, { method, path: search ? `${path}?${search}` : path, headers: signed.headers as Record<string, string>, body });
      if (res.status < 300) return res;
      const code = /<Code>([^<]*)<\/Code>/.exec(res.body)?.[1] ?? `HTTP${res.status}`;
      const message = /<Message>([^<]*)<\/Message>/.exec(res.body)?.[1] ?? `S3 answered ${res.status}`;
      const error = new S3Error(code, message, res.status);
      if (res.status < 500 || attempt >= ATTEMPTS) throw error;
    } catch (error) {
      if (error instanceof S3Error && error.status < 500) throw error;
      if (attempt >= ATTEMPTS) throw error;
    }
    await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
  }
}

const PART_BYTES = 8 * 1024 * 1024;

/**
 * Puts one object so that it is complete or absent: a single PutObject, or for big files a multipart
 * upload that only becomes visible on CompleteMultipartUpload (aborted on any failure).
 */
export async function putObject(d: S3Destination, key: string, body: Buffer, contentType: string): Promise<void> {
  if (body.length <= PART_BYTES) {
    await call(d, 'PUT', key, {}, body, { 'content-type': contentType });
    return;
  }
  const created = await call(d, 'POST', key, { uploads: '' }, undefined, { 'content-type': contentType });
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body)?.[1];
  if (!uploadId) throw new S3Error('MalformedResponse', 'CreateMultipartUpload returned no UploadId', 502);
  try {
    const parts: string[] = [];
    for (let offset = 0, n = 1; offset < body.length; offset += PART_BYTES, n += 1) {
      const res = await call(d, 'PUT', key, { partNumber: String(n), uploadId }, body.subarray(offset, offset + PART_BYTES));
      parts.push(`<Part><PartNumber>${n}</PartNumber><ETag>${String(res.headers.etag)}</ETag></Part>`);
    }
    const xml = Buffer.from(`<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`);
    await call(d, 'POST', key, { uploadId }, xml, { 'content-type': 'application/xml' });
  } catch (error) {
    await call(d, 'DELETE', key, { uploadId }).catch(() => undefined);
    throw error;
  }
}
