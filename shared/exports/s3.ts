import { TRANSIENT, retryTransient } from '../retry.ts';
import {
  DestinationError,
  destinationRequest,
  errorCode,
  networkOptions,
  type DestinationResponse,
  type NetworkOptions,
} from './destination-http.ts';
import { signedHeaders } from '../aws/sigv4.ts';

/**
 * The five S3 calls batch exports make (PutObject, and the multipart trio plus abort), signed with
 * SigV4 (shared/aws/sigv4.ts). The SDK's S3 client would add ~170 KB of serialization schemas and
 * S3-only middleware to the exporter's bundle for calls this small.
 */
export interface S3Destination {
  bucket_name: string;
  region?: string | null;
  aws_access_key_id?: string | null;
  aws_secret_access_key?: string | null;
  /** With temporary credentials (an assumed role). */
  aws_session_token?: string | null;
  endpoint_url?: string | null;
  /** S3-compatible stores that only serve `bucket.host` (PostHog's use_virtual_style_addressing). */
  use_virtual_style_addressing?: boolean | null;
  /** Server-side encryption S3 applies to each object (SSE-S3 or SSE-KMS), sent as its headers. */
  encryption?: 'AES256' | 'aws:kms' | null;
  kms_key_id?: string | null;
}

/**
 * The destination's own credentials, never the exporter's: its keys, or the temporary ones of the
 * role it names (assumed before the run, shared/domain/export-destinations.ts).
 */
function credentials(d: S3Destination) {
  if (!d.aws_access_key_id || !d.aws_secret_access_key)
    throw new DestinationError('S3 destination has no credentials of its own (access keys or role_arn).');
  return {
    accessKeyId: d.aws_access_key_id,
    secretAccessKey: d.aws_secret_access_key,
    ...(d.aws_session_token ? { sessionToken: d.aws_session_token } : {}),
  };
}

/**
 * Path-style for custom endpoints (unless they ask for virtual-hosted) and dotted bucket names (TLS),
 * virtual-hosted otherwise (AWS's default). An empty key addresses the bucket itself (HeadBucket).
 */
export function target(d: S3Destination, key: string): { url: URL; path: string } {
  const encodedKey = key.split('/').map(encodeURIComponent).join('/');
  if (d.endpoint_url) {
    const url = new URL(d.endpoint_url);
    const base = url.pathname.replace(/\/$/, '');
    if (d.use_virtual_style_addressing) {
      url.hostname = `${d.bucket_name}.${url.hostname}`;
      return { url, path: `${base}/${encodedKey}` };
    }
    return { url, path: `${base}/${encodeURIComponent(d.bucket_name)}${encodedKey ? `/${encodedKey}` : ''}` };
  }
  const region = d.region || 'us-east-1';
  const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  if (d.bucket_name.includes('.'))
    return {
      url: new URL(`https://s3.${region}.${suffix}`),
      path: `/${d.bucket_name}${encodedKey ? `/${encodedKey}` : ''}`,
    };
  return { url: new URL(`https://${d.bucket_name}.s3.${region}.${suffix}`), path: `/${encodedKey}` };
}

/** S3 answered with an error: status and error code only, never the answer's message. */
export class S3Error extends DestinationError {
  override name = 'S3Error';
  constructor(
    operation: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(`S3 ${operation} failed: ${status}${code ? ` ${code}` : ''}`, status >= 500);
  }
}

const ATTEMPTS = 3;
/** CompleteMultipartUpload (and, rarely, others) may answer 200 with an error document. */
const ERROR_DOCUMENT = /^\s*(<\?xml[^>]*\?>\s*)?<Error>/;

async function call(
  d: S3Destination,
  net: NetworkOptions,
  operation: string,
  method: string,
  key: string,
  query: Record<string, string>,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<DestinationResponse> {
  const { url, path } = target(d, key);
  // S3-compatible stores may leave the region out: us-east-1 is what their SigV4 expects then.
  const region = d.region || 'us-east-1';
  const creds = credentials(d);
  // Retryable failures (5xx, a reset connection) are sent again, freshly signed, with backoff; the last one is thrown.
  let last: unknown;
  return retryTransient(
    `S3 ${operation}`,
    async () => {
      const signed = signedHeaders({
        method,
        url,
        path,
        query,
        headers: { 'content-length': String(body?.length ?? 0), ...headers },
        body,
        service: 's3',
        region,
        credentials: creds,
        s3: true,
      });
      const search = new URLSearchParams(query).toString().replace(/=(?=&|$)/g, '');
      try {
        const res = await destinationRequest(
          `S3 ${operation}`,
          url,
          {
            method,
            path: search ? `${path}?${search}` : path,
            headers: signed,
            body,
          },
          net,
        );
        if (res.status < 300 && !ERROR_DOCUMENT.test(res.body)) return res;
        throw new S3Error(operation, res.status, errorCode(res.body));
      } catch (error) {
        if (!(error instanceof DestinationError) || !error.retryable) throw error;
        last = error;
        return TRANSIENT;
      }
    },
    { attempts: ATTEMPTS, baseMs: 400, capMs: 1_600, gaveUp: () => last as Error },
  );
}

const PART_BYTES = 8 * 1024 * 1024;

/**
 * Puts one object so that it is complete or absent: a single PutObject, or for big files a multipart
 * upload that only becomes visible on CompleteMultipartUpload (aborted on any failure).
 */
export async function putObject(
  d: S3Destination,
  key: string,
  body: Buffer,
  contentType: string,
  net: NetworkOptions = networkOptions(),
): Promise<void> {
  const headers = { 'content-type': contentType, ...encryptionHeaders(d) };
  if (body.length <= PART_BYTES) {
    await call(d, net, 'PutObject', 'PUT', key, {}, body, headers);
    return;
  }
  const created = await call(d, net, 'CreateMultipartUpload', 'POST', key, { uploads: '' }, undefined, headers);
  const uploadId = /<UploadId>([^<]{1,1024})<\/UploadId>/.exec(created.body)?.[1];
  if (!uploadId) throw new DestinationError('S3 CreateMultipartUpload failed: the answer has no UploadId');
  try {
    const parts: string[] = [];
    for (let offset = 0, n = 1; offset < body.length; offset += PART_BYTES, n += 1) {
      const res = await call(
        d,
        net,
        'UploadPart',
        'PUT',
        key,
        { partNumber: String(n), uploadId },
        body.subarray(offset, offset + PART_BYTES),
      );
      parts.push(`<Part><PartNumber>${n}</PartNumber><ETag>${xmlText(String(res.headers.etag))}</ETag></Part>`);
    }
    const xml = Buffer.from(`<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`);
    await call(d, net, 'CompleteMultipartUpload', 'POST', key, { uploadId }, xml, {
      'content-type': 'application/xml',
    });
  } catch (error) {
    await call(d, net, 'AbortMultipartUpload', 'DELETE', key, { uploadId }).catch(() => undefined);
    throw error;
  }
}

/** SSE headers go on PutObject and CreateMultipartUpload only (S3 refuses them on UploadPart). */
function encryptionHeaders(d: S3Destination): Record<string, string> {
  if (!d.encryption) return {};
  return {
    'x-amz-server-side-encryption': d.encryption,
    ...(d.encryption === 'aws:kms' && d.kms_key_id
      ? { 'x-amz-server-side-encryption-aws-kms-key-id': d.kms_key_id }
      : {}),
  };
}

/** GetObject of a small text object (at most what destinationRequest keeps of a body); undefined when absent. */
export async function getObjectText(
  d: S3Destination,
  key: string,
  net: NetworkOptions = networkOptions(),
): Promise<string | undefined> {
  try {
    return (await call(d, net, 'GetObject', 'GET', key, {})).body;
  } catch (error) {
    if (error instanceof S3Error && error.status === 404) return undefined;
    throw error;
  }
}

/** DeleteObject (S3 answers 204 for a key that is already gone). */
export async function deleteObject(
  d: S3Destination,
  key: string,
  net: NetworkOptions = networkOptions(),
): Promise<void> {
  await call(d, net, 'DeleteObject', 'DELETE', key, {});
}

/** HeadBucket: the bucket exists and these credentials may use it (S3 answers 404 or 403 otherwise). */
export async function headBucket(d: S3Destination, net: NetworkOptions = networkOptions()): Promise<void> {
  await call(d, net, 'HeadBucket', 'HEAD', '', {});
}

const xmlText = (s: string) => s.replace(/[<>&]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&amp;'));
