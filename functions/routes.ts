import type { Scope } from '#shared/auth/scopes.ts';
import type { KeyRateLimitClass } from '#shared/config.ts';
import type { QueueName } from '#shared/queue-settings.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

interface RouteBase {
  operationId: string;
  method: HttpMethod;
  /** PostHog-style path with `:param` segments, no trailing slash (both forms are served). */
  path: string;
  /** Further paths served by the same operation (capture answers on several). */
  aliases?: readonly string[];
  /** Handler module under functions/, without extension; it exports `handler`. */
  handler: string;
  /** What the function may do to the table: `read` gets read-only IAM, `write` read/write, `none` nothing. */
  access: 'read' | 'write' | 'none';
  /** Queues the function may send to. */
  sends?: readonly QueueName[];
  /** Accepts `format=json|csv`. */
  csv?: boolean;
  /** A read-only operation that may still write its result cache (IAM: PutItem on cache keys only). */
  writesCache?: boolean;
  /**
   * Writes async query items (keys QUERY#, QUERYCACHE#): `status` may only update a query's status
   * (cancel: UpdateItem on QUERY#), `results` also start queries and store answers (PutItem on QUERY#
   * and QUERYCACHE#, UpdateItem on QUERY#).
   */
  writesQueries?: 'status' | 'results';
  /** Seals batch-export destination secrets (IAM: kms:GenerateDataKey on the export secrets key, never Decrypt). */
  sealsSecrets?: boolean;
  /** Files shipped beside the bundled handler: the static SDK routes serve posthog-js's browser bundles (infra/build.ts copies them). */
  assets?: 'posthog-js' | 'console';
  summary: string;
}

/** Authenticated by a personal API key carrying `scope`. */
export interface KeyRoute extends RouteBase {
  auth?: 'personal_api_key';
  scope: Scope;
  /**
   * Other scopes that grant the operation too (PostHog accepts `insight:read` keys on the query API; the
   * query's kind then decides: shared/domain/query/kinds.ts).
   */
  alsoAccepts?: readonly Scope[];
  /** Rate-limit class of the key's requests: `analytics` (240/min, 1200/h) for trends, else `crud` (480/min, 4800/h). */
  rateLimit?: KeyRateLimitClass;
}

/** Public, authenticated by a project token in the payload (capture). */
export interface TokenRoute extends RouteBase {
  auth: 'project_token';
  scope?: undefined;
}

/** Public with no credential at all (the API's own description). */
export interface PublicRoute extends RouteBase {
  auth: 'public';
  scope?: undefined;
  access: 'none';
}

/**
 * One row per API operation. CDK (one Lambda + one API route per path), the local HTTP server, the
 * OpenAPI document and the scope/tenant test matrices are all generated from this table.
 */
export type Route = KeyRoute | TokenRoute | PublicRoute;

export const routes = [
  {
    operationId: 'organizations_list',
    method: 'GET',
    path: '/api/organizations',
    scope: 'organization:read',
    handler: 'organizations/list',
    access: 'read',
    summary: "List the caller's organizations",
  },
  {
    operationId: 'organizations_create',
    method: 'POST',
    path: '/api/organizations',
    scope: 'organization:write',
    handler: 'organizations/create',
    access: 'write',
    summary: 'Create an organization with a default project; the caller becomes its owner',
  },
  {
    operationId: 'organizations_retrieve',
    method: 'GET',
    path: '/api/organizations/:id',
    scope: 'organization:read',
    handler: 'organizations/retrieve',
    access: 'read',
    summary: 'Retrieve an organization',
  },
  {
    operationId: 'organizations_partial_update',
    method: 'PATCH',
    path: '/api/organizations/:id',
    scope: 'organization:write',
    handler: 'organizations/update',
    access: 'write',
    summary: 'Update an organization (admins and owners)',
  },
  {
    operationId: 'organizations_destroy',
    method: 'DELETE',
    path: '/api/organizations/:id',
    scope: 'organization:write',
    handler: 'organizations/delete',
    access: 'write',
    summary: 'Delete an organization (owner only)',
  },
  {
    operationId: 'persons_list',
    method: 'GET',
    path: '/api/environments/:project_id/persons',
    scope: 'person:read',
    handler: 'persons/list',
    access: 'read',
    csv: true,
    summary: 'List persons, newest first, with filters',
  },
  {
    operationId: 'persons_bulk_delete',
    method: 'POST',
    path: '/api/environments/:project_id/persons/bulk_delete',
    scope: 'person:write',
    handler: 'persons/bulk-delete',
    access: 'write',
    sends: ['person_deletions', 'person_bulk_deletes'],
    csv: true,
    summary: 'Delete up to 1000 persons by id or distinct id',
  },
  {
    operationId: 'persons_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id/persons/:id',
    scope: 'person:read',
    handler: 'persons/retrieve',
    access: 'read',
    csv: true,
    summary: 'Retrieve a person',
  },
  {
    operationId: 'persons_partial_update',
    method: 'PATCH',
    path: '/api/environments/:project_id/persons/:id',
    scope: 'person:write',
    handler: 'persons/update',
    access: 'write',
    csv: true,
    summary: 'Merge properties into a person',
  },
  {
    operationId: 'persons_destroy',
    method: 'DELETE',
    path: '/api/environments/:project_id/persons/:id',
    scope: 'person:write',
    handler: 'persons/delete',
    access: 'write',
    sends: ['person_deletions'],
    csv: true,
    summary: 'Delete a person (optionally queueing deletion of all its events)',
  },
  {
    operationId: 'persons_activity',
    method: 'GET',
    path: '/api/environments/:project_id/persons/:id/activity',
    scope: 'activity_log:read',
    handler: 'persons/activity',
    access: 'read',
    csv: true,
    summary: 'Changes made to a person through the API',
  },
  {
    operationId: 'persons_delete_property',
    method: 'POST',
    path: '/api/environments/:project_id/persons/:id/delete_property',
    scope: 'person:write',
    handler: 'persons/delete-property',
    access: 'write',
    csv: true,
    summary: 'Remove one property from a person',
  },
  {
    operationId: 'persons_properties_timeline',
    method: 'GET',
    path: '/api/environments/:project_id/persons/:id/properties_timeline',
    scope: 'person:read',
    handler: 'persons/properties-timeline',
    access: 'read',
    csv: true,
    summary: "A person's properties over time",
  },
  {
    operationId: 'persons_split',
    method: 'POST',
    path: '/api/environments/:project_id/persons/:id/split',
    scope: 'person:write',
    handler: 'persons/split',
    access: 'write',
    csv: true,
    summary: 'Split a person into one person per distinct id',
  },
  {
    operationId: 'projects_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id',
    scope: 'project:read',
    handler: 'projects/retrieve',
    access: 'read',
    summary: "Retrieve a project's settings (timezone, week start, test account filters)",
  },
  {
    operationId: 'projects_partial_update',
    method: 'PATCH',
    path: '/api/environments/:project_id',
    scope: 'project:write',
    handler: 'projects/update',
    access: 'write',
    summary: "Update a project's settings",
  },
  {
    operationId: 'actions_list',
    method: 'GET',
    path: '/api/environments/:project_id/actions',
    scope: 'action:read',
    handler: 'actions/list',
    access: 'read',
    summary: 'List actions',
  },
  {
    operationId: 'actions_create',
    method: 'POST',
    path: '/api/environments/:project_id/actions',
    scope: 'action:write',
    handler: 'actions/create',
    access: 'write',
    summary: 'Create an action (matches any of its steps)',
  },
  {
    operationId: 'actions_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id/actions/:id',
    scope: 'action:read',
    handler: 'actions/retrieve',
    access: 'read',
    summary: 'Retrieve an action',
  },
  {
    operationId: 'actions_partial_update',
    method: 'PATCH',
    path: '/api/environments/:project_id/actions/:id',
    scope: 'action:write',
    handler: 'actions/update',
    access: 'write',
    summary: 'Update an action',
  },
  {
    operationId: 'actions_destroy',
    method: 'DELETE',
    path: '/api/environments/:project_id/actions/:id',
    scope: 'action:write',
    handler: 'actions/delete',
    access: 'write',
    summary: 'Delete an action',
  },
  {
    operationId: 'insights_trend_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id/insights/trend',
    scope: 'insight:read',
    handler: 'insights/trend-get',
    access: 'read',
    writesCache: true,
    rateLimit: 'analytics',
    csv: true,
    summary: 'Compute a trend (PostHog legacy insights/trend), query-string parameters',
  },
  {
    operationId: 'insights_trend',
    method: 'POST',
    path: '/api/environments/:project_id/insights/trend',
    scope: 'insight:read',
    handler: 'insights/trend-post',
    access: 'read',
    writesCache: true,
    rateLimit: 'analytics',
    csv: true,
    summary: 'Compute a trend (PostHog legacy insights/trend), JSON body',
  },
  {
    operationId: 'query_create',
    method: 'POST',
    path: '/api/environments/:project_id/query',
    scope: 'query:read',
    alsoAccepts: ['insight:read'],
    handler: 'query/create',
    access: 'read',
    writesCache: true,
    writesQueries: 'results',
    sends: ['query_runs'],
    rateLimit: 'analytics',
    summary: "Run a query (PostHog's query API): TrendsQuery, ActorsQuery or EventsQuery",
  },
  {
    operationId: 'query_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id/query/:id',
    scope: 'query:read',
    alsoAccepts: ['insight:read'],
    handler: 'query/retrieve',
    access: 'read',
    rateLimit: 'analytics',
    summary: "An async query's status, with its answer once complete (PostHog's QueryStatus)",
  },
  {
    operationId: 'query_destroy',
    method: 'DELETE',
    path: '/api/environments/:project_id/query/:id',
    // PostHog: every query action is a read of the query scope.
    scope: 'query:read',
    alsoAccepts: ['insight:read'],
    handler: 'query/delete',
    access: 'read',
    writesQueries: 'status',
    rateLimit: 'analytics',
    summary: 'Cancel an async query: its status says so and its run stores nothing',
  },
  {
    operationId: 'batch_exports_list',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports',
    scope: 'batch_export:read',
    handler: 'batch-exports/list',
    access: 'read',
    summary: "List an organization's batch exports",
  },
  {
    operationId: 'batch_exports_create',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports',
    scope: 'batch_export:write',
    handler: 'batch-exports/create',
    access: 'write',
    sealsSecrets: true,
    summary: 'Create a batch export',
  },
  {
    operationId: 'batch_exports_retrieve',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id',
    scope: 'batch_export:read',
    handler: 'batch-exports/retrieve',
    access: 'read',
    summary: 'Retrieve a batch export with its latest runs',
  },
  {
    operationId: 'batch_exports_partial_update',
    method: 'PATCH',
    path: '/api/organizations/:organization_id/batch_exports/:id',
    scope: 'batch_export:write',
    handler: 'batch-exports/update',
    access: 'write',
    sealsSecrets: true,
    summary: 'Update (pause, unpause, reconfigure) a batch export',
  },
  {
    operationId: 'batch_exports_destroy',
    method: 'DELETE',
    path: '/api/organizations/:organization_id/batch_exports/:id',
    scope: 'batch_export:write',
    handler: 'batch-exports/delete',
    access: 'write',
    summary: 'Delete a batch export with its runs and logs',
  },
  {
    operationId: 'batch_exports_backfill',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/backfill',
    scope: 'batch_export:write',
    handler: 'batch-exports/backfill',
    access: 'write',
    summary: 'Backfill a batch export over a past range (deprecated endpoint)',
  },
  {
    operationId: 'batch_exports_logs',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id/logs',
    scope: 'batch_export:read',
    handler: 'batch-exports/logs',
    access: 'read',
    summary: "A batch export's logs, newest first",
  },
  {
    // Public like PostHog's /api/schema/; the function only serves a file bundled with it.
    operationId: 'schema',
    method: 'GET',
    path: '/api/schema',
    auth: 'public',
    handler: 'system/schema',
    access: 'none',
    summary: 'The OpenAPI 3.1 document of this API (docs/openapi.json, written by npm run openapi)',
  },
  {
    operationId: 'capture',
    method: 'POST',
    path: '/capture',
    aliases: ['/batch', '/e', '/i/v0/e'],
    auth: 'project_token',
    handler: 'capture/capture',
    access: 'write',
    // A batch too large to store within the function's budget is staged there for store_capture_batches.
    sends: ['capture_batches'],
    summary: 'Capture events (PostHog SDK ingestion), authenticated by the project token',
  },
  // posthog-js in a browser: what the SDK fetches from its api_host besides capture (README, "posthog-js").
  {
    operationId: 'sdk_remote_config',
    method: 'GET',
    path: '/array/:token/config',
    auth: 'project_token',
    handler: 'sdk/remote-config',
    access: 'read',
    summary: "The project's remote config for posthog-js (compression, autocapture opt-out, no recordings or surveys)",
  },
  {
    operationId: 'sdk_remote_config_js',
    method: 'GET',
    path: '/array/:token/config.js',
    auth: 'project_token',
    handler: 'sdk/remote-config-js',
    access: 'read',
    summary: 'The same remote config as a script that hands it to posthog-js (window._POSTHOG_REMOTE_CONFIG)',
  },
  {
    operationId: 'sdk_flags',
    method: 'POST',
    path: '/flags',
    auth: 'project_token',
    handler: 'sdk/flags',
    access: 'read',
    summary: 'Feature flags for a person: always none (this service has no feature flags)',
  },
  {
    operationId: 'sdk_decide',
    method: 'POST',
    path: '/decide',
    auth: 'project_token',
    handler: 'sdk/decide',
    access: 'read',
    summary: 'Legacy /decide for older SDKs: no flags, plus the remote config they read from it',
  },
  {
    operationId: 'sdk_static',
    method: 'GET',
    path: '/static/:file',
    auth: 'public',
    handler: 'sdk/static',
    access: 'none',
    assets: 'posthog-js',
    summary: "posthog-js's browser bundles (array.js, array.full.js, lazily loaded extensions) from the pinned package",
  },
  {
    operationId: 'sdk_static_versioned',
    method: 'GET',
    path: '/static/:version/:file',
    auth: 'public',
    handler: 'sdk/static-versioned',
    access: 'none',
    assets: 'posthog-js',
    summary: 'The same bundles at the version-qualified path posthog-js builds with strict_script_versioning',
  },
  // The web console (console/, built by infra/console-build.ts): a client of this API like any other.
  {
    operationId: 'console_index',
    method: 'GET',
    path: '/',
    auth: 'public',
    handler: 'console/index',
    access: 'none',
    assets: 'console',
    summary: 'The web console: sign in with a personal API key; it calls only this public API',
  },
  {
    operationId: 'console_asset',
    method: 'GET',
    path: '/console/:version/:file',
    auth: 'public',
    handler: 'console/asset',
    access: 'none',
    assets: 'console',
    summary: "The console's script and stylesheet under their content version (cached for a year)",
  },
] as const satisfies readonly Route[];

type RouteRow = (typeof routes)[number];
export type OperationId = RouteRow['operationId'];

const ENVIRONMENT_LEVEL = '/api/environments/:project_id';
const PROJECT_LEVEL = '/api/projects/:project_id';

/**
 * PostHog answers every environment-level path under `/api/projects/:project_id` too (one project is
 * one environment here): said once, as a rule rather than an alias on each row, so a row added under
 * `/api/environments/:project_id` answers at both. Undefined for any other path.
 */
export function projectLevelPath(path: string): string | undefined {
  if (path !== ENVIRONMENT_LEVEL && !path.startsWith(`${ENVIRONMENT_LEVEL}/`)) return undefined;
  return PROJECT_LEVEL + path.slice(ENVIRONMENT_LEVEL.length);
}

/** The paths a route answers on besides its own: its declared aliases and its project-level form. */
export function aliasesOf(route: Route): string[] {
  const projectLevel = projectLevelPath(route.path);
  return [...(route.aliases ?? []), ...(projectLevel ? [projectLevel] : [])];
}

/** Every (method, path) the API answers, aliases included, each pointing at its route. */
export const routePaths: readonly Route[] = (routes as readonly Route[]).flatMap((r) => [
  r,
  ...aliasesOf(r).map((path) => ({ ...r, path })),
]);

const isKeyRoute = (r: Route): r is KeyRoute => r.auth === undefined || r.auth === 'personal_api_key';
export const keyRoutes = (routes as readonly Route[]).filter(isKeyRoute);
/** The key routes at every path they answer on, aliases included (the scope and tenant matrices request each). */
export const keyRoutePaths = routePaths.filter(isKeyRoute);

/** Functions that are not API operations: fed by the table stream or a queue, or run on a schedule. */
export interface Worker {
  name: string;
  handler: string;
  /**
   * The table stream (raw event records), an EventBridge schedule expression the local scheduler also
   * runs, or a queue whose messages invoke it in batches (reporting the failed ones, which SQS retries).
   */
  trigger: { stream: 'table' } | { schedule: string } | { queue: QueueName };
  /** What the function may do to the table, as for routes: `read` gets read-only IAM, `write` read/write. */
  access: 'read' | 'write';
  /** Queues it receives from; a queue listed in `continuesVia` also triggers it (to carry on a long backlog). */
  consumes?: readonly QueueName[];
  continuesVia?: QueueName;
  /** Queues it may send to. */
  sends?: readonly QueueName[];
  /** As for routes: the result caches it may put (TRENDCACHE#), the async query items it may write. */
  writesCache?: boolean;
  writesQueries?: 'status' | 'results';
  /** How long one invocation may run (seconds). */
  timeoutSeconds: number;
  /** A queue trigger's messages per invocation (default 10). */
  batchSize?: number;
  /**
   * Executions reserved for the worker (so it never takes the API functions' share of the account's
   * concurrency) and the most its queue trigger runs at once (at most `reserved`, so the queue waits
   * rather than being throttled).
   */
  concurrency?: { reserved: number; maxFromQueue: number };
  /**
   * Writes to customer-configured destinations (S3 buckets named in batch export configs) with their
   * own credentials: opens their sealed keys (kms:Decrypt) or assumes their role (sts:AssumeRole).
   */
  writesDestinations?: boolean;
  /** The command that fires it now locally: `npm run cron -- <command>`. */
  command?: string;
  summary: string;
}

export const workers = [
  {
    name: 'ingest_events',
    handler: 'workers/ingest-events',
    trigger: { stream: 'table' },
    access: 'write',
    timeoutSeconds: 300,
    summary: 'Keeps persons and hourly rollups from raw events on the table stream',
  },
  {
    name: 'drain_person_deletions',
    handler: 'workers/drain-person-deletions',
    trigger: { schedule: 'cron(0 5 ? * SUN *)' },
    access: 'write',
    consumes: ['person_deletions'],
    continuesVia: 'drain_continuations',
    timeoutSeconds: 900,
    command: 'drain-person-deletions',
    summary: 'Sundays 05:00 UTC: deletes the events of persons deleted with delete_events=true',
  },
  {
    name: 'run_batch_exports',
    handler: 'workers/run-batch-exports',
    trigger: { schedule: 'rate(5 minutes)' },
    access: 'write',
    writesDestinations: true,
    timeoutSeconds: 900,
    command: 'run-batch-exports',
    summary: 'Every 5 minutes: runs due batch exports (scheduled windows, retries, backfills) into their destinations',
  },
  {
    name: 'compact_events',
    handler: 'workers/compact-events',
    trigger: { schedule: 'rate(5 minutes)' },
    access: 'write',
    timeoutSeconds: 900,
    command: 'compact-events',
    summary: 'Every 5 minutes: packs the events of changed days into compact segments that trends read',
  },
  {
    name: 'delete_queued_persons',
    handler: 'workers/delete-queued-persons',
    trigger: { queue: 'person_bulk_deletes' },
    access: 'write',
    // Deletion requests of the persons' events (delete_events), and the rest of a message it cannot finish in time.
    sends: ['person_deletions', 'person_bulk_deletes'],
    timeoutSeconds: 300,
    summary: 'Deletes, within seconds, the persons a bulk delete queued because its request ran out of time',
  },
  {
    name: 'run_queries',
    handler: 'workers/run-queries',
    trigger: { queue: 'query_runs' },
    // Reads what queries read; writes only its answers: the query cache, the query's status and result
    // (and the legacy trend cache, which the trend engine writes).
    access: 'read',
    writesCache: true,
    writesQueries: 'results',
    timeoutSeconds: 900,
    // One query per invocation: a query that runs out of memory fails only itself, not other tenants' of its batch.
    batchSize: 1,
    // A project holds at most 3 runs (shared/domain/query/async.ts): several projects' queries run at once.
    concurrency: { reserved: 10, maxFromQueue: 10 },
    summary:
      'Runs queries started in the background (refresh async, or blocking past the API budget) and stores their answers',
  },
  {
    name: 'store_capture_batches',
    handler: 'workers/store-capture-batches',
    trigger: { queue: 'capture_batches' },
    access: 'write',
    timeoutSeconds: 300,
    // A flood of large batches waits in its queue; it can never take the concurrency the API functions share.
    concurrency: { reserved: 5, maxFromQueue: 5 },
    summary: 'Stores, within seconds, the events of capture batches too large to store within their request',
  },
] as const satisfies readonly Worker[];

/** Answers requests no route matches (404) or matches by path only (405), in the API's error shape. */
export const fallbackHandler = 'system/fallback';

/** Every API function's timeout: above cold starts, well under the HTTP API's 30 s integration limit. */
export const API_TIMEOUT_SECONDS = 10;

export function route<Id extends OperationId>(operationId: Id): Extract<RouteRow, { operationId: Id }> {
  const found = routes.find((r) => r.operationId === operationId);
  if (!found) throw new Error(`unknown operation ${operationId}`);
  return found as Extract<RouteRow, { operationId: Id }>;
}
