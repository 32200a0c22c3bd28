import * as v from 'valibot';
import { actorsQuery } from './actors.ts';
import { eventsQuery } from './events.ts';
import { hogqlQuery } from './hogql.ts';
import { trendsQuery } from './trends.ts';

/**
 * The query kinds `POST /query` answers, each with its own schema in this folder. Adding a kind: its
 * schema here, its runner in shared/domain/query/, one entry in each table.
 */
export const SUPPORTED_QUERY_KINDS = ['TrendsQuery', 'ActorsQuery', 'EventsQuery', 'HogQLQuery'] as const;
export type QueryKind = (typeof SUPPORTED_QUERY_KINDS)[number];

function unsupportedKind(kind: unknown): string {
  const named = typeof kind === 'string' ? `Unsupported query kind "${kind.slice(0, 100)}"` : 'The query has no kind';
  return `${named}: this service answers ${SUPPORTED_QUERY_KINDS.join(', ')}.`;
}

/**
 * `query` of the body, chosen by its `kind` (any other kind is a 400 naming the supported ones); each
 * kind's schema reports issues inside the query (`query__series__0__math`).
 */
export const anyQuery = v.variant('kind', [trendsQuery, actorsQuery, eventsQuery, hogqlQuery], (issue) =>
  issue.path?.at(-1)?.key === 'kind'
    ? unsupportedKind(issue.input)
    : `Invalid data. Expected a dictionary, but got ${issue.received}.`,
);
export type AnyQuery = v.InferOutput<typeof anyQuery>;

/** PostHog's `refresh` values; `true` and `false` are its older form (see shared/domain/query/index.ts). */
export const REFRESH_MODES = [
  'blocking',
  'async',
  'force_blocking',
  'force_async',
  'force_cache',
  'lazy_async',
] as const;
export type RefreshMode = (typeof REFRESH_MODES)[number];

/** A query id: ours are uuid7 hex; a client's may be any 1 to 128 letters, digits, `-` and `_` (it is part of a table key). */
export const QUERY_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
export const queryId = v.pipe(
  v.string(),
  v.regex(QUERY_ID_PATTERN, 'A query id is 1 to 128 letters, digits, "-" or "_".'),
);

export const queryBody = v.object({
  query: anyQuery,
  refresh: v.optional(
    v.union([v.picklist(REFRESH_MODES), v.boolean()], `Must be one of ${REFRESH_MODES.join(', ')} (or a boolean).`),
  ),
  /** The query's id (async status, GET/DELETE /query/:id) when given, as PostHog does. */
  client_query_id: v.optional(queryId),
  /** PostHog's deprecated form of `refresh: "async"`. */
  async: v.optional(v.boolean()),
});
export type QueryBody = v.InferOutput<typeof queryBody>;

/** `/query/:id` (GET status, DELETE cancel). */
export const queryIdParams = v.object({ id: queryId });
