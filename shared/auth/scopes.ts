/** Scope objects a personal API key can carry (PostHog's names, restricted to what this service serves or will). */
export const SCOPE_OBJECTS = [
  'organization',
  'organization_member',
  'project',
  'person',
  'batch_export',
  'insight',
  'query',
  'action',
  'activity_log',
  'cohort',
  'group',
  'event_definition',
  'property_definition',
] as const;

export type ScopeObject = (typeof SCOPE_OBJECTS)[number];
export type Scope = `${ScopeObject}:${'read' | 'write'}`;
export type GrantedScope = Scope | '*';

const SCOPE_PATTERN = new RegExp(`^(${SCOPE_OBJECTS.join('|')}):(read|write)$`);

export function isGrantableScope(value: string): value is GrantedScope {
  return value === '*' || SCOPE_PATTERN.test(value);
}

/** `*` grants everything; `x:write` grants `x:read`. */
export function hasScope(granted: readonly string[], required: Scope): boolean {
  if (granted.includes('*') || granted.includes(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && granted.includes(`${object}:write`);
}
