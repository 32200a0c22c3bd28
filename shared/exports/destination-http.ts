import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent, type ClientRequestArgs } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP, Socket } from 'node:net';
import { type Duplex, Readable } from 'node:stream';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { exportLoopbackOrigins } from '../config.ts';
import { addressProblem } from './destination-rules.ts';

/**
 * The HTTP layer under the SDK clients the exporter talks to a destination (S3) and to STS with on a
 * destination's behalf. A destination is chosen by a tenant, so: every address it connects to passes
 * addressProblem (the API's rule, global unicast only) after DNS resolution, deployed and locally
 * alike; connecting and the whole request are bounded in time, at most MAX_RESPONSE_BYTES of an answer
 * are read, the SDK sees an error answer's code and nothing else of it, and every failure is
 * described by our own sentence (never the remote's text).
 */
export interface NetworkOptions {
  /**
   * Origins (`http://127.0.0.1:4569`) reachable although loopback, plain http included: the local
   * runtime's own stand-ins, named in its configuration (EXPORT_LOOPBACK_ORIGINS); empty when deployed.
   */
  loopbackOrigins: ReadonlySet<string>;
  connectTimeoutMs: number;
  /** The whole request: connect, send the body, read the answer. */
  requestTimeoutMs: number;
}

export const DESTINATION_TIMEOUTS = { connectTimeoutMs: 10_000, requestTimeoutMs: 30_000 } as const;
export const MAX_RESPONSE_BYTES = 64 * 1024;

export function networkOptions(): NetworkOptions {
  return { loopbackOrigins: exportLoopbackOrigins(), ...DESTINATION_TIMEOUTS };
}

/** A connection the filter refused: the address is not one an export may reach. */
class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  readonly code = 'ERR_EXPORT_ADDRESS_REFUSED';
}

/** `address|port` of each allowed loopback origin: what a connection is compared with. */
function allowedTargets(origins: ReadonlySet<string>): ReadonlySet<string> {
  return new Set(
    [...origins].map((origin) => {
      const url = new URL(origin);
      return `${url.hostname.replace(/^\[|\]$/g, '')}|${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
    }),
  );
}

/**
 * The connect-time filter: an address given as a literal is checked before connecting, a name after
 * DNS resolution (every address it resolves to, so a name that also resolves inward is refused), with
 * the same rule as the API. Only the configured loopback origins' exact address and port pass besides.
 */
function filteredConnection(
  allowed: ReadonlySet<string>,
  options: ClientRequestArgs,
  connect: (options: ClientRequestArgs) => Duplex | null | undefined,
): Duplex | null | undefined {
  const refusal = (address: string) =>
    allowed.has(`${address}|${options.port}`) ? undefined : addressProblem(address);
  const host = options.host ?? options.hostname ?? undefined;
  if (host && isIP(host)) {
    const problem = refusal(host);
    if (problem) {
      const socket = new Socket();
      process.nextTick(() => socket.destroy(new RefusedAddressError(problem)));
      return socket;
    }
  }
  const lookup = (
    hostname: string,
    lookupOptions: LookupOptions,
    callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) =>
    dnsLookup(hostname, lookupOptions, (error, address: string | LookupAddress[], family?: number) => {
      if (error) return callback(error, address, family);
      const found = typeof address === 'string' ? [address] : address.map((a) => a.address);
      const problem = found.map(refusal).find(Boolean);
      if (problem) return callback(new RefusedAddressError(problem), address, family);
      callback(null, address, family);
    });
  return connect({ ...options, lookup: lookup as ClientRequestArgs['lookup'] });
}

class FilteredHttpAgent extends HttpAgent {
  constructor(private readonly allowed: ReadonlySet<string>) {
    super({ keepAlive: false });
  }
  override createConnection(options: ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void) {
    return filteredConnection(this.allowed, options, (o) => super.createConnection(o, callback));
  }
}

class FilteredHttpsAgent extends HttpsAgent {
  constructor(private readonly allowed: ReadonlySet<string>) {
    super({ keepAlive: false });
  }
  override createConnection(options: ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void) {
    return filteredConnection(this.allowed, options, (o) => super.createConnection(o, callback));
  }
}

const agents = new Map<string, { http: HttpAgent; https: HttpsAgent }>();

/** The filtering agents for these loopback origins (one pair per set, made once per process). */
function destinationAgents(loopbackOrigins: ReadonlySet<string>): { http: HttpAgent; https: HttpsAgent } {
  const key = [...loopbackOrigins].sort().join(',');
  let pair = agents.get(key);
  if (!pair) {
    const allowed = allowedTargets(loopbackOrigins);
    pair = { http: new FilteredHttpAgent(allowed), https: new FilteredHttpsAgent(allowed) };
    agents.set(key, pair);
  }
  return pair;
}

/** A failure of a destination, described in our own words (safe for latest_error and export logs). */
export class DestinationError extends Error {
  override name = 'DestinationError';
}

/**
 * What the handler stopped before the SDK saw an answer (a refused address, a timeout, a 2xx carrying
 * an error document, plain http): no code and no status the SDK's retry rules know, so never retried.
 */
class StoppedRequest extends Error {
  override name = 'StoppedRequest';
  constructor(
    readonly text: string,
    readonly answer?: { status: number; code: string | undefined },
  ) {
    super(text);
  }
}

/** Where the handler leaves an error answer's code for `failure` (set by us only: the remote's is dropped). */
const ERROR_CODE_HEADER = 'x-export-error-code';
/** CompleteMultipartUpload (and, rarely, others) may answer 200 with an error document. */
const ERROR_DOCUMENT = /^\s*(<\?xml[^>]*\?>\s*)?<Error>/;

/** An error code from an AWS XML error body, if it looks like one (letters and digits, at most 40). */
function errorCode(body: string): string | undefined {
  return /<Code>([A-Za-z0-9]{1,40})<\/Code>/.exec(body)?.[1];
}

/** At most MAX_RESPONSE_BYTES of a body within `ms`; the rest is never read (the stream is destroyed). */
function readBounded(body: Readable, ms: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => finish(new StoppedRequest('timed out')), Math.max(ms, 0));
    const finish = (error?: Error) => {
      clearTimeout(timer);
      body.removeAllListeners('data');
      if (error) {
        body.destroy();
        return reject(error);
      }
      resolve(Buffer.concat(chunks));
    };
    body.on('data', (c: Buffer) => {
      chunks.push(c.subarray(0, MAX_RESPONSE_BYTES - size));
      size += Math.min(c.length, MAX_RESPONSE_BYTES - size);
      if (size >= MAX_RESPONSE_BYTES) {
        // Enough to read a status and an error code: the rest is never read.
        body.destroy();
        finish();
      }
    });
    body.on('end', () => finish());
    body.on('error', (e) => finish(e));
  });
}

/** The handler's own words for what it stops; other errors go on to the SDK's retry rules unchanged. */
function stopped(error: unknown, net: NetworkOptions): StoppedRequest | undefined {
  if (error instanceof StoppedRequest) return error;
  if (error instanceof RefusedAddressError)
    return new StoppedRequest('the endpoint resolves to an address exports may not reach (not public unicast)');
  const e = error as { name?: string; code?: string; message?: string };
  // node-http-handler names its own timeouts (and a few socket codes) TimeoutError; its connect timeout says so.
  if (e.name === 'TimeoutError' && (!e.code || e.code === 'ETIMEDOUT'))
    return new StoppedRequest(
      /establish a connection/.test(e.message ?? '')
        ? `timed out connecting (${net.connectTimeoutMs} ms)`
        : `timed out after ${net.requestTimeoutMs} ms`,
    );
  return undefined;
}

/**
 * The request handler of every SDK client that talks to a destination or to STS for one: node's
 * handler on the filtering agents with the connect and request timeouts, then the answer read here
 * (bounded) and handed to the SDK as only its code, in the service's error document shape, so that
 * the SDK classifies and retries it (5xx, throttling) without ever holding the remote's text.
 */
type HttpRequest = Parameters<NodeHttpHandler['handle']>[0];
type HttpResponse = Awaited<ReturnType<NodeHttpHandler['handle']>>['response'];

export class DestinationHttpHandler extends NodeHttpHandler {
  constructor(
    private readonly net: NetworkOptions,
    /** The service's error document carrying only `code` (S3's <Error>, STS's <ErrorResponse>). */
    private readonly errorDocument: (code: string) => string,
  ) {
    const agents = destinationAgents(net.loopbackOrigins);
    super({
      httpAgent: agents.http,
      httpsAgent: agents.https,
      connectionTimeout: net.connectTimeoutMs,
      requestTimeout: net.requestTimeoutMs,
      throwOnRequestTimeout: true,
    });
  }

  override async handle(
    request: HttpRequest,
    options?: Parameters<NodeHttpHandler['handle']>[1],
  ): Promise<{ response: HttpResponse }> {
    const started = Date.now();
    const origin = `${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}`;
    if (request.protocol !== 'https:' && !this.net.loopbackOrigins.has(origin))
      throw new StoppedRequest('the endpoint is not https');
    let response: HttpResponse;
    let body: Buffer;
    try {
      ({ response } = await super.handle(request, options));
      body = await readBounded(response.body as Readable, this.net.requestTimeoutMs - (Date.now() - started));
    } catch (error) {
      throw stopped(error, this.net) ?? error;
    }
    delete response.headers[ERROR_CODE_HEADER];
    const text = body.toString('utf8');
    const code = errorCode(text);
    if (response.statusCode < 300 && ERROR_DOCUMENT.test(text))
      throw new StoppedRequest('an error document', { status: response.statusCode, code });
    if (response.statusCode >= 300) {
      if (code) response.headers[ERROR_CODE_HEADER] = code;
      body = Buffer.from(code ? this.errorDocument(code) : '');
    }
    response.body = Readable.from([body]);
    return { response };
  }
}

const TLS_CODES = /^(CERT_|ERR_TLS|ERR_SSL|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH)/;

/** A network failure in our words, from the error's code only (node's messages carry addresses and remote text). */
function networkReason(code: string): string {
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return 'connection reset';
  if (TLS_CODES.test(code)) return 'TLS handshake failed';
  return 'network error';
}

/**
 * What a failed SDK call through DestinationHttpHandler was, once the SDK's retries are spent: the
 * answer's status and code (`answered`, the caller's error class), or our sentence for everything else.
 */
export function destinationFailure(
  operation: string,
  error: unknown,
  answered: (status: number, code: string | undefined) => DestinationError,
): DestinationError {
  if (error instanceof DestinationError) return error;
  if (error instanceof StoppedRequest)
    return error.answer
      ? answered(error.answer.status, error.answer.code)
      : new DestinationError(`${operation} failed: ${error.text}`);
  const e = error as { $metadata?: { httpStatusCode?: number }; $response?: HttpResponse; code?: string };
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && e.$response) {
    const code = e.$response.headers[ERROR_CODE_HEADER];
    return answered(status, typeof code === 'string' ? code : undefined);
  }
  return new DestinationError(`${operation} failed: ${networkReason(e.code ?? '')}`);
}
