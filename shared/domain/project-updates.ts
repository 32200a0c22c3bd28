/**
 * A project's settings changed (PATCH): apart from projects.ts because checking test-account filters
 * takes the trend engine's whole filter grammar (HogQL parser, regex compiler), which the functions that
 * only read projects (and the trend engine's own reads of the settings) should not bundle.
 */
import { nowIso } from '../clock.ts';
import { updateProjectSettings, type ProjectChanges } from '../db/projects.ts';
import type { MembershipRecord } from '../db/organizations.ts';
import { NotFound, ValidationError } from '../errors.ts';
import { HOGQL } from '../trends/hogql.ts';
import { parseProperties } from '../trends/properties.ts';
import { isValidTimeZone } from '../trends/tz.ts';
import { projectResponse } from './projects.ts';

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
