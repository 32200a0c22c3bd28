import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { flatCsv, omissionNote, rowsOf } from '../csv.ts';

export type HttpResponse = APIGatewayProxyStructuredResultV2 & { statusCode: number; headers: Record<string, string> };

/** What a handler returns: a status and a body; the factory serialises it. */
export interface Reply {
  /** 400 and 500 only for bodies that are not errors (a failed async query's status, as PostHog answers it). */
  status: 200 | 201 | 202 | 204 | 400 | 500;
  body?: unknown;
  headers?: Record<string, string>;
  /** The body as CSV when the route's CSV is not the generic flattening (trends: a row per series). */
  csv?: () => string;
  /** A body that is not JSON (the SDK's scripts): sent as it is with this content type. */
  text?: { contentType: string; body: string };
}

export const ok = (body: unknown): Reply => ({ status: 200, body });
export const created = (body: unknown): Reply => ({ status: 201, body });
export const accepted = (body: unknown): Reply => ({ status: 202, body });
export const noContent = (): Reply => ({ status: 204 });

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  if (body === undefined) return { statusCode, headers, body: '' };
  return { statusCode, headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** A handler's Reply as the HTTP response: CSV when the route answers CSV and the client asked for it, else its text or JSON. */
export function httpResponse(reply: Reply, format: 'json' | 'csv' = 'json'): HttpResponse {
  if (format === 'csv' && reply.status !== 204) {
    const csv = csvOf(reply);
    const headers = {
      'Content-Type': 'text/csv; charset=utf-8',
      ...(csv.truncated ? { 'X-CSV-Truncated': csv.truncated } : {}),
      ...reply.headers,
    };
    return { statusCode: reply.status, headers, body: csv.text };
  }
  if (reply.text)
    return {
      statusCode: reply.status,
      headers: { 'Content-Type': reply.text.contentType, ...reply.headers },
      body: reply.text.body,
    };
  return jsonResponse(reply.status, reply.status === 204 ? undefined : reply.body, reply.headers);
}

/** The reply's own CSV, or the generic flattening of its rows with a note of what did not fit. */
function csvOf(reply: Reply): { text: string; truncated?: string } {
  if (reply.csv) return { text: reply.csv() };
  const flat = flatCsv(rowsOf(reply.body));
  return { text: flat.text, truncated: omissionNote(flat) };
}

/**
 * The public origin the client used: behind CloudFront the edge function forwards the viewer's host
 * as x-forwarded-host (API Gateway only sees its own), locally it is the Host header.
 */
export function publicBaseUrl(event: APIGatewayProxyEventV2): string {
  const h = event.headers ?? {};
  const host = h['x-forwarded-host'] ?? h.host ?? event.requestContext?.domainName ?? 'localhost';
  const proto =
    h['x-forwarded-proto'] ?? (host.startsWith('127.0.0.1') || host.startsWith('localhost') ? 'http' : 'https');
  return `${proto}://${host}`;
}

/** Query parameters; for repeated keys the last value wins (Django's QueryDict.get). */
export function queryParameters(event: APIGatewayProxyEventV2): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(event.rawQueryString ?? '')) out[k] = v;
  return out;
}
