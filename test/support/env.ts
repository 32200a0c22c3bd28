import { inject } from 'vitest';
import { configureLocalEnv } from '../../infra/local/env.ts';

// Every test process talks to the run's DynamoDB Local the way the local runtime does.
configureLocalEnv({
  tableName: inject('tableName'),
  dynamodb: inject('dynamodbEndpoint'),
  sqs: inject('sqsEndpoint'),
  queues: inject('queues'),
  // The run's s3rver; a file's own fake destinations are added with allowExportEndpoint (test/support/batch-export.ts).
  exportLoopbackOrigins: [inject('s3Endpoint')],
  dataDir: inject('dataDir'),
});
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
// No test reaches AWS: a role a test export names is assumed through a fake STS (export-roles.test.ts) or fails here.
process.env.AWS_ENDPOINT_URL_STS ??= 'http://127.0.0.1:9';
