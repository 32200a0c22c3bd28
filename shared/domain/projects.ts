import { getProject, type ProjectRecord } from '../db/projects.ts';
import { NotFound } from '../errors.ts';
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
