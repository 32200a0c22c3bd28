import { requireScope } from '../../domain/access.ts';
import { established, type Middleware, type RouteInfo } from './pipeline.ts';

/** The key must carry the route's scope or one it also accepts (`x:write` implies `x:read`, `*` all): 403 naming the route's scope otherwise. */
export const scope = (route: RouteInfo): Middleware => ({
  before: (request) => requireScope(established(request, 'caller', 'authentication'), route.scope, route.alsoAccepts),
});
