import type { QueryKind } from '../../schemas/query/index.ts';
import { requireScope, type Caller } from '../access.ts';

/**
 * Kinds that answer an insight (aggregates over events): a key with `insight:read` runs them. Every
 * other kind lists persons or events (ActorsQuery, EventsQuery and any added later) and needs
 * `query:read`, so that `insight:read` never reads what `person:read` guards on the persons routes.
 */
export const INSIGHT_QUERY_KINDS: ReadonlySet<string> = new Set<QueryKind>(['TrendsQuery']);

/** 403 unless the key may run a query of this kind; reading or cancelling a query by id needs the same. */
export function requireQueryKindScope(caller: Caller, kind: unknown): void {
  requireScope(caller, 'query:read', typeof kind === 'string' && INSIGHT_QUERY_KINDS.has(kind) ? ['insight:read'] : []);
}
