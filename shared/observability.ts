import { Logger } from '@aws-lambda-powertools/logger';

/** One structured JSON logger per process. Request-scoped keys are appended by the handler factory. */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'analytics' });
