import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest, type Agent, type ClientRequestArgs } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { exportLoopbackOrigins } from '../config.ts';
import { addressProblem } from './destination-rules.ts';

/**
 * The one way the exporter talks to a destination (S3) or to STS on a destination's behalf. A
 * destination is chosen by a tenant, so: every address it connects to passes addressProblem (the
 * API's rule, global unicast only) after DNS resolution, deployed and locally alike; connecting and
 * the whole request are bounded in time, at most MAX_RESPONSE_BYTES of an answer are read, and every
 * failure is described by our own sentence (never the remote's text).
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
export class RefusedAddressError extends Error {
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
export function destinationAgents(loopbackOrigins: ReadonlySet<string>): { http: HttpAgent; https: HttpsAgent } {
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
  constructor(
    message: string,
    /** Worth another attempt within the same run (a reset connection), unlike a timeout or a refusal. */
    readonly retryable = false,
  ) {
    super(message);
  }
}

export interface DestinationResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** At most MAX_RESPONSE_BYTES of the body, as UTF-8. */
  body: string;
}

const TLS_CODES = /^(CERT_|ERR_TLS|ERR_SSL|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH)/;

/** What went wrong, from the error's code only (node's messages carry addresses and remote text). */
function reason(error: unknown): { text: string; retryable: boolean } {
  if (error instanceof RefusedAddressError)
    return { text: 'the endpoint resolves to an address exports may not reach (not public unicast)', retryable: false };
  const code = (error as { code?: string }).code ?? '';
  if (code === 'ECONNREFUSED') return { text: 'connection refused', retryable: false };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { text: 'host not found', retryable: false };
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED')
    return { text: 'connection reset', retryable: true };
  if (TLS_CODES.test(code)) return { text: 'TLS handshake failed', retryable: false };
  return { text: 'network error', retryable: false };
}

class Timeout extends Error {
  constructor(readonly phase: 'connecting' | 'waiting') {
    super(phase);
  }
}

export function destinationRequest(
  operation: string,
  url: URL,
  init: { method: string; path: string; headers: Record<string, string>; body?: Buffer },
  net: NetworkOptions,
): Promise<DestinationResponse> {
  const https = url.protocol === 'https:';
  if (!https && !net.loopbackOrigins.has(url.origin))
    return Promise.reject(new DestinationError(`${operation} failed: the endpoint is not https`));
  const agents = destinationAgents(net.loopbackOrigins);
  const agent: Agent = https ? agents.https : agents.http;
  const requester = https ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = (error: unknown, value?: DestinationResponse) => {
      if (settled) return;
      settled = true;
      timers.forEach(clearTimeout);
      if (!error) return resolve(value!);
      if (error instanceof Timeout)
        return reject(
          new DestinationError(
            `${operation} failed: timed out ${error.phase === 'connecting' ? `connecting (${net.connectTimeoutMs} ms)` : `after ${net.requestTimeoutMs} ms`}`,
          ),
        );
      const why = reason(error);
      reject(new DestinationError(`${operation} failed: ${why.text}`, why.retryable));
    };
    const req = requester(
      {
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || undefined,
        method: init.method,
        path: init.path,
        headers: init.headers,
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () =>
          finish(undefined, {
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        res.on('data', (c: Buffer) => {
          if (size >= MAX_RESPONSE_BYTES) return;
          chunks.push(c.subarray(0, MAX_RESPONSE_BYTES - size));
          size += Math.min(c.length, MAX_RESPONSE_BYTES - size);
          if (size >= MAX_RESPONSE_BYTES) {
            // Enough to read a status and an error code: the rest is never read.
            done();
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('error', (e) => finish(e));
      },
    );
    timers.push(setTimeout(() => req.destroy(new Timeout('waiting')), net.requestTimeoutMs));
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const t = setTimeout(() => req.destroy(new Timeout('connecting')), net.connectTimeoutMs);
      timers.push(t);
      socket.once('connect', () => clearTimeout(t));
    });
    req.on('error', (e) => finish(e));
    req.end(init.body);
  });
}

/** An error code from an AWS XML error body, if it looks like one (letters and digits, at most 40). */
export function errorCode(body: string): string | undefined {
  return /<Code>([A-Za-z0-9]{1,40})<\/Code>/.exec(body)?.[1];
}
