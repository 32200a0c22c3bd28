import { isIP } from 'node:net';
import { ValidationError } from '../errors.ts';
import { COMPRESSIONS, FILE_FORMATS, type FileFormat } from './files.ts';

/**
 * Rules for the parts of an S3 destination that decide where the exporter connects and as whom.
 * Each returns the problem as a sentence (the 400's detail), or undefined when the value is fine.
 */

/**
 * Regions of the aws, aws-cn and aws-us-gov partitions, as the AWS SDK's partition metadata lists
 * them (@aws-sdk/core 3.981.0, dist-cjs/submodules/client: partitions[].regions).
 */
export const AWS_REGIONS: ReadonlySet<string> = new Set([
  'af-south-1',
  'ap-east-1',
  'ap-east-2',
  'ap-northeast-1',
  'ap-northeast-2',
  'ap-northeast-3',
  'ap-south-1',
  'ap-south-2',
  'ap-southeast-1',
  'ap-southeast-2',
  'ap-southeast-3',
  'ap-southeast-4',
  'ap-southeast-5',
  'ap-southeast-6',
  'ap-southeast-7',
  'ca-central-1',
  'ca-west-1',
  'eu-central-1',
  'eu-central-2',
  'eu-north-1',
  'eu-south-1',
  'eu-south-2',
  'eu-west-1',
  'eu-west-2',
  'eu-west-3',
  'il-central-1',
  'me-central-1',
  'me-south-1',
  'me-west-1',
  'mx-central-1',
  'sa-east-1',
  'sa-west-1',
  'us-east-1',
  'us-east-2',
  'us-west-1',
  'us-west-2',
  // China
  'cn-north-1',
  'cn-northwest-1',
  // GovCloud
  'us-gov-east-1',
  'us-gov-west-1',
]);

export function regionProblem(region: string): string | undefined {
  if (AWS_REGIONS.has(region)) return undefined;
  return `"${region.slice(0, 64)}" is not an AWS region (e.g. us-east-1, eu-west-1, cn-north-1, us-gov-west-1).`;
}

const RESERVED_PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-'];
const RESERVED_SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'];

/** S3's general purpose bucket naming rules (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html). */
export function bucketProblem(name: string): string | undefined {
  if (name.length < 3 || name.length > 63)
    return `Bucket names are 3 to 63 characters long; this one has ${name.length}.`;
  if (!/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/.test(name))
    return 'Bucket names use only lowercase letters, digits, dots and hyphens, and begin and end with a letter or digit.';
  if (name.includes('..')) return 'Bucket names must not contain two adjacent dots.';
  if (isIP(name) === 4) return 'Bucket names must not look like an IP address.';
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix) return `Bucket names must not start with "${prefix}" (reserved by S3).`;
  const suffix = RESERVED_SUFFIXES.find((s) => name.endsWith(s));
  if (suffix) return `Bucket names must not end with "${suffix}" (reserved by S3).`;
  return undefined;
}

export const MAX_ROLE_ARN_LENGTH = 2048;
/** IAM role ARN: partition, 12-digit account, optional path, a name of at most 64 characters. */
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/(?:[\w+=,.@-]+\/)*[\w+=,.@-]{1,64}$/;

export function roleArnProblem(arn: string): string | undefined {
  if (arn.length > MAX_ROLE_ARN_LENGTH) return `A role ARN has at most ${MAX_ROLE_ARN_LENGTH} characters.`;
  if (!ROLE_ARN.test(arn)) return 'Enter an IAM role ARN: arn:aws:iam::<12-digit account id>:role/<path/><name>.';
  return undefined;
}

export const MAX_ENDPOINT_URL_LENGTH = 2048;

/** 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

/** Literal addresses no deployed exporter may reach (hostnames are checked after DNS resolution, at connect time). */
function isPrivateLiteral(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(bare) === 4) {
    const [a, b] = bare.split('.').map(Number) as [number, number];
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b <= 127)
    );
  }
  if (isIP(bare) === 6)
    return bare === '::' || bare === '::1' || /^(fc|fd|fe[89ab])/.test(bare) || bare.startsWith('::ffff:');
  return false;
}

/**
 * https only. With `allowLoopback` (the local runtime's flag) also http(s) to 127.0.0.0/8, ::1 or
 * localhost; without it, no loopback, private or link-local literal (DNS names are checked again
 * after resolution by the exporter's connection filter).
 */
export function endpointProblem(raw: string, allowLoopback: boolean): string | undefined {
  if (raw.length > MAX_ENDPOINT_URL_LENGTH) return `An endpoint URL has at most ${MAX_ENDPOINT_URL_LENGTH} characters.`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'Enter a valid URL.';
  }
  if (url.username || url.password) return 'The endpoint URL must not carry a user name or password.';
  if (url.search || url.hash) return 'The endpoint URL must not have a query or fragment.';
  const loopback = isLoopbackHost(url.hostname);
  if (allowLoopback && loopback && (url.protocol === 'http:' || url.protocol === 'https:')) return undefined;
  if (url.protocol !== 'https:') return 'The endpoint URL must use https.';
  if (loopback || isPrivateLiteral(url.hostname))
    return 'The endpoint URL must not point at a private, loopback or link-local address.';
  return undefined;
}

/** `S3` is PostHog's legacy name: it takes every field of both current types, as it always has. */
export const DESTINATION_TYPES = ['S3', 'AwsS3', 'S3Compatible'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

const COMMON_FIELDS = [
  'bucket_name',
  'region',
  'prefix',
  'compression',
  'file_format',
  'max_file_size_mb',
  'include_events',
  'exclude_events',
  'aws_access_key_id',
  'aws_secret_access_key',
];
const AWS_ONLY = ['role_arn', 'encryption', 'kms_key_id'];
const COMPATIBLE_ONLY = ['endpoint_url', 'use_virtual_style_addressing'];
const FIELDS: Record<DestinationType, readonly string[]> = {
  S3: [...COMMON_FIELDS, ...AWS_ONLY, ...COMPATIBLE_ONLY],
  AwsS3: [...COMMON_FIELDS, ...AWS_ONLY],
  S3Compatible: [...COMMON_FIELDS, ...COMPATIBLE_ONLY],
};
const REQUIRED: Record<DestinationType, readonly string[]> = {
  S3: ['bucket_name', 'region', 'prefix'],
  AwsS3: ['bucket_name', 'region', 'prefix'],
  S3Compatible: ['bucket_name', 'prefix', 'endpoint_url'],
};
const LISTS = ['include_events', 'exclude_events'];
const BOOLEANS = ['use_virtual_style_addressing'];
const INTEGERS = ['max_file_size_mb'];

export const ENCRYPTIONS = ['AES256', 'aws:kms'] as const;
/** A file per window is held in memory whole: a bigger part would not help it, and S3's part limit is 5 GB. */
export const MAX_FILE_SIZE_MB = 5_000;
/** A KMS key id, key ARN, alias name or alias ARN. */
const KMS_KEY =
  /^(arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)\/[\w/+=,.@-]{1,256}|alias\/[\w/+=,.@-]{1,256}|[0-9a-fA-F-]{32,36}|mrk-[0-9a-f]{32})$/;
/** S3-compatible stores name regions their own way (auto, fr-par, nyc3). */
const COMPATIBLE_REGION = /^[a-z0-9][a-z0-9-]{0,62}$/;

const ATTR = 'destination__config';

/**
 * PostHog's destination config rules (PR #27148, and its per-type field sets): unknown fields,
 * including the other type's, are named; required ones are named; types checked; then each value's
 * own rule. Returns the config with numbers and booleans given as strings converted (PostHog's try_convert_to_type).
 */
export function destinationConfig(
  type: DestinationType,
  raw: unknown,
  options: { partial: boolean; allowLoopback: boolean },
): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ValidationError('Expected a dictionary of settings.', ATTR);
  const config = { ...(raw as Record<string, unknown>) };
  const allowed = FIELDS[type];
  const unknown = Object.keys(config).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    const other = type === 'AwsS3' ? 'S3Compatible' : type === 'S3Compatible' ? 'AwsS3' : undefined;
    const theirs = other ? unknown.filter((k) => FIELDS[other].includes(k)) : [];
    throw new ValidationError(
      `Configuration has unknown field/s: ${unknown.map((k) => `'${k}'`).join(', ')}.${theirs.length ? ` ${theirs.map((k) => `'${k}'`).join(', ')} belong(s) to ${other} destinations, not ${type}.` : ''}`,
      ATTR,
    );
  }
  if (!options.partial) {
    const missing = REQUIRED[type].find((k) => config[k] === undefined);
    if (missing)
      throw new ValidationError(
        `Configuration missing required field: '${missing}'.`,
        `${ATTR}__${missing}`,
        'required',
      );
  }
  for (const [k, v] of Object.entries(config)) {
    if (v === null) continue;
    if (LISTS.includes(k)) {
      if (!(Array.isArray(v) && v.every((x) => typeof x === 'string')))
        throw new ValidationError('Expected a list of event names.', `${ATTR}__${k}`);
    } else if (BOOLEANS.includes(k)) {
      if (v === 'true' || v === 'false') config[k] = v === 'true';
      else if (typeof v !== 'boolean')
        throw new ValidationError(
          `Configuration has invalid type: got '${typeof v}', expected 'bool'.`,
          `${ATTR}__${k}`,
        );
    } else if (INTEGERS.includes(k)) {
      const n = typeof v === 'string' && /^\d{1,10}$/.test(v) ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isInteger(n))
        throw new ValidationError(
          `Configuration has invalid type: got '${typeof v}', expected 'int'.`,
          `${ATTR}__${k}`,
        );
      config[k] = n;
    } else if (typeof v !== 'string') {
      throw new ValidationError(`Configuration has invalid type: got '${typeof v}', expected 'str'.`, `${ATTR}__${k}`);
    }
  }
  for (const k of ['bucket_name', 'region', 'aws_access_key_id', 'aws_secret_access_key', 'role_arn', 'endpoint_url'])
    if (config[k] === '')
      throw new ValidationError(`The following inputs are empty: ['${k}'].`, `${ATTR}__${k}`, 'blank');
  const format = (config.file_format ?? 'JSONLines') as FileFormat;
  if (!FILE_FORMATS.includes(format))
    throw new ValidationError(
      `File format ${String(format).slice(0, 64)} is not supported. Supported file formats are ${FILE_FORMATS.join(', ')}.`,
      `${ATTR}__file_format`,
    );
  const compressions: readonly string[] = COMPRESSIONS[format];
  if (config.compression != null && !compressions.includes(config.compression as string))
    throw new ValidationError(
      `Compression ${String(config.compression).slice(0, 64)} is not supported for file format ${format}. Supported compressions are ${compressions.filter((c) => c !== 'none').join(', ')}.`,
      `${ATTR}__compression`,
    );
  const size = config.max_file_size_mb as number | null | undefined;
  if (size != null && (size < 1 || size > MAX_FILE_SIZE_MB))
    throw new ValidationError(
      `max_file_size_mb is a whole number of megabytes from 1 to ${MAX_FILE_SIZE_MB}.`,
      `${ATTR}__max_file_size_mb`,
    );
  if (config.encryption != null && !(ENCRYPTIONS as readonly unknown[]).includes(config.encryption))
    throw new ValidationError(`encryption is one of: ${ENCRYPTIONS.join(', ')} (or null).`, `${ATTR}__encryption`);
  if (config.kms_key_id != null) {
    if (config.encryption !== 'aws:kms')
      throw new ValidationError('kms_key_id goes with "encryption": "aws:kms".', `${ATTR}__kms_key_id`);
    if (!KMS_KEY.test(config.kms_key_id as string))
      throw new ValidationError(
        'Enter a KMS key id, key ARN, alias name (alias/...) or alias ARN.',
        `${ATTR}__kms_key_id`,
      );
  }
  const regionRule =
    type === 'S3Compatible'
      ? (r: string) =>
          COMPATIBLE_REGION.test(r)
            ? undefined
            : 'A region is lowercase letters, digits and hyphens (e.g. auto, fr-par).'
      : regionProblem;
  const problems: [string, (v: string) => string | undefined][] = [
    ['region', regionRule],
    ['bucket_name', bucketProblem],
    ['role_arn', roleArnProblem],
    ['endpoint_url', (url) => endpointProblem(url, options.allowLoopback)],
  ];
  for (const [k, check] of problems) {
    const problem = typeof config[k] === 'string' && config[k] !== '' ? check(config[k]) : undefined;
    if (problem) throw new ValidationError(problem, `${ATTR}__${k}`);
  }
  return config;
}
