import { GetCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { call, db, conditional, tableName, transact } from './client.ts';
import { TRANSIENT, retryTransient, type Transient } from '../retry.ts';
import { record } from './items.ts';
import { keys, type ItemKey } from './keys.ts';
import { queryIndex, queryItems } from './query.ts';
import { TABLE_SCHEMA } from './table-schema.ts';
import type { ProjectRecord } from './projects.ts';

export const MembershipLevel = { member: 1, admin: 8, owner: 15 } as const;

export interface MembershipRecord {
  user_id: string;
  organization_id: string;
  level: number;
  joined_at: string;
}

export interface OrganizationRecord {
  id: string;
  name: string;
  slug: string;
  logo_media_id: string | null;
  created_at: string;
  updated_at: string;
  is_member_join_email_enabled: boolean;
  enforce_2fa: boolean;
  plugins_access_level: number;
  customer_id: string | null;
  member_count: number;
}

function membershipItem(m: MembershipRecord) {
  return {
    ...keys.membership(m.user_id, m.organization_id),
    ...keys.membersOfOrganization(m.organization_id),
    parent_sk: `${m.joined_at}#${m.user_id}`,
    entity: 'Membership',
    ...m,
  };
}

function projectItems(p: ProjectRecord) {
  return [
    { ...keys.project(p.organization_id, p.id), entity: 'Project', ...p },
    { ...keys.projectLookup(p.id), entity: 'ProjectLookup', project_id: p.id, organization_id: p.organization_id },
    { ...keys.projectToken(p.api_token), entity: 'ProjectToken', project_id: p.id, organization_id: p.organization_id },
  ];
}

/**
 * Organization, slug claim, owner membership and default project in one transaction: either all
 * exist or none. 'slug-taken' when the slug is claimed (the caller retries with a suffix).
 */
export async function insertOrganization(
  org: OrganizationRecord,
  owner: MembershipRecord,
  project: ProjectRecord,
): Promise<'inserted' | 'slug-taken' | Transient> {
  const Table = tableName();
  const mustBeNew = 'attribute_not_exists(pk)';
  const outcome = await transact([
    {
      name: 'slug',
      Put: {
        TableName: Table,
        Item: { ...keys.slug(org.slug), entity: 'Slug', organization_id: org.id },
        ConditionExpression: mustBeNew,
      },
    },
    {
      Put: {
        TableName: Table,
        Item: { ...keys.organization(org.id), entity: 'Organization', ...org },
        ConditionExpression: mustBeNew,
      },
    },
    { Put: { TableName: Table, Item: membershipItem(owner), ConditionExpression: mustBeNew } },
    ...projectItems(project).map((Item) => ({ Put: { TableName: Table, Item, ConditionExpression: mustBeNew } })),
  ]);
  if (outcome.committed) return 'inserted';
  if ('conflict' in outcome) return TRANSIENT;
  if (outcome.failed.includes('slug')) return 'slug-taken';
  throw new Error(`organization ${org.id} could not be inserted: item(s) ${outcome.failed.join(', ')} already exist`);
}

/** The organization and its projects: one strongly consistent Query of the organization's partition. */
export async function getOrganizationWithProjects(
  orgId: string,
): Promise<{ organization: OrganizationRecord; projects: ProjectRecord[] } | undefined> {
  const out = await call(() =>
    db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.organizationPartition(orgId).pk },
        ConsistentRead: true,
      }),
    ),
  );
  const items = out.Items ?? [];
  const orgItem = items.find((i) => i.sk === 'ORG');
  if (!orgItem) return undefined;
  const projects = items
    .filter((i) => String(i.sk).startsWith(keys.projectSkPrefix))
    .map((i) => record<ProjectRecord>(i)!);
  return { organization: record<OrganizationRecord>(orgItem)!, projects };
}

/** One strongly consistent GetItem: does the organization still exist? */
export async function organizationExists(orgId: string): Promise<boolean> {
  const out = await call(() =>
    db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.organization(orgId),
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    ),
  );
  return out.Item !== undefined;
}

export async function getMembership(userId: string, orgId: string): Promise<MembershipRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.membership(userId, orgId), ConsistentRead: true })),
  );
  return record<MembershipRecord>(out.Item);
}

/** A user's memberships, oldest organization first (organization ids are UUID v7, so key order is creation order). */
export async function listMemberships(userId: string): Promise<MembershipRecord[]> {
  const { pk, skPrefix } = keys.membershipsOfUser(userId);
  const items = await queryItems({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ConsistentRead: true,
  });
  return items.map((item) => record<MembershipRecord>(item)!);
}

export type OrganizationChanges = Partial<
  Pick<OrganizationRecord, 'name' | 'logo_media_id' | 'is_member_join_email_enabled' | 'enforce_2fa'>
> & { updated_at: string };

/** Sets only the given fields, so concurrent updates of different fields never overwrite each other. */
export async function updateOrganization(
  orgId: string,
  changes: OrganizationChanges,
): Promise<OrganizationRecord | undefined> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets = Object.entries(changes).map(([field, value], i) => {
    names[`#f${i}`] = field;
    values[`:v${i}`] = value;
    return `#f${i} = :v${i}`;
  });
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.organization(orgId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  return record<OrganizationRecord>(out?.Attributes);
}

async function listMemberKeys(orgId: string): Promise<ItemKey[]> {
  const items = await queryIndex(TABLE_SCHEMA.indexes.byParent, keys.membersOfOrganization(orgId).parent_pk);
  return items.map((item) => ({ pk: String(item.pk), sk: String(item.sk) }));
}

const TRANSACTION_LIMIT = 100;

/**
 * Removes the organization, its slug, its projects with their id and token lookups, and every
 * membership. The first transaction holds the organization and everything that grants access to it,
 * so it disappears at once; memberships beyond that transaction's room follow in further ones
 * (a leftover membership points at nothing and reads skip it).
 */
export async function removeOrganization(
  org: OrganizationRecord,
  projects: ProjectRecord[],
): Promise<boolean | Transient> {
  const members = await listMemberKeys(org.id);
  const core: ItemKey[] = [
    keys.slug(org.slug),
    ...projects.flatMap((p) => [keys.project(org.id, p.id), keys.projectLookup(p.id), keys.projectToken(p.api_token)]),
  ];
  const Table = tableName();
  const room = TRANSACTION_LIMIT - core.length - 1;
  const first = members.slice(0, room);
  const outcome = await transact([
    { Delete: { TableName: Table, Key: keys.organization(org.id), ConditionExpression: 'attribute_exists(pk)' } },
    ...[...core, ...first].map((Key) => ({ Delete: { TableName: Table, Key } })),
  ]);
  if (!outcome.committed) return 'conflict' in outcome ? TRANSIENT : false;
  for (let i = room; i < members.length; i += TRANSACTION_LIMIT) {
    const chunk = members.slice(i, i + TRANSACTION_LIMIT);
    // Unconditional deletes: only a concurrent writer of one of these memberships can refuse them.
    await retryTransient('Memberships', async () =>
      (await transact(chunk.map((Key) => ({ Delete: { TableName: Table, Key } })))).committed ? true : TRANSIENT,
    );
  }
  return true;
}

/** Adds a member and bumps the organization's exact member_count in one transaction (idempotent per user). */
export async function insertMembership(m: MembershipRecord): Promise<boolean | Transient> {
  const Table = tableName();
  const outcome = await transact([
    { Put: { TableName: Table, Item: membershipItem(m), ConditionExpression: 'attribute_not_exists(pk)' } },
    {
      Update: {
        TableName: Table,
        Key: keys.organization(m.organization_id),
        UpdateExpression: 'ADD member_count :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':one': 1 },
      },
    },
  ]);
  return outcome.committed || ('conflict' in outcome ? TRANSIENT : false);
}

export interface ProjectPointer {
  project_id: number;
  organization_id: string;
}

/** Project id -> organization (immutable pointer, one GetItem). */
export async function findProjectById(projectId: number): Promise<ProjectPointer | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.projectLookup(projectId) })),
  );
  return out.Item
    ? { project_id: Number(out.Item.project_id), organization_id: String(out.Item.organization_id) }
    : undefined;
}

/**
 * The organizations of projects this container has seen, by table and project. A project's
 * organization never changes (no operation moves a project, and ids are never reused), so remembering
 * it is exact; a project whose organization was deleted is still refused by the membership read that
 * access checks make every time. Bounded: the oldest entry goes past the cap.
 */
const knownOrganizations = new Map<string, string>();
const KNOWN_ORGANIZATIONS_CAP = 10_000;

/** The organization a project belongs to (findProjectById, remembered per container). */
export async function organizationOfProject(projectId: number): Promise<string | undefined> {
  const id = `${tableName()}\u0000${projectId}`;
  const known = knownOrganizations.get(id);
  if (known) return known;
  const pointer = await findProjectById(projectId);
  if (!pointer) return undefined;
  if (knownOrganizations.size >= KNOWN_ORGANIZATIONS_CAP)
    knownOrganizations.delete(knownOrganizations.keys().next().value!);
  knownOrganizations.set(id, pointer.organization_id);
  return pointer.organization_id;
}

/**
 * Public project token (phc_) -> project (one GetItem; capture and the SDK endpoints authenticate with
 * it). Consistent: callers remember a miss for a while (shared/domain/project-tokens.ts), so a read
 * racing a project's creation must not miss it.
 */
export async function findProjectByToken(token: string): Promise<ProjectPointer | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.projectToken(token), ConsistentRead: true })),
  );
  return out.Item
    ? { project_id: Number(out.Item.project_id), organization_id: String(out.Item.organization_id) }
    : undefined;
}
