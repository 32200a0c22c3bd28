import { QUEUES, type QueueName } from './queues/settings.ts';

/**
 * Environment read and checked once. Names here are shared with infra/ (CDK sets them, the local
 * runtime sets them), so a typo cannot split the two.
 */
export const ENV = {
  tableName: 'TABLE_NAME',
  runtime: 'ANALYTICS_RUNTIME',
  fixedNow: 'ANALYTICS_FIXED_NOW',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
  serviceName: 'POWERTOOLS_SERVICE_NAME',
  stage: 'ANALYTICS_STAGE',
  lambdaFunctionName: 'AWS_LAMBDA_FUNCTION_NAME',
} as const;

export interface Config {
  /** The single DynamoDB table; undefined only in processes that never touch it (the clock, bundling). */
  tableName: string | undefined;
  /** `local` is the embedded runtime (npm start, tests, CLIs); anything else is a deployed stage. */
  runtime: 'local' | 'lambda';
  /** Frozen "now" for reproducing date behaviour; honoured only by the local runtime, never by a deployed stage. */
  fixedNow: Date | undefined;
  stage: string;
  /** URL of each SQS queue the process was given (see shared/queues/settings.ts). */
  queueUrls: Partial<Record<QueueName, string>>;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const deployed = Boolean(env[ENV.lambdaFunctionName]);
  const runtime = !deployed && env[ENV.runtime] === 'local' ? 'local' : 'lambda';
  let fixedNow: Date | undefined;
  const rawNow = env[ENV.fixedNow];
  if (runtime === 'local' && rawNow) {
    fixedNow = new Date(rawNow);
    if (Number.isNaN(fixedNow.getTime())) {
      throw new ConfigError(`${ENV.fixedNow} must be an ISO 8601 timestamp, got '${rawNow}'`);
    }
  }
  return {
    tableName: env[ENV.tableName] || undefined,
    runtime,
    fixedNow,
    stage: env[ENV.stage] || (runtime === 'local' ? 'local' : 'unknown'),
    queueUrls: Object.fromEntries(
      Object.entries(QUEUES).flatMap(([name, q]) => (env[q.urlEnv] ? [[name, env[q.urlEnv]]] : [])),
    ) as Partial<Record<QueueName, string>>,
  };
}

let cached: Config | undefined;

export function config(): Config {
  cached ??= readConfig();
  return cached;
}

export function requireQueueUrl(name: QueueName): string {
  const url = config().queueUrls[name];
  if (!url) throw new ConfigError(`${QUEUES[name].urlEnv} is not set`);
  return url;
}

export function requireTableName(): string {
  const { tableName } = config();
  if (!tableName) throw new ConfigError(`${ENV.tableName} is not set`);
  return tableName;
}
