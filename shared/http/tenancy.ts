/** Which tenant a route's path names, derived from the path so the route table cannot disagree with it. */
export type Tenancy =
  | { kind: 'organization'; param: string }
  | { kind: 'project'; param: string }
  | { kind: 'organization-collection' }
  | { kind: 'user' };

const ORGANIZATION_PREFIX = '/api/organizations/:';
const PROJECT_PREFIXES = ['/api/environments/:', '/api/projects/:'] as const;
const ORGANIZATION_COLLECTION = '/api/organizations';

/**
 * `tenancyOf(path).kind` as a type, from the same prefixes: `${prefix}${string}` holds exactly when
 * `path.startsWith(prefix)`, so the handler's request type (shared/http/handler.ts) and what the
 * pipeline resolves at run time cannot disagree. A path typed only as `string` is `user` (the fewest fields).
 */
export type TenancyKind<P extends string> = P extends `${typeof ORGANIZATION_PREFIX}${string}`
  ? 'organization'
  : P extends `${(typeof PROJECT_PREFIXES)[number]}${string}`
    ? 'project'
    : P extends typeof ORGANIZATION_COLLECTION
      ? 'organization-collection'
      : 'user';

const paramAfter = (path: string, prefix: string) => path.slice(prefix.length).split('/')[0] ?? '';

export function tenancyOf(path: string): Tenancy {
  if (path.startsWith(ORGANIZATION_PREFIX))
    return { kind: 'organization', param: paramAfter(path, ORGANIZATION_PREFIX) };
  const project = PROJECT_PREFIXES.find((prefix) => path.startsWith(prefix));
  if (project) return { kind: 'project', param: paramAfter(path, project) };
  if (path === ORGANIZATION_COLLECTION) return { kind: 'organization-collection' };
  return { kind: 'user' };
}
