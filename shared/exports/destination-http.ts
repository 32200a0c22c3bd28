import { request as httpRequest, type Agent } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { globalHttpAgent, globalHttpsAgent } from 'request-filtering-agent';
import { config } from '../config.ts';

/**
 * The one way the exporter talks to a destination (S3) or to STS on a destination's behalf. A
 * destination is chosen by a tenant, so: its address is checked after DNS resolution (no private,
 * loopback or link-local targets unless the local runtime allows loopback), connecting and the whole
 * request are bounded in time, at most MAX_RESPONSE_BYTES of an answer are read, and every failure
 * is described by our own sentence (never the remote's text).
 */
export interface NetworkOptions {
  /** Loopback (and plain http) endpoints reachable: the local runtime and tests only. */
  allowLoopback: boolean;
  connectTimeoutMs: number;
  /** The whole request: connect, send the body, read the answer. */
  requestTimeoutMs: number;
}

export const DESTINATION_TIMEOUTS = { connectTimeoutMs: 10_000, requestTimeoutMs: 30_000 } as const;
export const MAX_RESPONSE_BYTES = 64 * 1024;

export function networkOptions(): NetworkOptions {
  return { allowLoopback: config().allowLoopbackExportEndpoints, ...DESTINATION_TIMEOUTS };
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
  const e = error as { code?: string; message?: string };
  if (/^DNS lookup .* is not allowed/.test(e.message ?? ''))
    return { text: 'the endpoint resolves to a private, loopback or link-local address', retryable: false };
  const code = e.code ?? '';
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
  if (!https && !net.allowLoopback)
    return Promise.reject(new DestinationError(`${operation} failed: the endpoint is not https`));
  const agent: Agent | undefined = net.allowLoopback ? undefined : https ? globalHttpsAgent : globalHttpAgent;
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
