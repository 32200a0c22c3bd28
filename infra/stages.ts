import { RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';

/**
 * When an alarm fires (docs/operations.md explains each one). Counts are per 5-minute period unless
 * said otherwise.
 */
export interface AlarmThresholds {
  /** API 5xx responses as a percentage of requests (AWS/ApiGateway, 5 minutes, 2 of 3 periods). */
  apiServerErrorRatePercent: number;
  /** Below this many requests in 5 minutes the 5xx rate is not judged (one failure in three requests is noise). */
  apiServerErrorMinRequests: number;
  /** API p99 latency in ms (AWS/ApiGateway Latency, 5 minutes, 2 of 3 periods). */
  apiLatencyP99Ms: number;
  /** Age of the newest stream record the ingest worker has read, in ms (Lambda IteratorAge maximum). */
  ingestIteratorAgeMs: number;
  /** Lambda errors of one API function in 5 minutes. Workers alarm on their first error regardless. */
  functionErrors: number;
}

/** API Gateway stage throttling: the outer guard, in front of the per-key limits in the code. */
export interface ApiThrottle {
  /** Steady-state requests per second across the whole stage. */
  rateLimit: number;
  /** Requests that may arrive at once above the steady rate. */
  burstLimit: number;
}

export interface CustomDomain {
  /** For example `analytics.example.com`: a CloudFront alternate domain name. */
  domainName: string;
  /** ACM certificate covering `domainName`; CloudFront only accepts certificates in us-east-1. */
  certificateArn: string;
  /** When given, the stack also writes the A/AAAA alias records; otherwise point a CNAME at the distribution yourself. */
  hostedZone?: { hostedZoneId: string; zoneName: string };
}

/** Everything that differs between deployed stages; the stack reads nothing else from the stage name. */
export interface StageSettings {
  /** Part of the stack name (`analytics-<name>`) and of every resource name, so several stages live in one account. */
  name: string;
  /** Applied to the table, the log groups and the log bucket. */
  removalPolicy: RemovalPolicy;
  pointInTimeRecovery: boolean;
  deletionProtection: boolean;
  /** Function logs, API access logs and CloudFront access logs (when kept). */
  logRetention: RetentionDays;
  lambdaMemoryMb: number;
  alarms: AlarmThresholds;
  throttle: ApiThrottle;
  /** CloudFront standard logs into an S3 bucket (API Gateway access logs are always on). */
  cloudFrontAccessLogs: boolean;
  customDomain?: CustomDomain;
  /** Subscribed (after confirming the e-mail) to the stage's alarm topic. */
  alarmEmail?: string;
  /** An existing SNS topic (chat, paging) in the stage's region that every alarm also notifies. */
  alarmTopicArn?: string;
  /** Browser origins allowed to call the API. CORS is off unless this is set. */
  corsOrigins?: string[];
}

type Defaults = Omit<StageSettings, 'name'>;

const PROD: Defaults = {
  // Customer data: survive a stack deletion, a mistaken `cdk destroy` and a bad write.
  removalPolicy: RemovalPolicy.RETAIN,
  pointInTimeRecovery: true,
  deletionProtection: true,
  logRetention: RetentionDays.THREE_MONTHS,
  lambdaMemoryMb: 1024,
  alarms: {
    apiServerErrorRatePercent: 1,
    apiServerErrorMinRequests: 20,
    apiLatencyP99Ms: 2_000,
    ingestIteratorAgeMs: 2 * 60_000,
    functionErrors: 1,
  },
  throttle: { rateLimit: 1_000, burstLimit: 2_000 },
  cloudFrontAccessLogs: true,
};

// dev, feature stacks, any other name: cheap and fully removable by `cdk destroy`.
const NON_PROD: Defaults = {
  removalPolicy: RemovalPolicy.DESTROY,
  pointInTimeRecovery: false,
  deletionProtection: false,
  logRetention: RetentionDays.ONE_WEEK,
  lambdaMemoryMb: 512,
  alarms: {
    apiServerErrorRatePercent: 5,
    apiServerErrorMinRequests: 20,
    apiLatencyP99Ms: 5_000,
    ingestIteratorAgeMs: 10 * 60_000,
    functionErrors: 5,
  },
  throttle: { rateLimit: 100, burstLimit: 200 },
  cloudFrontAccessLogs: false,
};

/**
 * Per-stage choices that are not defaults: a custom domain, where alarms go, CORS. Fill these in for
 * your account, e.g.
 *   prod: { customDomain: { domainName: 'analytics.example.com', certificateArn: 'arn:aws:acm:us-east-1:...' },
 *           alarmEmail: 'oncall@example.com' },
 */
const CONFIGURED: Record<string, Partial<Defaults>> = {
  prod: {},
};

// The stage name ends up in the stack name and in resource names (`analytics-<stage>-<function>` ≤ 64).
const STAGE_NAME = /^[a-z][a-z0-9-]{0,19}$/;
const US_EAST_1_CERT = /^arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate\/[A-Za-z0-9-]+$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const SNS_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/;
const ORIGIN = /^(\*|https?:\/\/[a-z0-9.-]+(:\d+)?)$/;

/**
 * Settings of a stage: its defaults (prod, or non-prod for any other name), then CONFIGURED for it,
 * then `overrides` (tests, or a caller with its own source of settings).
 */
export function stageSettings(name: string, overrides: Partial<Defaults> = {}): StageSettings {
  if (!STAGE_NAME.test(name)) {
    throw new Error(`stage must match ${STAGE_NAME} (lowercase letters, digits, '-'), got '${name}'`);
  }
  const settings: StageSettings = { name, ...(name === 'prod' ? PROD : NON_PROD), ...CONFIGURED[name], ...overrides };
  const { customDomain, alarmEmail, alarmTopicArn, corsOrigins } = settings;
  if (customDomain && !US_EAST_1_CERT.test(customDomain.certificateArn)) {
    throw new Error(
      `customDomain.certificateArn must be an ACM certificate in us-east-1 (CloudFront), got '${customDomain.certificateArn}'`,
    );
  }
  if (alarmEmail !== undefined && !EMAIL.test(alarmEmail))
    throw new Error(`alarmEmail is not an e-mail address: '${alarmEmail}'`);
  if (alarmTopicArn !== undefined && !SNS_ARN.test(alarmTopicArn))
    throw new Error(`alarmTopicArn is not an SNS topic ARN: '${alarmTopicArn}'`);
  for (const origin of corsOrigins ?? []) {
    if (!ORIGIN.test(origin))
      throw new Error(`corsOrigins entries are '*' or scheme://host[:port] without a path, got '${origin}'`);
  }
  return settings;
}

/** `analytics-<stage>`: the stack name, and the prefix of every named resource of the stage. */
export const resourcePrefix = (stage: Pick<StageSettings, 'name'>) => `analytics-${stage.name}`;
