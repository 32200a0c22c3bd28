/**
 * Logical ids that survive moving resources into a construct. A deployed stage's functions, roles and
 * log groups carry the logical ids the stack gave them when it created them directly
 * (`OrganizationsListFunction…`); a changed logical id makes CloudFormation create a new resource
 * before deleting the old one, which fails for anything with a fixed name (functions, log groups,
 * schedules, event source mappings). A construct with a `logicalIdPrefix` puts that prefix on its
 * child's id instead of adding a path component of its own: a ServiceFunction's prefix is its id, so
 * `OrganizationsList/Function` keeps the id of `OrganizationsListFunction`; PublicApi's is empty, so
 * `PublicApi/HttpApi` keeps the id of `HttpApi`.
 */
import { createHash } from 'node:crypto';
import type { CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

const prefixOf = (c: IConstruct) => (c as { logicalIdPrefix?: unknown }).logicalIdPrefix;

/** The path components of `element` below `stack`, with each construct's `logicalIdPrefix` merged into its child's id. */
export function logicalIdPath(stack: Stack, element: CfnElement): string[] {
  const scopes = element.node.scopes;
  const path: string[] = [];
  let prefix = '';
  for (const scope of scopes.slice(scopes.indexOf(stack) + 1)) {
    const own = prefixOf(scope);
    if (typeof own === 'string') prefix += own;
    else {
      path.push(prefix + scope.node.id);
      prefix = '';
    }
  }
  return path;
}

// CDK's own rule (aws-cdk-lib core/lib/private/uniqueid.ts, not exported); test/infra/logical-ids.test.ts
// checks that it agrees with CDK on every resource of the stack.
const HIDDEN_ID = 'Default';
const HIDDEN_FROM_HUMAN_ID = 'Resource';
const alphanumeric = (s: string) => s.replace(/[^A-Za-z0-9]/g, '');

/** The logical id CDK gives a resource at `path` (components below the stack). */
export function makeUniqueId(path: readonly string[]): string {
  const components = path.filter((c) => c !== HIDDEN_ID);
  if (components.length === 1 && alphanumeric(components[0]!).length <= 255) return alphanumeric(components[0]!);
  const hash = createHash('md5').update(components.join('/')).digest('hex').slice(0, 8).toUpperCase();
  const human: string[] = [];
  for (const c of components) if (human.length === 0 || !human[human.length - 1]!.endsWith(c)) human.push(c);
  return (
    human
      .filter((c) => c !== HIDDEN_FROM_HUMAN_ID)
      .map(alphanumeric)
      .join('')
      .slice(0, 240) + hash
  );
}
