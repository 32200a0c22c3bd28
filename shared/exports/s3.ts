import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import {
  DestinationError,
  DestinationHttpHandler,
  destinationFailure,
  networkOptions,
  type NetworkOptions,
} from './destination-http.ts';

/** A tenant's S3 (or S3-compatible) destination, as the exporter writes to it. */
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

/** S3 answered with an error: status and error code only, never the answer's message. */
export class S3Error extends DestinationError {
  override name = 'S3Error';
  constructor(
    operation: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(`S3 ${operation} failed: ${status}${code ? ` ${code}` : ''}`);
  }
}

/** Attempts per call, the first included (the SDK's standard mode: 5xx, throttling and resets are retried). */
const ATTEMPTS = 3;

/**
 * The SDK's S3 client for one destination (batch exports' PutObject, multipart trio and abort,
 * GetObject, DeleteObject, HeadBucket): its own credentials, the SDK's standard retry mode, and
 * DestinationHttpHandler under it (the connection filter, timeouts, bounded answers). Path-style for custom endpoints unless they ask for virtual-hosted
 * (PostHog's use_virtual_style_addressing); AWS's own addressing otherwise (virtual-hosted, path-style
 * for dotted names). The process's AWS_ENDPOINT_URL_S3 (the local stand-in for our own bucket) never
 * redirects a tenant's destination. Checksums only where S3 requires them: S3-compatible stores do not
 * all take the SDK's default ones. No `Expect: 100-continue`: bodies are in memory and small per request.
 */
export function s3Client(d: S3Destination, net: NetworkOptions): S3Client {
  return new S3Client({
    // S3-compatible stores may leave the region out: us-east-1 is what their SigV4 expects then.
    region: d.region || 'us-east-1',
    credentials: credentials(d),
    ...(d.endpoint_url ? { endpoint: d.endpoint_url, forcePathStyle: !d.use_virtual_style_addressing } : {}),
    ignoreConfiguredEndpointUrls: true,
    followRegionRedirects: false,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    expectContinueHeader: false,
    retryMode: 'standard',
    maxAttempts: ATTEMPTS,
    requestHandler: new DestinationHttpHandler(net, (code) => `<Error><Code>${code}</Code></Error>`),
  });
}

/** One S3 call, its failure in our words (status and code, or what went wrong on the way). */
async function call<T>(operation: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    throw destinationFailure(`S3 ${operation}`, error, (status, code) => new S3Error(operation, status, code));
  }
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
  const client = s3Client(d, net);
  const object = { Bucket: d.bucket_name, Key: key };
  const stored = { ...object, ContentType: contentType, ...encryption(d) };
  if (body.length <= PART_BYTES) {
    await call('PutObject', () => client.send(new PutObjectCommand({ ...stored, Body: body })));
    return;
  }
  const { UploadId } = await call('CreateMultipartUpload', () => client.send(new CreateMultipartUploadCommand(stored)));
  if (!UploadId) throw new DestinationError('S3 CreateMultipartUpload failed: the answer has no UploadId');
  try {
    const parts: { PartNumber: number; ETag: string | undefined }[] = [];
    for (let offset = 0, n = 1; offset < body.length; offset += PART_BYTES, n += 1) {
      const part = body.subarray(offset, offset + PART_BYTES);
      const { ETag } = await call('UploadPart', () =>
        client.send(new UploadPartCommand({ ...object, UploadId, PartNumber: n, Body: part })),
      );
      parts.push({ PartNumber: n, ETag });
    }
    await call('CompleteMultipartUpload', () =>
      client.send(new CompleteMultipartUploadCommand({ ...object, UploadId, MultipartUpload: { Parts: parts } })),
    );
  } catch (error) {
    await call('AbortMultipartUpload', () =>
      client.send(new AbortMultipartUploadCommand({ ...object, UploadId })),
    ).catch(() => undefined);
    throw error;
  }
}

/** SSE goes on PutObject and CreateMultipartUpload only (S3 refuses it on UploadPart). */
function encryption(d: S3Destination): { ServerSideEncryption?: 'AES256' | 'aws:kms'; SSEKMSKeyId?: string } {
  if (!d.encryption) return {};
  return {
    ServerSideEncryption: d.encryption,
    ...(d.encryption === 'aws:kms' && d.kms_key_id ? { SSEKMSKeyId: d.kms_key_id } : {}),
  };
}

/** GetObject of a small text object (at most MAX_RESPONSE_BYTES of it); undefined when absent. */
export async function getObjectText(
  d: S3Destination,
  key: string,
  net: NetworkOptions = networkOptions(),
): Promise<string | undefined> {
  try {
    const out = await call('GetObject', () =>
      s3Client(d, net).send(new GetObjectCommand({ Bucket: d.bucket_name, Key: key })),
    );
    return (await out.Body?.transformToString('utf8')) ?? '';
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
  await call('DeleteObject', () => s3Client(d, net).send(new DeleteObjectCommand({ Bucket: d.bucket_name, Key: key })));
}

/** HeadBucket: the bucket exists and these credentials may use it (S3 answers 404 or 403 otherwise). */
export async function headBucket(d: S3Destination, net: NetworkOptions = networkOptions()): Promise<void> {
  await call('HeadBucket', () => s3Client(d, net).send(new HeadBucketCommand({ Bucket: d.bucket_name })));
}
