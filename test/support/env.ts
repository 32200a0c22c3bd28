import { inject } from 'vitest';
import { configureLocalEnv } from '../../infra/local/env.ts';

// Every test process talks to the run's DynamoDB Local the way the local runtime does.
configureLocalEnv({ tableName: inject('tableName'), dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint'), queues: inject('queues'), dataDir: inject('dataDir') });
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
