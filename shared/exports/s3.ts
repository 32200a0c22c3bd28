import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';

export interface S3Destination {
  bucket_name: string;
  region: string;
  aws_access_key_id?: string | null;
  aws_secret_access_key?: string | null;
  endpoint_url?: string | null;
}

const clients = new Map<string, S3Client>();

/** A client per destination: its own credentials when configured (else the function's role), its endpoint if any. */
function clientFor(d: S3Destination): S3Client {
  const id = JSON.stringify([d.region, d.endpoint_url ?? '', d.aws_access_key_id ?? '', d.aws_secret_access_key ? 'secret' : '']);
  let client = clients.get(id);
  if (!client) {
    client = new S3Client({
      region: d.region,
      maxAttempts: 3,
      ...(d.endpoint_url ? { endpoint: d.endpoint_url, forcePathStyle: true } : {}),
      ...(d.aws_access_key_id && d.aws_secret_access_key ? { credentials: { accessKeyId: d.aws_access_key_id, secretAccessKey: d.aws_secret_access_key } } : {}),
      // Plain checksums: streaming ones are stored verbatim by some S3-compatible servers (s3rver).
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    clients.set(id, client);
  }
  return client;
}

const PART_BYTES = 8 * 1024 * 1024;

/**
 * Puts one object so that it is complete or absent: a single PutObject, or for big files a multipart
 * upload that only becomes visible on CompleteMultipartUpload (aborted on any failure).
 */
export async function putObject(d: S3Destination, key: string, body: Buffer, contentType: string): Promise<void> {
  const s3 = clientFor(d);
  const Bucket = d.bucket_name;
  if (body.length <= PART_BYTES) {
    await s3.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: contentType }));
    return;
  }
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: key, ContentType: contentType }));
  try {
    const parts: { ETag: string; PartNumber: number }[] = [];
    for (let offset = 0, n = 1; offset < body.length; offset += PART_BYTES, n += 1) {
      const out = await s3.send(new UploadPartCommand({ Bucket, Key: key, UploadId, PartNumber: n, Body: body.subarray(offset, offset + PART_BYTES) }));
      parts.push({ ETag: out.ETag!, PartNumber: n });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }));
  } catch (error) {
    await s3.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId })).catch(() => undefined);
    throw error;
  }
}
