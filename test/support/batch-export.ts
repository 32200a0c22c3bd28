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
