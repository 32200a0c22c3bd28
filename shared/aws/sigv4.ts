import { createHash, createHmac } from 'node:crypto';
import { ConfigError } from '../config.ts';

/**
 * AWS Signature Version 4 (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)
 * for the calls not yet made through an SDK client (shared/aws/*.ts sign their own): export destinations'
 * S3 and STS (shared/exports/s3.ts, sts.ts) and the lake's Athena engine (shared/lake/engine.ts). It goes
 * when they move to their clients.
 */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface SignRequest {
  method: string;
  url: URL;
  /** The path as sent (already escaped); the URL's own pathname when absent. */
  path?: string;
  /** Query parameters, unescaped; the URL's own search parameters when absent. */
  query?: Record<string, string>;
  headers: Record<string, string>;
  body?: string | Uint8Array | undefined;
  service: string;
  region: string;
  credentials: AwsCredentials;
  /** S3 signs the path as sent (no second escaping) and wants the payload hash in x-amz-content-sha256. */
  s3?: boolean;
  now?: Date;
}

/** Headers a proxy or the client may rewrite: never signed (@smithy/signature-v4's list). */
const UNSIGNED = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);

/** Lambda hands a function its role's credentials in the environment (what the SDK's fromEnv read). */
export function environmentCredentials(env: NodeJS.ProcessEnv = process.env): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey)
    throw new ConfigError('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them)');
  return { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined };
}

const sha256Hex = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** RFC 3986 escaping: encodeURIComponent leaves !'()* alone, SigV4 does not. */
export const escapeUri = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Non-S3 services sign the normalized path escaped once more (the SDK's `uriEscapePath`). */
function canonicalPath(path: string, s3: boolean): string {
  if (s3) return path;
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length && path.endsWith('/') ? '/' : ''}`;
  return escapeUri(normalized).replace(/%2F/g, '/');
}

function canonicalQuery(query: [string, string][]): string {
  return query
    .map(([k, v]) => [escapeUri(k), escapeUri(v)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

const keys = new Map<string, Buffer>();

function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  const id = `${secret}|${date}|${region}|${service}`;
  let key = keys.get(id);
  if (!key) {
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
    if (keys.size > 50) keys.clear();
    keys.set(id, key);
  }
  return key;
}

/** The request's headers with host, x-amz-date, the session token and `authorization` added. */
export function signedHeaders(r: SignRequest): Record<string, string> {
  const amzDate = (r.now ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
  const date = amzDate.slice(0, 8);
  const payloadHash = sha256Hex(r.body ?? '');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) headers[k.toLowerCase()] = v;
  headers.host ??= r.url.host;
  headers['x-amz-date'] = amzDate;
  if (r.credentials.sessionToken) headers['x-amz-security-token'] = r.credentials.sessionToken;
  if (r.s3) headers['x-amz-content-sha256'] = payloadHash;
  const names = Object.keys(headers)
    .filter((n) => !UNSIGNED.has(n))
    .sort();
  const query = r.query ? Object.entries(r.query) : [...r.url.searchParams.entries()];
  const canonical = [
    r.method.toUpperCase(),
    canonicalPath(r.path ?? r.url.pathname, r.s3 ?? false),
    canonicalQuery(query),
    ...names.map((n) => `${n}:${String(headers[n]).trim().replace(/\s+/g, ' ')}`),
    '',
    names.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${date}/${r.region}/${r.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonical)].join('\n');
  const signature = createHmac('sha256', signingKey(r.credentials.secretAccessKey, date, r.region, r.service))
    .update(toSign)
    .digest('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${r.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  return headers;
}
