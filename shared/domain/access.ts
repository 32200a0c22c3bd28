import { hasScope, type Scope } from '../auth/scopes.ts';
import { secureValue } from '../auth/api-keys.ts';
import { getApiKey, getUser, type ApiKeyRecord, type UserRecord } from '../db/users.ts';
import { getMembership, organizationOfProject, type MembershipRecord } from '../db/organizations.ts';
import { NotAuthenticated, NotFound, PermissionDenied } from '../errors.ts';
import { UUID_PATTERN } from '../ids.ts';

/** Who is calling: the key's owner and the key itself (scopes and optional org/project restrictions). */
export interface Caller {
  user: UserRecord;
  key: ApiKeyRecord;
}

/** What the tenant checks need of a caller: the key's restrictions and the owner's id (known before the user is read). */
export type KeyHolder = Pick<Caller, 'key'> & { user: Pick<UserRecord, 'id'> };

/**
 * The caller of a personal API key, or 401. `onKey` runs once the key is found, before its owner is
 * read, so that lookups needing only the key (the tenant's) can run beside that read.
 */
export async function authenticate(
  rawKey: string | undefined,
  source = 'Authorization header',
  onKey?: (holder: KeyHolder) => void,
): Promise<Caller> {
  if (!rawKey) throw new NotAuthenticated();
  const key = await getApiKey(secureValue(rawKey));
  if (key) onKey?.({ key, user: { id: key.user_id } });
  const user = key && (await getUser(key.user_id));
  if (!key || !user) throw new NotAuthenticated(`Personal API key found in request ${source} is invalid.`);
  return { user, key };
}

export function requireScope(caller: Caller, scope: Scope, alsoAccepted: readonly Scope[] = []): void {
  if (![scope, ...alsoAccepted].some((s) => hasScope(caller.key.scopes, s)))
    throw new PermissionDenied(`API key missing required scope '${scope}'`);
}

/** Org-level endpoints: a key restricted to projects cannot use them (PostHog's rule). */
export function requireOrganizationLevelKey(caller: KeyHolder): void {
  if (caller.key.scoped_teams?.length) {
    throw new PermissionDenied('API keys with scoped projects are only supported on project-based endpoints.');
  }
}

export function keyAllowsOrganization(caller: KeyHolder, orgId: string): boolean {
  const scoped = caller.key.scoped_organizations;
  return !scoped?.length || scoped.includes(orgId);
}

/**
 * The caller's membership of an organization named in a path. Another tenant's organization (or one
 * that does not exist, or a malformed id) is a 404 - never a 403, so ids of others leak nothing.
 */
export async function organizationMembership(caller: KeyHolder, orgId: string): Promise<MembershipRecord> {
  if (!UUID_PATTERN.test(orgId)) throw new NotFound();
  if (!keyAllowsOrganization(caller, orgId)) {
    throw new PermissionDenied(`API key does not have access to the requested organization: ID ${orgId}.`);
  }
  const membership = await getMembership(caller.user.id, orgId.toLowerCase());
  if (!membership) throw new NotFound();
  return membership;
}

export interface ProjectAccess {
  projectId: number;
  membership: MembershipRecord;
}

/**
 * The caller's access to a project named in a path: the key's project and organization
 * restrictions (403, PostHog's wording), then membership of the owning organization (404 otherwise).
 */
export async function projectAccess(caller: KeyHolder, rawProjectId: string): Promise<ProjectAccess> {
  if (!/^\d{1,15}$/.test(rawProjectId)) throw new NotFound();
  const projectId = Number(rawProjectId);
  const scopedTeams = caller.key.scoped_teams;
  if (scopedTeams?.length && !scopedTeams.includes(projectId)) {
    throw new PermissionDenied(`API key does not have access to the requested project: ID ${projectId}.`);
  }
  const organizationId = await organizationOfProject(projectId);
  if (!organizationId) throw new NotFound();
  if (!keyAllowsOrganization(caller, organizationId)) {
    throw new PermissionDenied(`API key does not have access to the requested organization: ID ${organizationId}.`);
  }
  const membership = await getMembership(caller.user.id, organizationId);
  if (!membership) throw new NotFound();
  return { projectId, membership };
}
