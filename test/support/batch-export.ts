/** A batch export the API accepts (paused, so no run starts): a fresh object each call. */
export const validBatchExportBody = () => ({
  name: 'E',
  interval: 'hour',
  paused: true,
  destination: {
    type: 'S3',
    config: {
      bucket_name: 'bucket',
      region: 'us-east-1',
      prefix: '',
      role_arn: 'arn:aws:iam::123456789012:role/exports',
    },
  },
});

/**
 * Lets export destinations reach a test's own server (a loopback origin, `http://127.0.0.1:<port>`)
 * the way the local runtime names its S3 stand-in: by adding exactly that origin to EXPORT_LOOPBACK_ORIGINS,
 * which the API's check and the exporter's connection filter read when they run.
 */
export function allowExportEndpoint(url: string): void {
  const origins = new Set((process.env.EXPORT_LOOPBACK_ORIGINS ?? '').split(',').filter(Boolean));
  origins.add(new URL(url).origin);
  process.env.EXPORT_LOOPBACK_ORIGINS = [...origins].join(',');
}
