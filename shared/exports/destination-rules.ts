import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ValidationError } from '../errors.ts';
import {
  COMPRESSIONS,
  FILE_FORMATS,
  type FileFormat,
  longestKeyBytes,
  MAX_FILE_NAME_BYTES,
  MAX_S3_KEY_BYTES,
  PREFIX_PLACEHOLDERS,
  unknownPlaceholders,
} from './files.ts';

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

/**
 * IPv4 ranges no export may reach: IANA's special-purpose registry (RFC 6890 and its updates) plus
 * multicast and the reserved block. First match names the range, so broadcast precedes 240/4.
 */
const IPV4_REFUSED: readonly (readonly [cidr: string, name: string])[] = [
  ['0.0.0.0/8', '"this network"'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared address space (carrier-grade NAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.31.196.0/24', 'AS112'],
  ['192.52.193.0/24', 'AMT'],
  ['192.88.99.0/24', 'deprecated 6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['192.175.48.0/24', 'AS112 direct delegation'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
];

/** Where an IPv6 range carries an IPv4 address (so the 400 can say which one it would reach). */
type Embedded = (parts: number[]) => number[];
const lastWords: Embedded = (p) => [p[6]! >> 8, p[6]! & 255, p[7]! >> 8, p[7]! & 255];
/** RFC 3056: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD. */
const sixToFour: Embedded = (p) => [p[1]! >> 8, p[1]! & 255, p[2]! >> 8, p[2]! & 255];
/** RFC 4380: the client's address is the last 32 bits, inverted. */
const teredoClient: Embedded = (p) => lastWords(p).map((b) => b ^ 255);

/**
 * IPv6 outside 2000::/3 is refused whatever it is; these name the ranges (inside 2000::/3 too) a
 * global unicast allow-list must still refuse, most specific first. Transition ranges are refused
 * whole, whatever IPv4 they carry: an exporter never needs them (the same host has a plain address).
 */
const IPV6_REFUSED: readonly (readonly [cidr: string, name: string, embedded?: Embedded])[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', 'IPv4-mapped IPv6', lastWords],
  ['::/96', 'IPv4-compatible IPv6', lastWords],
  ['::ffff:0:0:0/96', 'IPv4-translated IPv6 (SIIT)', lastWords],
  ['64:ff9b::/96', 'NAT64', lastWords],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard-only'],
  ['2001::/32', 'Teredo', teredoClient],
  ['2001:2::/48', 'benchmarking'],
  ['2001:10::/28', 'ORCHID'],
  ['2001:20::/28', 'ORCHIDv2'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'IETF protocol assignments'],
  ['2002::/16', '6to4', sixToFour],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'SRv6 SIDs'],
  ['fc00::/7', 'unique local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local'],
  ['ff00::/8', 'multicast'],
];
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

const parsedV4 = IPV4_REFUSED.map(([cidr, name]) => ({ cidr, name, range: ipaddr.IPv4.parseCIDR(cidr) }));
const parsedV6 = IPV6_REFUSED.map(([cidr, name, embedded]) => ({
  cidr,
  name,
  embedded,
  range: ipaddr.IPv6.parseCIDR(cidr),
}));

/**
 * An IPv6 address's dotted IPv4 tail as two hex words: ipaddr.js reads `::a.b.c.d` as IPv4-mapped
 * (`::ffff:a.b.c.d`), where inet_pton, the WHATWG URL parser and so the socket read IPv4-compatible.
 */
function hexTail(address: string): string {
  const tail = /:(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!tail) return address;
  const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
  if ([a, b, c, d].some((x) => x > 255)) return address;
  const word = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
  return `${address.slice(0, tail.index)}:${word(a, b)}:${word(c, d)}`;
}

function ipv4Problem(address: ipaddr.IPv4): string | undefined {
  const hit = parsedV4.find((r) => address.match(r.range));
  return hit && `${address.toString()} is ${hit.name} (${hit.cidr})`;
}

/**
 * The one rule for where an export may connect, shared by the API's check of a literal endpoint and
 * the exporter's check of every address it is about to connect to: an allow-list of global unicast
 * (IPv4 outside every special-purpose range, IPv6 inside 2000::/3 and outside its special ranges).
 * Returns why an address is refused, or undefined for a public address. Any spelling ipaddr.js reads
 * is accepted (expanded, compressed, dotted-quad tails, IPv4 in hex, octal or one number).
 */
export function addressProblem(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(hexTail(address.replace(/^\[|\]$/g, '')));
  } catch {
    return `${address.slice(0, 64)} is not an IP address`;
  }
  if (parsed.kind() === 'ipv4') return ipv4Problem(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  const shown = v6.toString();
  const hit = parsedV6.find((r) => v6.match(r.range));
  if (hit) {
    if (!hit.embedded) return `${shown} is ${hit.name} (${hit.cidr})`;
    const inner = new ipaddr.IPv4(hit.embedded(v6.parts));
    const why = ipv4Problem(inner);
    return `${shown} is ${hit.name} (${hit.cidr}), carrying ${why ?? inner.toString()}`;
  }
  if (!v6.match(GLOBAL_UNICAST_V6)) return `${shown} is outside global unicast (2000::/3)`;
  return undefined;
}

/** localhost and its subdomains (RFC 6761), with or without the final dot: they name this machine. */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * https only, to a public address: a literal address must pass addressProblem, a name must not be
 * localhost (other names are checked after DNS resolution, at connect time, by the same rule).
 * `loopbackOrigins` are the local runtime's own stand-ins (its S3), named one by one in its
 * configuration: exactly those origins are also allowed, plain http included; no other loopback.
 */
export function endpointProblem(raw: string, loopbackOrigins: ReadonlySet<string>): string | undefined {
  if (raw.length > MAX_ENDPOINT_URL_LENGTH) return `An endpoint URL has at most ${MAX_ENDPOINT_URL_LENGTH} characters.`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'Enter a valid URL.';
  }
  if (url.username || url.password) return 'The endpoint URL must not carry a user name or password.';
  if (url.search || url.hash) return 'The endpoint URL must not have a query or fragment.';
  if (loopbackOrigins.has(url.origin)) return undefined;
  if (url.protocol !== 'https:') return 'The endpoint URL must use https.';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const problem = addressProblem(host);
    if (problem) return `The endpoint URL must point at a public (global unicast) address: ${problem}.`;
  } else if (isLocalhostName(host)) {
    return 'The endpoint URL must point at a public (global unicast) address, not localhost.';
  }
  return undefined;
}

/**
 * A prefix names only known placeholders, has no `.` or `..` segment (S3 keeps them literally, but
 * every tool that reads the bucket as paths resolves them, out of the export's folder), and keeps every
 * key it can produce within S3's 1,024 bytes: its placeholders at their longest plus the longest file name.
 */
export function prefixProblem(prefix: string): string | undefined {
  const unknown = unknownPlaceholders(prefix);
  if (unknown.length)
    return `Unknown placeholder${unknown.length > 1 ? 's' : ''} in the prefix: ${unknown
      .slice(0, 5)
      .map((p) => p.slice(0, 64))
      .join(', ')}. A prefix may use ${PREFIX_PLACEHOLDERS.join(', ')}.`;
  const dots = [...new Set(prefix.split('/').filter((segment) => segment === '.' || segment === '..'))];
  if (dots.length)
    return `The prefix must not have "." or ".." path segments (it has ${dots.map((d) => `"${d}"`).join(' and ')}).`;
  const bytes = longestKeyBytes(prefix);
  if (bytes > MAX_S3_KEY_BYTES)
    return `Object keys under this prefix reach ${bytes} bytes (placeholders at their longest, plus up to ${MAX_FILE_NAME_BYTES} bytes of file name), over S3's limit of ${MAX_S3_KEY_BYTES.toLocaleString('en-US')} bytes: shorten the prefix by ${bytes - MAX_S3_KEY_BYTES} bytes.`;
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
  options: { partial: boolean; loopbackOrigins: ReadonlySet<string> },
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
    ['prefix', prefixProblem],
    ['endpoint_url', (url) => endpointProblem(url, options.loopbackOrigins)],
  ];
  for (const [k, check] of problems) {
    const problem = typeof config[k] === 'string' && config[k] !== '' ? check(config[k]) : undefined;
    if (problem) throw new ValidationError(problem, `${ATTR}__${k}`);
  }
  return config;
}
