import { generateProjectToken } from '../auth/api-keys.ts';
import { nowIso } from '../clock.ts';
import { deleteExportsOfOrganization } from '../db/batch-exports.ts';
import {
  getOrganizationWithProjects,
  MembershipLevel,
  type MembershipRecord,
  type OrganizationRecord,
  insertMembership,
  insertOrganization,
  listMemberships,
  removeOrganization,
  updateOrganization as writeOrganizationChanges,
  type OrganizationChanges,
} from '../db/organizations.ts';
import { nextProjectId, type ProjectRecord } from '../db/projects.ts';
import { NotFound, PermissionDenied } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { keyAllowsOrganization, type Caller } from './access.ts';
import { slugCandidate } from './slug.ts';

export interface OrganizationInput {
  name?: string;
  logo_media_id?: string | null;
  is_member_join_email_enabled?: boolean;
  enforce_2fa?: boolean;
}

/** The spec's Organization shape (§2.2). `member_count` and `metadata` are strings, as the spec types them. */
export function organizationResponse(org: OrganizationRecord, projects: ProjectRecord[], membershipLevel: number) {
  return {
    id: org.id,
    name: org.name,
    slug: org.slug,
    logo_media_id: org.logo_media_id,
    created_at: org.created_at,
    updated_at: org.updated_at,
    membership_level: membershipLevel,
    plugins_access_level: org.plugins_access_level,
    teams: projects.map((p) => ({
      id: p.id,
      uuid: p.uuid,
      organization: org.id,
      project_id: p.id,
      api_token: p.api_token,
      name: p.name,
      completed_snippet_onboarding: false,
      has_completed_onboarding_for: null,
      ingested_event: false,
      is_demo: false,
      timezone: p.timezone,
      access_control: false,
    })),
    projects: projects.map((p) => ({ id: p.id, organization_id: org.id, name: p.name })),
    available_product_features: [] as unknown[],
    is_member_join_email_enabled: org.is_member_join_email_enabled,
    metadata: '',
    customer_id: org.customer_id,
    enforce_2fa: org.enforce_2fa,
    member_count: String(org.member_count),
  };
}

export type OrganizationResponse = ReturnType<typeof organizationResponse>;

const SLUG_ATTEMPTS = 10;

export async function createOrganization(
  caller: Caller,
  input: OrganizationInput & { name: string },
): Promise<OrganizationResponse> {
  const createdAt = nowIso();
  const orgId = uuidv7();
  const projectId = await nextProjectId();
  const project: ProjectRecord = {
    id: projectId,
    uuid: uuidv7(),
    organization_id: orgId,
    name: 'Default project',
    api_token: generateProjectToken(),
    timezone: 'UTC',
    week_start_day: 0,
    test_account_filters: defaultTestAccountFilters(caller.user.email),
    created_at: createdAt,
  };
  const owner: MembershipRecord = {
    user_id: caller.user.id,
    organization_id: orgId,
    level: MembershipLevel.owner,
    joined_at: createdAt,
  };
  // A taken slug moves on to the next candidate; a lost race (TransactionConflict) tries the same one again.
  let candidate = 0;
  return retryTransient(
    `Organization '${input.name}'`,
    async () => {
      const org: OrganizationRecord = {
        id: orgId,
        name: input.name,
        slug: slugCandidate(input.name, candidate),
        logo_media_id: input.logo_media_id ?? null,
        created_at: createdAt,
        updated_at: createdAt,
        is_member_join_email_enabled: input.is_member_join_email_enabled ?? true,
        enforce_2fa: input.enforce_2fa ?? false,
        plugins_access_level: 9,
        customer_id: null,
        member_count: 1,
      };
      const outcome = await insertOrganization(org, owner, project);
      if (outcome === 'inserted') return organizationResponse(org, [project], owner.level);
      if (outcome === 'slug-taken') candidate += 1;
      return TRANSIENT;
    },
    {
      attempts: SLUG_ATTEMPTS,
      gaveUp: () => new Error(`no free slug for '${input.name}' after ${SLUG_ATTEMPTS} attempts`),
    },
  );
}

const GENERIC_EMAIL_DOMAINS = new Set([
  'gmail.com',
  'yahoo.com',
  'hotmail.com',
  'outlook.com',
  'icloud.com',
  'proton.me',
  'protonmail.com',
  'example.com',
]);

/** PostHog's defaults: drop localhost traffic, and the creator's company domain when it is not a webmail one. */
function defaultTestAccountFilters(email: string): unknown[] {
  const filters: unknown[] = [
    { key: '$host', operator: 'not_regex', value: '^(localhost|127\\.0\\.0\\.1)($|:)', type: 'event' },
  ];
  const domain = email.split('@')[1];
  if (domain && !GENERIC_EMAIL_DOMAINS.has(domain) && domain !== 'localhost') {
    filters.push({ key: 'email', operator: 'not_icontains', value: `@${domain}`, type: 'person' });
  }
  return filters;
}

export async function getOrganization(membership: MembershipRecord): Promise<OrganizationResponse> {
  const found = await getOrganizationWithProjects(membership.organization_id);
  if (!found) throw new NotFound();
  return organizationResponse(found.organization, found.projects, membership.level);
}

/** The caller's organizations in creation order, a page at a time; `count` is exact. */
export async function listOrganizations(caller: Caller, page: { limit: number; offset: number }) {
  const memberships = (await listMemberships(caller.user.id)).filter((m) =>
    keyAllowsOrganization(caller, m.organization_id),
  );
  const slice = memberships.slice(page.offset, page.offset + page.limit);
  const loaded = await Promise.all(
    slice.map(async (m) => ({ m, found: await getOrganizationWithProjects(m.organization_id) })),
  );
  const results = loaded.flatMap(({ m, found }) =>
    found ? [organizationResponse(found.organization, found.projects, m.level)] : [],
  );
  return { count: memberships.length, results };
}

function requireLevel(membership: MembershipRecord, level: number): void {
  if (membership.level < level) throw new PermissionDenied('Your organization access level is insufficient.');
}

export async function updateOrganization(
  membership: MembershipRecord,
  input: OrganizationInput,
): Promise<OrganizationResponse> {
  requireLevel(membership, MembershipLevel.admin);
  const changes: OrganizationChanges = { updated_at: nowIso() };
  for (const field of ['name', 'logo_media_id', 'is_member_join_email_enabled', 'enforce_2fa'] as const) {
    if (input[field] !== undefined) (changes as Record<string, unknown>)[field] = input[field];
  }
  const updated = await writeOrganizationChanges(membership.organization_id, changes);
  if (!updated) throw new NotFound();
  return getOrganization(membership);
}

export async function deleteOrganization(membership: MembershipRecord): Promise<void> {
  requireLevel(membership, MembershipLevel.owner);
  const found = await retryTransient(`Organization ${membership.organization_id}`, async () => {
    const current = await getOrganizationWithProjects(membership.organization_id);
    const removed = current && (await removeOrganization(current.organization, current.projects));
    if (removed === TRANSIENT) return TRANSIENT;
    if (!removed) throw new NotFound();
    return current;
  });
  // The exporter drops runs of a gone organization; its exports (runs, logs) go with it now.
  await deleteExportsOfOrganization(found.organization.id);
}

/** Adds a user to an organization at a level (no API yet; used by tests and future member invites). */
export async function addMember(orgId: string, userId: string, level: number): Promise<boolean> {
  const membership = { user_id: userId, organization_id: orgId, level, joined_at: nowIso() };
  return retryTransient(`Membership of ${userId} in ${orgId}`, () => insertMembership(membership));
}
