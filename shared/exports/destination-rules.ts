import { isIP } from 'node:net';

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
