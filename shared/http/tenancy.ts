/** Which tenant a route's path names, derived from the path so the route table cannot disagree with it. */
export type Tenancy =
  | { kind: 'organization'; param: string }
  | { kind: 'project'; param: string }
  | { kind: 'organization-collection' }
  | { kind: 'user' };

export function tenancyOf(path: string): Tenancy {
  const org = /^\/api\/organizations\/:([a-z_]+)/.exec(path);
  if (org) return { kind: 'organization', param: org[1]! };
  const project = /^\/api\/(?:environments|projects)\/:([a-z_]+)/.exec(path);
  if (project) return { kind: 'project', param: project[1]! };
  if (path === '/api/organizations') return { kind: 'organization-collection' };
  return { kind: 'user' };
}
