import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { issueApiKey, type NewKeyInput } from '#shared/domain/api-keys.ts';
import { startApiServer, type ApiServer } from '../../infra/local/http-server.ts';

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface Client {
  request<T = any>(
    method: string,
    path: string,
    init?: { body?: unknown; headers?: Record<string, string>; raw?: string | Buffer },
  ): Promise<Reply<T>>;
  get<T = any>(path: string): Promise<Reply<T>>;
  post<T = any>(path: string, body?: unknown): Promise<Reply<T>>;
  patch<T = any>(path: string, body?: unknown): Promise<Reply<T>>;
  delete<T = any>(path: string): Promise<Reply<T>>;
}

/** A fetch client for the local server; `key` goes in `Authorization: Bearer`. */
export function client(baseUrl: string, key?: string): Client {
  const request = async (
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; raw?: string | Buffer } = {},
  ) => {
    const headers: Record<string, string> = { ...(key ? { authorization: `Bearer ${key}` } : {}), ...init.headers };
    let body: string | Buffer | undefined = init.raw;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed as any, headers: res.headers, text };
  };
  return {
    request,
    get: (path) => request('GET', path),
    post: (path, body) => request('POST', path, { body: body ?? {} }),
    patch: (path, body) => request('PATCH', path, { body: body ?? {} }),
    delete: (path) => request('DELETE', path),
  };
}

/** The local HTTP server for this test file, on a random port, against the run's DynamoDB Local. */
/**
 * One local API for a test file. `options` are the local server's (a file that measures correctness
 * under a load DynamoDB Local serves far slower than DynamoDB may give its functions more time).
 */
export function useApi(options?: Parameters<typeof startApiServer>[0]): {
  readonly baseUrl: string;
  as(key?: string): Client;
} {
  let server: ApiServer | undefined;
  beforeAll(async () => {
    server = await startApiServer(options);
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    get baseUrl() {
      return server!.baseUrl;
    },
    as: (key?: string) => client(server!.baseUrl, key),
  };
}

export const uniqueEmail = (tag = 'user') => `${tag}-${randomUUID().slice(0, 8)}@test.example`;

/** A user with a key: issued the way `npm run key -- create` issues it. */
export async function newKey(input: Partial<NewKeyInput> = {}): Promise<{ key: string; email: string }> {
  const email = input.email ?? uniqueEmail();
  const { value } = await issueApiKey({ email, scopes: input.scopes ?? ['*'], ...input });
  return { key: value, email };
}

/** The error body every 4xx/5xx must have. */
export function expectErrorShape(body: any): void {
  if (!body || typeof body !== 'object') throw new Error(`not an error body: ${JSON.stringify(body)}`);
  const keys = Object.keys(body).sort();
  if (JSON.stringify(keys) !== JSON.stringify(['attr', 'code', 'detail', 'type']))
    throw new Error(`error keys ${keys.join(',')}`);
}

/** Retries `check` until it stops throwing: ingestion is eventually consistent (the stream worker runs beside the API). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** A fresh user, organization and project; returns the key, the org and the project's token. */
export async function newProject(c: (key: string) => Client) {
  const { key, email } = await newKey();
  const org = (await c(key).post('/api/organizations', { name: `Org ${uniqueEmail('p')}` })).body;
  const team = org.teams[0];
  return { key, email, org, projectId: team.id as number, token: team.api_token as string };
}
