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
  /** The body may be a JSON list, not only an object (PostHog's `update_metadata`). */
  listBody?: boolean;
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
  /**
   * Answers big trends from the lake (shared/domain/lake-trends.ts): infra/constructs/lake.ts grants
   * Athena in the lake's workgroup, the Glue table, reads of the lake's objects and its query results.
   */
  queriesLake?: boolean;
  /**
   * Checks a destination a member is configuring: assumes the role it names in the customer's account
   * (sts:AssumeRole with the organization id as ExternalId, never this account's roles). No kms:Decrypt:
   * the keys it tests are the ones in the request.
   */
  assumesDestinationRoles?: boolean;
  /**
   * Files shipped beside the bundled handler (infra/build.ts copies them): the static SDK routes serve posthog-js's
   * browser bundles, the console its build, `schema` the OpenAPI document.
   */
  assets?: 'posthog-js' | 'console' | 'openapi';
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
    operationId: 'persons_values',
    method: 'GET',
    path: '/api/environments/:project_id/persons/values',
    scope: 'person:read',
    handler: 'persons/values',
    access: 'read',
    summary: 'The 20 most common values of a person property (`key`), optionally containing `value`',
  },
  {
    operationId: 'persons_update_property',
    method: 'POST',
    path: '/api/environments/:project_id/persons/:id/update_property',
    scope: 'person:write',
    handler: 'persons/update-property',
    access: 'write',
    summary: 'Set one property of a person (`key`, `value`)',
  },
  {
    operationId: 'persons_delete_events',
    method: 'POST',
    path: '/api/environments/:project_id/persons/:id/delete_events',
    scope: 'person:write',
    handler: 'persons/delete-events',
    access: 'write',
    sends: ['person_deletions'],
    summary: "Queue the deletion of a person's events (Sundays 05:00 UTC), keeping the person",
  },
  {
    operationId: 'persons_reset_person_distinct_id',
    method: 'POST',
    path: '/api/environments/:project_id/persons/reset_person_distinct_id',
    scope: 'person:write',
    handler: 'persons/reset-distinct-id',
    access: 'write',
    summary: 'Free a distinct id still tied to a deleted person, so new events make a new person',
  },
  {
    operationId: 'groups_types_list',
    method: 'GET',
    path: '/api/environments/:project_id/groups_types',
    scope: 'group:read',
    handler: 'groups/types-list',
    access: 'read',
    summary: "The project's group types (at most 5, index 0-4 in order of first use)",
  },
  {
    operationId: 'groups_types_update_metadata',
    method: 'PATCH',
    path: '/api/environments/:project_id/groups_types/update_metadata',
    scope: 'group:write',
    handler: 'groups/types-update-metadata',
    access: 'write',
    listBody: true,
    summary: 'Name group types (a list of {group_type_index, name_singular, name_plural})',
  },
  {
    operationId: 'groups_list',
    method: 'GET',
    path: '/api/environments/:project_id/groups',
    scope: 'group:read',
    handler: 'groups/list',
    access: 'read',
    summary: 'List the groups of one type, newest first (group_type_index required; search; cursor)',
  },
  {
    operationId: 'groups_find',
    method: 'GET',
    path: '/api/environments/:project_id/groups/find',
    scope: 'group:read',
    handler: 'groups/find',
    access: 'read',
    summary: 'Retrieve a group by group_type_index and group_key',
  },
  {
    operationId: 'groups_property_timeline',
    method: 'GET',
    path: '/api/environments/:project_id/groups/property_timeline',
    scope: 'group:read',
    handler: 'groups/property-timeline',
    access: 'read',
    summary:
      "A group's properties over time, one point per $group_set that changed them (group_type_index, group_key; from, to)",
  },
  {
    operationId: 'groups_property_definitions',
    method: 'GET',
    path: '/api/environments/:project_id/groups/property_definitions',
    scope: 'group:read',
    handler: 'groups/property-definitions',
    access: 'read',
    summary: 'Property keys per group type, with how many groups hold each',
  },
  {
    operationId: 'event_definitions_list',
    method: 'GET',
    path: '/api/environments/:project_id/event_definitions',
    scope: 'event_definition:read',
    handler: 'definitions/event-definitions',
    access: 'read',
    summary:
      "The project's event names of the last 30 days with their volume (PostHog's event definitions; search, limit/offset)",
  },
  {
    operationId: 'property_definitions_list',
    method: 'GET',
    path: '/api/environments/:project_id/property_definitions',
    scope: 'property_definition:read',
    handler: 'definitions/property-definitions',
    access: 'read',
    summary:
      "The project's property keys as ingestion saw them (PostHog's property definitions: type event/person/group, event_names, search, properties, limit/offset; at most 10,000 keys of a type read, then scan_limited)",
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
    operationId: 'cohorts_list',
    method: 'GET',
    path: '/api/environments/:project_id/cohorts',
    scope: 'cohort:read',
    handler: 'cohorts/list',
    access: 'read',
    summary: 'List cohorts, newest first (search by name, type=static|dynamic)',
  },
  {
    operationId: 'cohorts_create',
    method: 'POST',
    path: '/api/environments/:project_id/cohorts',
    scope: 'cohort:write',
    handler: 'cohorts/create',
    access: 'write',
    sends: ['cohort_calculations'],
    summary:
      'Create a cohort: dynamic (filters; calculated by a worker) or static (CSV upload in multipart field csv, or _create_static_person_ids)',
  },
  {
    operationId: 'cohorts_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id/cohorts/:id',
    scope: 'cohort:read',
    handler: 'cohorts/retrieve',
    access: 'read',
    summary: 'Retrieve a cohort',
  },
  {
    operationId: 'cohorts_partial_update',
    method: 'PATCH',
    path: '/api/environments/:project_id/cohorts/:id',
    scope: 'cohort:write',
    handler: 'cohorts/update',
    access: 'write',
    sends: ['cohort_calculations'],
    summary: 'Update a cohort (a new definition is recalculated; deleted: true is the soft delete)',
  },
  {
    operationId: 'cohorts_persons',
    method: 'GET',
    path: '/api/environments/:project_id/cohorts/:id/persons',
    scope: 'cohort:read',
    handler: 'cohorts/persons',
    access: 'read',
    csv: true,
    summary: "A cohort's persons, by person id, paged",
  },
  {
    operationId: 'cohorts_add_persons_to_static_cohort',
    method: 'PATCH',
    path: '/api/environments/:project_id/cohorts/:id/add_persons_to_static_cohort',
    scope: 'cohort:write',
    handler: 'cohorts/add-persons',
    access: 'write',
    summary: 'Add persons to a static cohort',
  },
  {
    operationId: 'cohorts_remove_person_from_static_cohort',
    method: 'PATCH',
    path: '/api/environments/:project_id/cohorts/:id/remove_person_from_static_cohort',
    scope: 'cohort:write',
    handler: 'cohorts/remove-person',
    access: 'write',
    summary: 'Remove a person from a static cohort',
  },
  {
    operationId: 'cohorts_duplicate_as_static_cohort',
    // PostHog answers GET; a GET that writes is unsafe to retry or cache (the route table's rule): POST.
    method: 'POST',
    path: '/api/environments/:project_id/cohorts/:id/duplicate_as_static_cohort',
    scope: 'cohort:write',
    handler: 'cohorts/duplicate',
    access: 'write',
    summary: "A static copy of a cohort's current members",
  },
  {
    operationId: 'persons_cohorts',
    method: 'GET',
    path: '/api/environments/:project_id/persons/cohorts',
    scope: 'person:read',
    handler: 'persons/cohorts',
    access: 'read',
    summary: 'The cohorts a person is in (person_id=)',
  },
  {
    operationId: 'insights_trend_retrieve',
    method: 'GET',
    path: '/api/environments/:project_id/insights/trend',
    scope: 'insight:read',
    handler: 'insights/trend-get',
    access: 'read',
    writesCache: true,
    queriesLake: true,
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
    queriesLake: true,
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
    queriesLake: true,
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
    operationId: 'batch_exports_test',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/test',
    scope: 'batch_export:write',
    handler: 'batch-exports/test',
    access: 'write',
    assumesDestinationRoles: true,
    summary: 'Check a destination before saving it: assume its role, find its bucket, write a test object',
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
    operationId: 'batch_exports_backfills_create',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/backfills',
    scope: 'batch_export:write',
    handler: 'batch-exports/backfills-create',
    access: 'write',
    summary:
      'Create a backfill of a past range: 201 {backfill_id}; 409 when it overlaps one in flight or completed (unless allow_overlap)',
  },
  {
    operationId: 'batch_exports_backfills_list',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id/backfills',
    scope: 'batch_export:read',
    handler: 'batch-exports/backfills-list',
    access: 'read',
    summary: "A batch export's backfills with status and progress (cursor pages)",
  },
  {
    operationId: 'batch_exports_backfills_retrieve',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id/backfills/:backfill_id',
    scope: 'batch_export:read',
    handler: 'batch-exports/backfills-retrieve',
    access: 'read',
    summary: 'A backfill with its status and progress',
  },
  {
    operationId: 'batch_exports_backfills_cancel',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/backfills/:backfill_id/cancel',
    scope: 'batch_export:write',
    handler: 'batch-exports/backfills-cancel',
    access: 'write',
    summary: 'Cancel a backfill: its queued runs end Cancelled without executing',
  },
  {
    operationId: 'batch_exports_runs_list',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id/runs',
    scope: 'batch_export:read',
    handler: 'batch-exports/runs-list',
    access: 'read',
    summary: "A batch export's runs (cursor pages; filters status, after, before)",
  },
  {
    operationId: 'batch_exports_runs_retrieve',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id/runs/:run_id',
    scope: 'batch_export:read',
    handler: 'batch-exports/runs-retrieve',
    access: 'read',
    summary: 'A batch export run',
  },
  {
    operationId: 'batch_exports_runs_retry',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/runs/:run_id/retry',
    scope: 'batch_export:write',
    handler: 'batch-exports/runs-retry',
    access: 'write',
    summary: 'Retry a run: a backfill of its one window, 201 {backfill_id}',
  },
  {
    operationId: 'batch_exports_runs_cancel',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/runs/:run_id/cancel',
    scope: 'batch_export:write',
    handler: 'batch-exports/runs-cancel',
    access: 'write',
    summary: 'Cancel a run that has not started or waits for a retry',
  },
  {
    operationId: 'batch_exports_runs_logs',
    method: 'GET',
    path: '/api/organizations/:organization_id/batch_exports/:id/runs/:run_id/logs',
    scope: 'batch_export:read',
    handler: 'batch-exports/runs-logs',
    access: 'read',
    summary: "A run's logs, newest first",
  },
  {
    operationId: 'batch_exports_pause',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/pause',
    scope: 'batch_export:write',
    handler: 'batch-exports/pause',
    access: 'write',
    summary: 'Pause a batch export',
  },
  {
    operationId: 'batch_exports_unpause',
    method: 'POST',
    path: '/api/organizations/:organization_id/batch_exports/:id/unpause',
    scope: 'batch_export:write',
    handler: 'batch-exports/unpause',
    access: 'write',
    summary: 'Unpause a batch export; {"backfill": true} backfills the paused gap',
  },
  {
    // Public like PostHog's /api/schema/; the function only serves a file shipped beside it.
    operationId: 'schema',
    method: 'GET',
    path: '/api/schema',
    auth: 'public',
    handler: 'system/schema',
    access: 'none',
    assets: 'openapi',
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
  /** Writes the Parquet lake (infra/constructs/lake.ts grants its prefixes and sets LAKE_BUCKET). */
  writesLake?: boolean;
  /** Answers big trends from the lake, as a route's `queriesLake`. */
  queriesLake?: boolean;
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
    writesLake: true,
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
    queriesLake: true,
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
  {
    name: 'calculate_cohorts',
    handler: 'workers/calculate-cohorts',
    trigger: { queue: 'cohort_calculations' },
    access: 'write',
    // Its own continuation: the rest of a calculation that outlasts one invocation.
    sends: ['cohort_calculations'],
    timeoutSeconds: 900,
    // One calculation per invocation: each step has the whole timeout.
    batchSize: 1,
    concurrency: { reserved: 5, maxFromQueue: 5 },
    summary: 'Recalculates cohort membership in pages that resume, from the queue (create, change, schedule)',
  },
  {
    name: 'schedule_cohort_recalculations',
    handler: 'workers/schedule-cohort-recalculations',
    trigger: { schedule: 'rate(1 hour)' },
    access: 'write',
    sends: ['cohort_calculations'],
    timeoutSeconds: 300,
    command: 'schedule-cohort-recalculations',
    summary: 'Hourly: queues behavioural cohorts 24 h after their last calculation, and calculations that stalled',
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
