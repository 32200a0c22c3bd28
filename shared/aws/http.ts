import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { awsServiceEndpoint, type AwsService } from '../config.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { environmentCredentials, signedHeaders, type AwsCredentials } from './sigv4.ts';

/**
 * The AWS JSON protocols (1.0: DynamoDB, SQS; 1.1: KMS): one signed POST per call, `X-Amz-Target: <prefix>.<Op>`,
 * JSON in and out, over keep-alive connections. What the SDK did for our calls, without its
 * middleware stack, schemas and credential chain (~170 KB of every bundle and of cold-start init).
 */
export interface JsonServiceOptions {
  /** The signing name and the endpoint's first label: `dynamodb`, `sqs`, `kms`. */
  service: AwsService;
  /** `DynamoDB_20120810`, `AmazonSQS`, `TrentService`. */
  targetPrefix: string;
  /** AWS JSON 1.0 (DynamoDB, SQS) or 1.1 (KMS): the same but for this header. */
  jsonVersion?: '1.0' | '1.1';
  connectionTimeoutMs: number;
  /** Per attempt, from the request's start: the attempt is aborted (a TimeoutError) and counts as failed. */
  requestTimeoutMs: number;
  /** Attempts per call, the first included (the SDK's `maxAttempts`). */
  maxAttempts: number;
  /** Extra headers the service wants on every call. */
  headers?: Record<string, string>;
  /** Set only by tools and tests that address a table of their own; else awsServiceEndpoint() (shared/config.ts). */
  endpoint?: string;
  region?: string;
  credentials?: AwsCredentials;
}

export interface CallOptions {
  /** Aborts the call (an AbortError, not retried), as the SDK's `abortSignal`. */
  abortSignal?: AbortSignal;
}

/** An error the service answered with: the SDK's ServiceException shape (name, message, $metadata, and the body's other fields). */
export class AwsServiceError extends Error {
  $fault: 'client' | 'server';
  $metadata: { httpStatusCode: number; requestId: string | undefined; attempts?: number };
  [field: string]: unknown;
  constructor(name: string, message: string, status: number, requestId: string | undefined, fields: object) {
    super(message);
    Object.assign(this, fields);
    this.name = name;
    this.message = message;
    this.$fault = status >= 500 ? 'server' : 'client';
    this.$metadata = { httpStatusCode: status, requestId };
  }
}

// The SDK's classification (@smithy/service-error-classification): what is worth another attempt.
const THROTTLING = new Set([
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'RequestThrottledException',
  'TooManyRequestsException',
  'ProvisionedThroughputExceededException',
  'TransactionInProgressException',
  'RequestLimitExceeded',
  'BandwidthLimitExceeded',
  'LimitExceededException',
  'RequestThrottled',
  'SlowDown',
  'PriorRequestNotComplete',
  'EC2ThrottledException',
]);
const TRANSIENT_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT']);
const TRANSIENT_STATUS = new Set([500, 502, 503, 504]);

export function isRetryable(error: unknown): boolean {
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  return (
    THROTTLING.has(e.name ?? '') ||
    TRANSIENT_NAMES.has(e.name ?? '') ||
    NETWORK_CODES.has(e.code ?? '') ||
    status === 429 ||
    (status !== undefined && TRANSIENT_STATUS.has(status))
  );
}

function namedError(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: 50 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 50 }),
};

interface RawResponse {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One attempt: the request, bounded by the connection and request timeouts. */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  o: JsonServiceOptions,
  signal: AbortSignal | undefined,
): Promise<RawResponse> {
  const https = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(namedError('AbortError', 'Request aborted'));
    const req = (https ? httpsRequest : httpRequest)(
      {
        method: 'POST',
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port || undefined,
        path: url.pathname + url.search,
        headers,
        agent: https ? agents.https : agents.http,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    const timer = setTimeout(
      () => req.destroy(namedError('TimeoutError', `Connection timed out after ${o.requestTimeoutMs} ms`)),
      o.requestTimeoutMs,
    );
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const connecting = setTimeout(
        () =>
          req.destroy(
            namedError(
              'TimeoutError',
              `Socket timed out without establishing a connection within ${o.connectionTimeoutMs} ms`,
            ),
          ),
        o.connectionTimeoutMs,
      );
      socket.once(https ? 'secureConnect' : 'connect', () => clearTimeout(connecting));
      socket.once('close', () => clearTimeout(connecting));
    });
    const abort = () => req.destroy(namedError('AbortError', 'Request aborted'));
    signal?.addEventListener('abort', abort, { once: true });
    req.on('close', () => signal?.removeEventListener('abort', abort));
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

/** The service's error: its `__type` (or x-amzn-errortype) after '#' and before ':', its message and other fields. */
export function serviceError(res: RawResponse): AwsServiceError {
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    // A proxy's or load balancer's page: the status says what happened.
  }
  const header = res.headers['x-amzn-errortype'];
  const type = String(parsed.__type ?? parsed.code ?? (Array.isArray(header) ? header[0] : header) ?? '');
  const name = type.split('#').pop()!.split(':')[0] || `HTTP${res.status}`;
  const { __type: _, message, Message, ...fields } = parsed;
  const text = String(message ?? Message ?? (name === `HTTP${res.status}` ? res.body.slice(0, 200) : 'UnknownError'));
  const requestId = res.headers['x-amzn-requestid'];
  return new AwsServiceError(name, text, res.status, typeof requestId === 'string' ? requestId : undefined, fields);
}

/** A client of one AWS JSON service with fixed limits: `call(operation, input)` is the parsed answer, or throws the service's error. */
export class JsonServiceClient {
  private readonly target: { url: URL; region: string };
  constructor(readonly options: JsonServiceOptions) {
    this.target = options.endpoint
      ? { url: new URL(options.endpoint), region: options.region ?? 'us-east-1' }
      : awsServiceEndpoint(options.service);
  }

  async call(operation: string, input: unknown, options: CallOptions = {}): Promise<Record<string, unknown>> {
    const o = this.options;
    const { url, region } = this.target;
    const body = JSON.stringify(input);
    let last: unknown;
    let attempts = 0;
    return retryTransient(
      `${o.service} ${operation}`,
      async () => {
        attempts += 1;
        const headers = signedHeaders({
          method: 'POST',
          url,
          headers: {
            'content-type': `application/x-amz-json-${o.jsonVersion ?? '1.0'}`,
            'x-amz-target': `${o.targetPrefix}.${operation}`,
            ...o.headers,
          },
          body,
          service: o.service,
          region,
          credentials: o.credentials ?? environmentCredentials(),
        });
        headers['content-length'] = String(Buffer.byteLength(body));
        try {
          const res = await post(url, headers, body, o, options.abortSignal);
          if (res.status >= 200 && res.status < 300)
            return (res.body ? JSON.parse(res.body) : {}) as Record<string, unknown>;
          throw serviceError(res);
        } catch (error) {
          if (error instanceof AwsServiceError) error.$metadata.attempts = attempts;
          if (!isRetryable(error)) throw error;
          last = error;
          return TRANSIENT;
        }
      },
      // The SDK's standard backoff: before retry n, a random wait below min(20 s, 100 ms x 2^n).
      { attempts: o.maxAttempts, baseMs: 100, capMs: 20_000, gaveUp: () => last as Error },
    );
  }
}
