// What a page asks for (`pageQuery`: limit, offset) is a request shape: shared/schemas/query-string.ts.

/** A key given in the query string (PostHog accepts one there) must not be copied into the links a response hands out. */
function withoutCredentials(requestUrl: URL): URL {
  const url = new URL(requestUrl);
  url.searchParams.delete('personal_api_key');
  return url;
}

export interface Page {
  limit: number;
  offset: number;
}

/**
 * `{count, next, previous, results}` with absolute links built from the request URL, as DRF does:
 * `next` while offset+limit < count; `previous` drops `offset` when it would be 0.
 */
export function paginated<T>(requestUrl: URL, page: Page, count: number, results: T[]) {
  const link = (offset: number | undefined) => {
    const url = withoutCredentials(requestUrl);
    url.searchParams.set('limit', String(page.limit));
    if (offset === undefined) url.searchParams.delete('offset');
    else url.searchParams.set('offset', String(offset));
    return url.toString();
  };
  const next = page.offset + page.limit < count ? link(page.offset + page.limit) : null;
  const previous = page.offset <= 0 ? null : link(page.offset - page.limit > 0 ? page.offset - page.limit : undefined);
  return { count, next, previous, results };
}

/**
 * `paginated` plus an opaque `cursor` on `next`, so following `next` resumes where this page ended
 * (same cost at any depth) while `offset` stays meaningful; `next` only when more results exist.
 */
export function cursorPaginated<T>(
  requestUrl: URL,
  page: Page,
  count: number,
  results: T[],
  more: { hasMore: boolean; cursor?: string; nextOffset?: number },
) {
  const body = paginated(requestUrl, page, count, results);
  if (!more.hasMore) return { ...body, next: null };
  const next = withoutCredentials(requestUrl);
  next.searchParams.set('limit', String(page.limit));
  next.searchParams.set('offset', String(more.nextOffset ?? page.offset + page.limit));
  if (more.cursor) next.searchParams.set('cursor', more.cursor);
  else next.searchParams.delete('cursor');
  const previous = body.previous ? new URL(body.previous) : null;
  previous?.searchParams.delete('cursor');
  return { ...body, next: next.toString(), previous: previous?.toString() ?? null };
}

/** `next`/`previous` for page-numbered lists (PostHog's activity log). */
export function pageNumberLinks(requestUrl: URL, page: number, hasNext: boolean, hasPrevious: boolean) {
  const link = (n: number) => {
    const url = withoutCredentials(requestUrl);
    url.searchParams.set('page', String(n));
    return url.toString();
  };
  return { next: hasNext ? link(page + 1) : null, previous: hasPrevious ? link(page - 1) : null };
}

/** DRF's CursorPagination body: `next` carries the opaque `cursor`; only forward (`previous` is null). */
export function cursorOnlyPaginated<T>(requestUrl: URL, results: T[], cursor: string | undefined) {
  let next: string | null = null;
  if (cursor) {
    const url = withoutCredentials(requestUrl);
    url.searchParams.set('cursor', cursor);
    next = url.toString();
  }
  return { next, previous: null, results };
}
