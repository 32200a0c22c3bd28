/** Path matching shared by the local server and the deployed fallback function: one rule for both. */
import { matchPath, pathParamNames } from './path-template.ts';

export interface RoutePattern {
  method: string;
  path: string;
}

export type Resolution<R> =
  | { kind: 'match'; route: R; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allowed: string[] }
  | { kind: 'not_found' };

/** `/a/b/` and `/a/b` are the same resource; empty segments from `//` are not collapsed. */
export function normalizePath(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** Literal segments win over parameters (`/persons/bulk_delete` before `/persons/:id`). */
function specificity(pattern: string): number {
  return pathParamNames(pattern).length;
}

export function resolveRoute<R extends RoutePattern>(
  routes: readonly R[],
  method: string,
  rawPath: string,
): Resolution<R> {
  const path = normalizePath(rawPath);
  const candidates = routes
    .map((route) => ({ route, params: matchPath(route.path, path) }))
    .filter((c): c is { route: R; params: Record<string, string> } => c.params !== undefined)
    .sort((a, b) => specificity(a.route.path) - specificity(b.route.path));
  if (candidates.length === 0) return { kind: 'not_found' };
  const hit = candidates.find((c) => c.route.method === method.toUpperCase());
  if (hit) return { kind: 'match', route: hit.route, params: hit.params };
  return { kind: 'method_not_allowed', allowed: [...new Set(candidates.map((c) => c.route.method))] };
}
