import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { QUEUES, type QueueName } from './queue-settings.ts';

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
  /** JSON overriding the rate limits below, e.g. `{"crud":{"minute":5}}` or `{"enabled":false}` (tests, benchmarks). */
  rateLimits: 'ANALYTICS_RATE_LIMITS',
  /** Persons a filtered persons list examines per request (default below); tests lower it. */
  personScanLimit: 'ANALYTICS_PERSON_SCAN_LIMIT',
  /** Events one EventsQuery examines at most (default below); tests lower it. */
  eventsQueryScanLimit: 'ANALYTICS_EVENTS_QUERY_SCAN_LIMIT',
  /** Events one aggregated EventsQuery adds up at most (default below); tests lower it. */
  eventsQueryAggregateLimit: 'ANALYTICS_EVENTS_QUERY_AGGREGATE_LIMIT',
  /** Groups one aggregated EventsQuery keeps at most (default below); tests lower it. */
  eventsQueryGroupLimit: 'ANALYTICS_EVENTS_QUERY_GROUP_LIMIT',
  /** Milliseconds a bulk delete removes persons inline before queuing the rest (default below); tests set 0 to queue everything. */
  bulkDeleteBudgetMs: 'ANALYTICS_BULK_DELETE_BUDGET_MS',
  /** Megabytes of compacted segment columns a warm container keeps between trend queries (default below); 0 keeps none. */
  segmentCacheMb: 'ANALYTICS_SEGMENT_CACHE_MB',
  /** Milliseconds a blocking query computes inline before it is handed to the query worker (default below); tests lower it. */
  queryBlockingBudgetMs: 'ANALYTICS_QUERY_BLOCKING_BUDGET_MS',
  /** KMS key that wraps batch-export destination secrets (CDK sets it); absent -> a local key file under DATA_DIR. */
  exportSecretsKmsKeyId: 'EXPORT_SEALING_KMS_KEY_ID',
  /** Local runtime's data folder (the local key file of export secrets lives there). */
  dataDir: 'DATA_DIR',
  /**
   * Comma-separated loopback origins (`http://127.0.0.1:4569`) an export destination may be: the local
   * runtime's own S3 stand-in and test servers, one by one; read only in the local runtime, CDK never sets it.
   */
  exportLoopbackOrigins: 'EXPORT_LOOPBACK_ORIGINS',
  /** STS endpoint the exporter assumes customer roles through (the SDK's own variable name; local fakes in tests). */
  stsEndpoint: 'AWS_ENDPOINT_URL_STS',
  region: 'AWS_REGION',
  /**
   * Where the SDK calls DynamoDB, SQS, KMS and S3 (its own variable names, read by the clients
   * themselves: DynamoDB Local, the local SQS and s3rver in the local runtime and tests), else AWS's regional endpoints.
   */
  dynamodbEndpoint: 'AWS_ENDPOINT_URL_DYNAMODB',
  sqsEndpoint: 'AWS_ENDPOINT_URL_SQS',
  kmsEndpoint: 'AWS_ENDPOINT_URL_KMS',
  s3Endpoint: 'AWS_ENDPOINT_URL_S3',
  awsEndpoint: 'AWS_ENDPOINT_URL',
  /** The lake's S3 bucket (CDK sets it on the compactor); absent -> the local runtime writes the lake under DATA_DIR/lake. */
  lakeBucket: 'LAKE_BUCKET',
  /** The lake's Athena workgroup and Glue database (CDK sets them where trends may read the lake); absent -> no Athena. */
  lakeWorkgroup: 'LAKE_ATHENA_WORKGROUP',
  lakeDatabase: 'LAKE_GLUE_DATABASE',
  /** The role each project's lake queries assume, scoped to that project's objects by a session policy (shared/lake/athena.ts). */
  lakeQueryRole: 'LAKE_QUERY_ROLE_ARN',
  /** Events in a trend's range above which its closed, current days are answered by the lake engine (default below); tests lower it. */
  lakeRoutingEvents: 'ANALYTICS_LAKE_ROUTING_EVENTS',
  /** Events one behavioural cohort leaf's window may hold (default below); tests lower it. */
  cohortWindowEvents: 'ANALYTICS_COHORT_WINDOW_EVENTS',
} as const;

/**
 * A trend whose range holds more events than this (the day counters say, before anything is read) is
 * answered by the lake engine where it can be: one trend function computes ~10M events in 1.4 s and
 * tops out near 20M (docs/benchmarks.md).
 */
export const DEFAULT_LAKE_ROUTING_EVENTS = 20_000_000;

/**
 * A behavioural cohort leaf (performed_event in the last N days) whose window holds more events than
 * this fails its calculation instead of being counted: the same bound as one trend function's
 * in-process read (DEFAULT_LAKE_ROUTING_EVENTS), since a calculation step counts the window the same way.
 */
export const DEFAULT_COHORT_WINDOW_EVENTS = 20_000_000;

/** A `search` or `properties` persons list reads persons in order and stops after this many per request. */
export const DEFAULT_PERSON_SCAN_LIMIT = 10_000;

/** An EventsQuery listing events reads at most this many (kept or filtered out) per request, else a 400. */
export const DEFAULT_EVENTS_QUERY_SCAN_LIMIT = 20_000;

/**
 * An aggregated EventsQuery (count(), sum(...), ... grouped by its other columns) reads every event of
 * its window from compacted columns: at most this many per request (about a second of evaluation), else a 400.
 */
export const DEFAULT_EVENTS_QUERY_AGGREGATE_LIMIT = 1_000_000;

/** Distinct groups an aggregated EventsQuery holds in memory at most, else a 400. */
export const DEFAULT_EVENTS_QUERY_GROUP_LIMIT = 100_000;

/**
 * Compressed segment columns kept per container (shared/db/segment-cache.ts): about a month of 100k
 * events a day of one project's usual columns, a fraction of the 512-1,024 MB the functions have.
 */
export const DEFAULT_SEGMENT_CACHE_MB = 64;

/** A bulk delete starts no transaction group inline after this; the rest goes to its queue (shared/domain/persons.ts). */
export const DEFAULT_BULK_DELETE_BUDGET_MS = 4_000;

/**
 * A blocking query (POST /query) past this is handed to the query worker and the client told to poll:
 * with the 2 s the handler keeps back and 1.5 s to hand it over, well inside the API's 10 s.
 */
export const DEFAULT_QUERY_BLOCKING_BUDGET_MS = 6_000;

/**
 * Rate-limit classes: `crud` for every personal-key operation unless its route says otherwise,
 * `analytics` for the trend routes, `capture` per project token on the capture endpoints.
 */
export type RateLimitClass = 'crud' | 'analytics' | 'capture';
/** The classes a personal-key route can be in (capture has its own, per project token). */
export type KeyRateLimitClass = Exclude<RateLimitClass, 'capture'>;
export type RateWindow = 'minute' | 'hour';
export type RateLimits = Record<RateLimitClass, Partial<Record<RateWindow, number>>>;

/** PostHog's numbers (posthog/rate_limit.py); capture is far higher, per project token, per minute only. */
export const DEFAULT_RATE_LIMITS: RateLimits = {
  crud: { minute: 480, hour: 4800 },
  analytics: { minute: 240, hour: 1200 },
  capture: { minute: 10_000 },
};

/**
 * What an invocation is: an API request (answers within the API functions' 10 s timeout) or a
 * background worker (the `workers` of functions/routes.ts: stream, schedule and queue triggers,
 * 300-900 s timeouts, bulk reads and writes). shared/invocation.ts tracks which one is running.
 */
export type InvocationKind = 'api' | 'worker';

/**
 * How an AWS client calls (shared/aws/): its connection and per-attempt request timeouts (an attempt
 * past `requestTimeoutMs` is aborted, a TimeoutError, and counts as failed), its attempts, and the
 * SDK's retry mode: `standard` (exponential backoff with jitter, a retry quota, 500 ms base delay
 * after throttling, clock-skew correction), or `adaptive` (standard plus a client-side rate limiter
 * that slows every call of the client once DynamoDB throttles it).
 */
export interface AwsClientSettings {
  connectionTimeoutMs: number;
  requestTimeoutMs: number;
  /** Attempts per call, the first included. */
  maxAttempts: number;
  retryMode: 'standard' | 'adaptive';
}

/**
 * The DynamoDB client's settings per invocation kind (shared/aws/dynamodb.ts keeps one client per kind).
 * API: 2 x 4.5 s plus the SDK's backoff (at most 50 ms after a timed-out attempt; 1 s after a
 * throttled one, which answered at once) stays under the 10 s function timeout, so a hung table is our 503 and not API Gateway's; standard mode, so a throttled request
 * fails fast rather than waiting on a rate limiter. Workers: a slow page of a bulk read under load is
 * waited for rather than failing the run; 5 x 10 s plus backoff (< 15 s) is about a minute, far inside their timeouts. They are the hot write path
 * (capture batches, ingestion, compaction, deletions), so adaptive: once throttled, the container's
 * calls slow down together instead of each retrying into the throttle. (The request timeout's timer
 * starts with the request, so it bounds connecting too.)
 */
export const DYNAMODB_TIMEOUTS: Readonly<Record<InvocationKind, AwsClientSettings>> = {
  api: { connectionTimeoutMs: 1_000, requestTimeoutMs: 4_500, maxAttempts: 2, retryMode: 'standard' },
  worker: { connectionTimeoutMs: 1_000, requestTimeoutMs: 10_000, maxAttempts: 5, retryMode: 'adaptive' },
};

/**
 * The other clients, one per process each: SQS (queue hand-offs, inside API requests too) and KMS
 * (export secrets) answer small calls in milliseconds, so three attempts of 5 s keep a request from
 * hanging; S3 (the lake's Parquet files, written by the compactor) gets a minute per attempt for a large object.
 */
export const AWS_CLIENTS: Readonly<Record<'sqs' | 'kms' | 's3' | 'sts' | 'athena', AwsClientSettings>> = {
  sqs: { connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000, maxAttempts: 3, retryMode: 'standard' },
  kms: { connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000, maxAttempts: 3, retryMode: 'standard' },
  s3: { connectionTimeoutMs: 1_000, requestTimeoutMs: 60_000, maxAttempts: 3, retryMode: 'standard' },
  // The lake engine's: a session per project (AssumeRole), then Athena's four calls.
  sts: { connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000, maxAttempts: 3, retryMode: 'standard' },
  athena: { connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000, maxAttempts: 3, retryMode: 'standard' },
};

export interface Config {
  /** The single DynamoDB table; undefined only in processes that never touch it (the clock, bundling). */
  tableName: string | undefined;
  /** `local` is the embedded runtime (npm start, tests, CLIs); anything else is a deployed stage. */
  runtime: 'local' | 'lambda';
  /** Frozen "now" for reproducing date behaviour; honoured only by the local runtime, never by a deployed stage. */
  fixedNow: Date | undefined;
  stage: string;
  /** URL of each SQS queue the process was given (see shared/queue-settings.ts). */
  queueUrls: Partial<Record<QueueName, string>>;
  /** Requests allowed per window and class; `undefined` when rate limiting is switched off. */
  rateLimits: RateLimits | undefined;
  personScanLimit: number;
  eventsQueryScanLimit: number;
  eventsQueryAggregateLimit: number;
  eventsQueryGroupLimit: number;
  bulkDeleteBudgetMs: number;
  queryBlockingBudgetMs: number;
  segmentCacheMb: number;
  /** Batch export secrets: wrapped by this KMS key, or (undefined) by `localSecretsKeyFile`. */
  exportSecretsKmsKeyId: string | undefined;
  localSecretsKeyFile: string;
  stsEndpoint: string;
  /** Where the lake is written: an S3 bucket (deployed), a folder (local runtime), or nowhere (a stage without the lake). */
  lake: { bucket: string; region: string } | { dir: string } | undefined;
  /** What reads the lake for trends: Athena (deployed, with its workgroup), DuckDB over the folder (local runtime), or nothing. */
  lakeEngine:
    | { kind: 'athena'; workgroup: string; database: string; region: string; bucket: string; queryRole: string }
    | { kind: 'duckdb' }
    | undefined;
  lakeRoutingEvents: number;
  cohortWindowEvents: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A Lambda function is never the local runtime, whatever its environment says. */
function runtimeOf(env: NodeJS.ProcessEnv): Config['runtime'] {
  const deployed = Boolean(env[ENV.lambdaFunctionName]);
  return !deployed && env[ENV.runtime] === 'local' ? 'local' : 'lambda';
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const runtime = runtimeOf(env);
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
    rateLimits: readRateLimits(env[ENV.rateLimits]),
    personScanLimit: readPositiveInteger(ENV.personScanLimit, env[ENV.personScanLimit], DEFAULT_PERSON_SCAN_LIMIT),
    eventsQueryScanLimit: readPositiveInteger(
      ENV.eventsQueryScanLimit,
      env[ENV.eventsQueryScanLimit],
      DEFAULT_EVENTS_QUERY_SCAN_LIMIT,
    ),
    eventsQueryAggregateLimit: readPositiveInteger(
      ENV.eventsQueryAggregateLimit,
      env[ENV.eventsQueryAggregateLimit],
      DEFAULT_EVENTS_QUERY_AGGREGATE_LIMIT,
    ),
    eventsQueryGroupLimit: readPositiveInteger(
      ENV.eventsQueryGroupLimit,
      env[ENV.eventsQueryGroupLimit],
      DEFAULT_EVENTS_QUERY_GROUP_LIMIT,
    ),
    bulkDeleteBudgetMs: readPositiveInteger(
      ENV.bulkDeleteBudgetMs,
      env[ENV.bulkDeleteBudgetMs],
      DEFAULT_BULK_DELETE_BUDGET_MS,
      0,
    ),
    queryBlockingBudgetMs: readPositiveInteger(
      ENV.queryBlockingBudgetMs,
      env[ENV.queryBlockingBudgetMs],
      DEFAULT_QUERY_BLOCKING_BUDGET_MS,
      0,
    ),
    segmentCacheMb: readPositiveInteger(ENV.segmentCacheMb, env[ENV.segmentCacheMb], DEFAULT_SEGMENT_CACHE_MB, 0),
    exportSecretsKmsKeyId: env[ENV.exportSecretsKmsKeyId] || undefined,
    localSecretsKeyFile: resolve(env[ENV.dataDir] || '.data', 'export-secrets.key'),
    stsEndpoint: env[ENV.stsEndpoint] || `https://sts.${env[ENV.region] || 'us-east-1'}.amazonaws.com`,
    lake: env[ENV.lakeBucket]
      ? { bucket: env[ENV.lakeBucket] as string, region: env[ENV.region] || 'us-east-1' }
      : runtime === 'local'
        ? { dir: resolve(env[ENV.dataDir] || '.data', 'lake') }
        : undefined,
    lakeEngine:
      env[ENV.lakeBucket] && env[ENV.lakeWorkgroup] && env[ENV.lakeDatabase] && env[ENV.lakeQueryRole]
        ? {
            kind: 'athena',
            workgroup: env[ENV.lakeWorkgroup] as string,
            database: env[ENV.lakeDatabase] as string,
            region: env[ENV.region] || 'us-east-1',
            bucket: env[ENV.lakeBucket] as string,
            queryRole: env[ENV.lakeQueryRole] as string,
          }
        : !env[ENV.lakeBucket] && runtime === 'local'
          ? { kind: 'duckdb' }
          : undefined,
    lakeRoutingEvents: readPositiveInteger(
      ENV.lakeRoutingEvents,
      env[ENV.lakeRoutingEvents],
      DEFAULT_LAKE_ROUTING_EVENTS,
      0,
    ),
    cohortWindowEvents: readPositiveInteger(
      ENV.cohortWindowEvents,
      env[ENV.cohortWindowEvents],
      DEFAULT_COHORT_WINDOW_EVENTS,
    ),
  };
}

function readPositiveInteger(name: string, raw: string | undefined, fallback: number, least = 1): number {
  if (!raw?.trim()) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < least)
    throw new ConfigError(
      `${name} must be ${least === 1 ? 'a positive integer' : `an integer >= ${least}`}, got '${raw}'`,
    );
  return n;
}

/** Defaults, overridden per class and window by ANALYTICS_RATE_LIMITS; `{"enabled": false}` switches limiting off. */
function readRateLimits(raw: string | undefined): RateLimits | undefined {
  if (!raw?.trim()) return DEFAULT_RATE_LIMITS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${ENV.rateLimits} must be JSON, got '${raw}'`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(`${ENV.rateLimits} must be a JSON object`);
  const { enabled, ...classes } = parsed as Record<string, unknown>;
  if (enabled === false) return undefined;
  if (enabled !== undefined && enabled !== true)
    throw new ConfigError(`${ENV.rateLimits}.enabled must be true or false`);
  const out: RateLimits = {
    crud: { ...DEFAULT_RATE_LIMITS.crud },
    analytics: { ...DEFAULT_RATE_LIMITS.analytics },
    capture: { ...DEFAULT_RATE_LIMITS.capture },
  };
  for (const [name, windows] of Object.entries(classes)) {
    if (!(name in out))
      throw new ConfigError(`${ENV.rateLimits}: unknown class '${name}' (expected ${Object.keys(out).join(', ')})`);
    if (!windows || typeof windows !== 'object' || Array.isArray(windows))
      throw new ConfigError(`${ENV.rateLimits}.${name} must be an object`);
    for (const [window, limit] of Object.entries(windows)) {
      if (window !== 'minute' && window !== 'hour')
        throw new ConfigError(`${ENV.rateLimits}.${name}: unknown window '${window}' (expected minute, hour)`);
      if (limit === null) {
        delete out[name as RateLimitClass][window];
        continue;
      }
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
        throw new ConfigError(
          `${ENV.rateLimits}.${name}.${window} must be a positive integer (or null for no limit), got ${JSON.stringify(limit)}`,
        );
      }
      out[name as RateLimitClass][window] = limit;
    }
  }
  return out;
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

/**
 * The loopback origins export destinations may use (EXPORT_LOOPBACK_ORIGINS): empty unless this is the
 * local runtime. Each must be http(s) to a loopback address literal and a port, nothing more: a name
 * (localhost) or another address could be anything. Read from the environment each time, not with the
 * cached config, because a local stand-in's port is known only once it listens.
 */
export function exportLoopbackOrigins(env: NodeJS.ProcessEnv = process.env): ReadonlySet<string> {
  const raw = env[ENV.exportLoopbackOrigins];
  if (runtimeOf(env) !== 'local' || !raw?.trim()) return new Set();
  const origins = new Set<string>();
  for (const entry of raw.split(',')) {
    if (!entry.trim()) continue;
    let url: URL | undefined;
    try {
      url = new URL(entry.trim());
    } catch {}
    const host = url?.hostname.replace(/^\[|\]$/g, '');
    const loopback = host !== undefined && (host === '::1' || (isIP(host) === 4 && host.startsWith('127.')));
    if (!url || !/^https?:$/.test(url.protocol) || !loopback || !url.port || url.href !== `${url.origin}/`)
      throw new ConfigError(
        `${ENV.exportLoopbackOrigins}: '${entry.trim()}' is not an origin on a loopback address with a port (http://127.0.0.1:4569)`,
      );
    origins.add(url.origin);
  }
  return origins;
}

export function requireTableName(): string {
  const { tableName } = config();
  if (!tableName) throw new ConfigError(`${ENV.tableName} is not set`);
  return tableName;
}
