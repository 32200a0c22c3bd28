import { nowIso } from '../clock.ts';
import { getProject, updateProjectSettings, type ProjectChanges, type ProjectRecord } from '../db/projects.ts';
import { NotFound, ValidationError } from '../errors.ts';
import { HOGQL } from '../trends/hogql.ts';
import { parseProperties } from '../trends/properties.ts';
import { isValidTimeZone } from '../trends/tz.ts';
import type { ProjectSettings, PropertyFilter } from '../trends/types.ts';
import type { MembershipRecord } from '../db/organizations.ts';

/** PostHog's environment (team) shape, limited to what this service keeps. */
export function projectResponse(p: ProjectRecord) {
  return {
    id: p.id,
    uuid: p.uuid,
    organization: p.organization_id,
    project_id: p.id,
    api_token: p.api_token,
    name: p.name,
    timezone: p.timezone,
    week_start_day: p.week_start_day,
    test_account_filters: p.test_account_filters,
    autocapture_opt_out: p.autocapture_opt_out ?? false,
    created_at: p.created_at,
    updated_at: (p as ProjectRecord & { updated_at?: string }).updated_at ?? p.created_at,
  };
}

export async function findProject(membership: MembershipRecord, projectId: number): Promise<ProjectRecord> {
  const project = await getProject(membership.organization_id, projectId);
  if (!project) throw new NotFound();
  return project;
}

/** What the trend engine needs of a project. Test-account filters were validated when they were saved. */
export function projectSettings(p: ProjectRecord): ProjectSettings {
  return {
    timezone: p.timezone,
    week_start_day: p.week_start_day,
    test_account_filters: p.test_account_filters as PropertyFilter[],
  };
}

export interface ProjectInput {
  name?: string;
  timezone?: string;
  week_start_day?: 0 | 1;
  test_account_filters?: unknown[];
  autocapture_opt_out?: boolean;
}

export async function updateProject(membership: MembershipRecord, projectId: number, input: ProjectInput) {
  const changes: ProjectChanges = { updated_at: nowIso() };
  if (input.name !== undefined) changes.name = input.name;
  if (input.timezone !== undefined) {
    if (!input.timezone || !isValidTimeZone(input.timezone))
      throw new ValidationError(`"${input.timezone}" is not a valid time zone.`, 'timezone', 'invalid_choice');
    changes.timezone = input.timezone;
  }
  if (input.week_start_day !== undefined) changes.week_start_day = input.week_start_day;
  if (input.test_account_filters !== undefined) {
    // The same grammar the trend engine applies them with (hogql filters included); a list is ANDed.
    changes.test_account_filters = parseProperties(input.test_account_filters, 'test_account_filters', HOGQL).echo;
  }
  if (input.autocapture_opt_out !== undefined) changes.autocapture_opt_out = input.autocapture_opt_out;
  const updated = await updateProjectSettings(membership.organization_id, projectId, changes);
  if (!updated) throw new NotFound();
  return projectResponse(updated);
}
