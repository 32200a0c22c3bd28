import { describe, expect, it } from 'vitest';
import { route, routes } from '#functions/routes.ts';
import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { tenancyOf, type TenancyKind } from '#shared/http/tenancy.ts';

type Row = (typeof routes)[number];
type KeyRow = Extract<Row, { scope: string }>;

/**
 * Every personal-key route's tenancy, written out. `satisfies` checks each entry against the type the
 * handler's request is derived from (TenancyKind of the row's path), and the test below against what
 * the pipeline resolves at run time (tenancyOf): the two cannot drift apart without one failing.
 */
const tenancyByOperation = {
  organizations_list: 'organization-collection',
  organizations_create: 'organization-collection',
  organizations_retrieve: 'organization',
  organizations_partial_update: 'organization',
  organizations_destroy: 'organization',
  persons_list: 'project',
  persons_bulk_delete: 'project',
  persons_retrieve: 'project',
  persons_partial_update: 'project',
  persons_destroy: 'project',
  persons_activity: 'project',
  persons_delete_property: 'project',
  persons_properties_timeline: 'project',
  persons_split: 'project',
  persons_values: 'project',
  persons_update_property: 'project',
  persons_delete_events: 'project',
  persons_reset_person_distinct_id: 'project',
  groups_types_list: 'project',
  groups_types_update_metadata: 'project',
  groups_list: 'project',
  groups_find: 'project',
  groups_property_timeline: 'project',
  groups_property_definitions: 'project',
  event_definitions_list: 'project',
  property_definitions_list: 'project',
  projects_retrieve: 'project',
  projects_partial_update: 'project',
  actions_list: 'project',
  actions_create: 'project',
  actions_retrieve: 'project',
  actions_partial_update: 'project',
  actions_destroy: 'project',
  cohorts_list: 'project',
  cohorts_create: 'project',
  cohorts_retrieve: 'project',
  cohorts_partial_update: 'project',
  cohorts_persons: 'project',
  cohorts_add_persons_to_static_cohort: 'project',
  cohorts_remove_person_from_static_cohort: 'project',
  cohorts_duplicate_as_static_cohort: 'project',
  persons_cohorts: 'project',
  insights_trend_retrieve: 'project',
  insights_trend: 'project',
  query_create: 'project',
  query_retrieve: 'project',
  query_destroy: 'project',
  batch_exports_list: 'organization',
  batch_exports_create: 'organization',
  batch_exports_retrieve: 'organization',
  batch_exports_partial_update: 'organization',
  batch_exports_destroy: 'organization',
  batch_exports_backfill: 'organization',
  batch_exports_logs: 'organization',
  batch_exports_test: 'organization',
  batch_exports_backfills_create: 'organization',
  batch_exports_backfills_list: 'organization',
  batch_exports_backfills_retrieve: 'organization',
  batch_exports_backfills_cancel: 'organization',
  batch_exports_runs_list: 'organization',
  batch_exports_runs_retrieve: 'organization',
  batch_exports_runs_retry: 'organization',
  batch_exports_runs_cancel: 'organization',
  batch_exports_runs_logs: 'organization',
  batch_exports_pause: 'organization',
  batch_exports_unpause: 'organization',
} as const satisfies { [R in KeyRow as R['operationId']]: TenancyKind<R['path']> };

describe("a handler's request type follows its route", () => {
  it('resolves at run time the tenancy the type promises, for every personal-key route', () => {
    for (const row of routes) {
      if (!('scope' in row)) continue;
      expect([row.operationId, tenancyOf(row.path).kind]).toEqual([
        row.operationId,
        tenancyByOperation[row.operationId],
      ]);
    }
  });

  // What follows is checked by `npm run typecheck`: each @ts-expect-error fails the typecheck if the line compiles.
  it('gives project routes a numeric projectId and organization routes an organizationId, never the other', () => {
    const handlers = [
      apiHandler(route('persons_list'), {}, async ({ projectId, membership }) => {
        const id: number = projectId;
        return ok({ id, organization: membership.organization_id });
      }),
      // @ts-expect-error a project route names no organization id (its membership says which organization)
      apiHandler(route('persons_list'), {}, async ({ organizationId }) => ok(organizationId)),
      apiHandler(route('batch_exports_list'), {}, async ({ organizationId, membership }) => {
        const id: string = organizationId;
        return ok({ id, level: membership.level });
      }),
      // @ts-expect-error an organization route has no project
      apiHandler(route('batch_exports_list'), {}, async ({ projectId }) => ok(projectId)),
      // @ts-expect-error neither does /api/organizations/:id
      apiHandler(route('organizations_retrieve'), {}, async ({ projectId }) => ok(projectId)),
      // @ts-expect-error the organization collection names no tenant: no membership
      apiHandler(route('organizations_list'), {}, async ({ membership }) => ok(membership)),
      // @ts-expect-error nor an organization
      apiHandler(route('organizations_create'), {}, async ({ organizationId }) => ok(organizationId)),
      apiHandler(route('organizations_create'), {}, async ({ caller, url, deadline }) =>
        ok({ user: caller.user.id, url: url.href, deadline }),
      ),
    ];
    expect(handlers.every((h) => typeof h === 'function')).toBe(true);
  });
});
