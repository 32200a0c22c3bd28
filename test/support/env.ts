import { inject } from 'vitest';
import { configureLocalEnv } from '../../infra/local/env.ts';

// Every test process talks to the run's DynamoDB Local the way the local runtime does.
configureLocalEnv({ tableName: inject('tableName'), dynamodb: inject('dynamodbEndpoint') });
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
