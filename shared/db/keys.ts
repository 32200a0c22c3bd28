/**
 * Every primary and index key of the single table is built here, one builder per entity.
 * docs/access-patterns.md lists the access each key serves; change that document first.
 */
export interface ItemKey {
  pk: string;
  sk: string;
}

export const keys = {
  user: (userId: string): ItemKey => ({ pk: `USER#${userId}`, sk: 'USER' }),
  userEmail: (email: string): ItemKey => ({ pk: `EMAIL#${email.toLowerCase()}`, sk: 'EMAIL' }),
  apiKey: (secureValue: string): ItemKey => ({ pk: `APIKEY#${secureValue}`, sk: 'APIKEY' }),
  /** byParent: a user's keys in creation order. */
  apiKeysOfUser: (userId: string) => ({ parent_pk: `USER#${userId}#APIKEYS` }),

  organization: (orgId: string): ItemKey => ({ pk: `ORG#${orgId}`, sk: 'ORG' }),
  organizationPartition: (orgId: string) => ({ pk: `ORG#${orgId}` }),
  slug: (slug: string): ItemKey => ({ pk: `SLUG#${slug}`, sk: 'SLUG' }),
  /** Lives in the user's partition: "my organizations" is one strongly consistent Query. */
  membership: (userId: string, orgId: string): ItemKey => ({ pk: `USER#${userId}`, sk: `ORG#${orgId}` }),
  membershipsOfUser: (userId: string) => ({ pk: `USER#${userId}`, skPrefix: 'ORG#' }),
  /** byParent: an organization's members (for delete and member lists). */
  membersOfOrganization: (orgId: string) => ({ parent_pk: `ORG#${orgId}#MEMBERS` }),

  /** Projects live in their organization's partition; the retrieve of an org reads them in the same Query. */
  project: (orgId: string, projectId: number): ItemKey => ({ pk: `ORG#${orgId}`, sk: `PROJECT#${pad(projectId)}` }),
  projectSkPrefix: 'PROJECT#',
  /** Immutable pointer from a project id to its organization. */
  projectLookup: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'LOOKUP' }),
  /** Immutable pointer from a public project token (phc_) to its project, for capture. */
  projectToken: (token: string): ItemKey => ({ pk: `TOKEN#${token}`, sk: 'TOKEN' }),

  counter: (name: string): ItemKey => ({ pk: `COUNTER#${name}`, sk: 'COUNTER' }),
} as const;

/** Zero-padded so integer ids sort numerically inside a partition. */
function pad(n: number): string {
  return String(n).padStart(12, '0');
}
