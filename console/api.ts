/**
 * Calls to this service's public API, as any client makes them. The personal API key lives in
 * sessionStorage only (gone with the tab), and leaves the page only as the Authorization header of
 * same-origin requests: relative URLs, never in a query string.
 */
const KEY = 'console.personal_api_key';

export const savedKey = () => sessionStorage.getItem(KEY);
export const saveKey = (key: string) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);

/** The API's error body (PostHog's shape): `attr` names the field, `detail` says what is wrong. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly attr: string | null,
    readonly code: string,
  ) {
    super(detail);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as the API documents them
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  if (!path.startsWith('/api/')) throw new Error('The console calls only its own API.');
  const key = savedKey();
  const headers: Record<string, string> = {};
  if (key) headers.Authorization = `Bearer ${key}`;
  // A form (a file upload) goes as multipart, with the boundary the browser writes.
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : form ? body : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const raw = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: an error body is read for detail/attr/code only
  let parsed: any;
  try {
    parsed = raw ? JSON.parse(raw) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    throw new ApiError(
      res.status,
      String(parsed?.detail ?? `HTTP ${res.status}`),
      parsed?.attr ?? null,
      String(parsed?.code ?? ''),
    );
  }
  return parsed as T;
}

export async function csv(path: string, body: unknown): Promise<string> {
  const key = savedKey();
  const res = await fetch(path, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key ?? ''}`, 'Content-Type': 'application/json', Accept: 'text/csv' },
    body: JSON.stringify(body),
    credentials: 'omit',
  });
  if (!res.ok) throw new ApiError(res.status, `HTTP ${res.status}`, null, '');
  return res.text();
}

/**
 * POST /query, following a background run to its end when the question outlived the request
 * (PostHog's `query_status`): `progress` hears each poll. Answers as the blocking call would.
 */
// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as the API documents them
export async function runQuery(projectId: number, query: unknown, progress?: (polls: number) => void): Promise<any> {
  let answer = await api('POST', `/api/environments/${projectId}/query/`, { query });
  for (let polls = 1; answer.query_status && !answer.query_status.complete; polls += 1) {
    progress?.(polls);
    await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 250 * polls)));
    answer = await api('GET', `/api/environments/${projectId}/query/${encodeURIComponent(answer.query_status.id)}/`);
  }
  const status = answer.query_status;
  if (status?.error) throw new ApiError(400, String(status.error_message ?? 'The query failed.'), null, '');
  // A background run keeps the whole answer under query_status.results.
  return answer.results === undefined && status?.results ? status.results : answer;
}
