import { issueApiKey } from '#shared/domain/api-keys.ts';
import { authenticate } from '#shared/domain/access.ts';
import { createOrganization } from '#shared/domain/organizations.ts';
import { getMembership, getOrganizationWithProjects } from '#shared/db/organizations.ts';
import type { LocalStackInfo } from './local-json.ts';

export const DEV_EMAIL = 'dev@localhost';

export interface DevAccess {
  personal_api_key: string;
  organization_id: string;
  project_id: number;
  project_token: string;
}

/** A dev user with an all-scopes key and an organization; reused across restarts while they still work. */
export async function ensureDevAccess(previous: LocalStackInfo | undefined): Promise<DevAccess> {
  let key = previous?.personal_api_key;
  const caller = key ? await authenticate(key).catch(() => undefined) : undefined;
  let resolvedCaller = caller;
  if (!resolvedCaller) {
    const issued = await issueApiKey({ email: DEV_EMAIL, scopes: ['*'], label: 'npm start' });
    key = issued.value;
    resolvedCaller = await authenticate(key);
  }
  if (previous?.organization_id && (await getMembership(resolvedCaller.user.id, previous.organization_id))) {
    const found = await getOrganizationWithProjects(previous.organization_id);
    const project = found?.projects[0];
    if (project) {
      return {
        personal_api_key: key!,
        organization_id: previous.organization_id,
        project_id: project.id,
        project_token: project.api_token,
      };
    }
  }
  const org = await createOrganization(resolvedCaller, { name: 'Dev organization' });
  const team = org.teams[0]!;
  return { personal_api_key: key!, organization_id: org.id, project_id: team.id, project_token: team.api_token };
}
