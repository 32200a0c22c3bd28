import { S3Client } from '@aws-sdk/client-s3';
import { AWS_CLIENTS, ENV } from '../config.ts';
import { clientOptions, traced } from './options.ts';

/**
 * S3 for the service's own buckets (the lake: shared/lake/store.ts), with the function's own role:
 * one @aws-sdk/client-s3 client per process (AWS_CLIENTS.s3). Customer export destinations are not
 * called through it (shared/exports/: their own credentials and network rules).
 */
export { DeleteObjectCommand, GetObjectCommand, NoSuchKey, PutObjectCommand } from '@aws-sdk/client-s3';

let client: S3Client | undefined;

export function s3(): S3Client {
  // A local S3 (s3rver, by AWS_ENDPOINT_URL_S3) has no bucket subdomains, and stores a streamed
  // upload's checksum framing inside the object unless checksums are sent only when required.
  const local = Boolean(process.env[ENV.s3Endpoint] || process.env[ENV.awsEndpoint]);
  client ??= traced(
    new S3Client({
      ...clientOptions(AWS_CLIENTS.s3),
      ...(local ? { forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED' as const } : {}),
    }),
  );
  return client;
}
