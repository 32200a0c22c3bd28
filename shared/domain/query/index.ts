import type { MembershipRecord } from '../../db/organizations.ts';
import type { AnyQuery, QueryBody, QueryKind } from '../../schemas/query/index.ts';
import { runEventsQuery } from './events.ts';

/** What every kind's runner gets besides its query. */
export interface QueryContext {
  membership: MembershipRecord;
  projectId: number;
  /** When the answer is due (epoch ms); a runner that cannot finish by then stops (see refresh modes). */
  deadline: number;
}

/**
 * A kind's runner: the validated query (its schema in shared/schemas/query/) in, the kind's response
 * body out, as PostHog shapes it for that kind (`results`, `columns`, `hasMore`, ...). The envelope
 * every kind shares (`is_cached`, `last_refresh`, `cache_key`, `query_status`, ...) is added here.
 */
export type QueryRunner<K extends QueryKind> = (
  context: QueryContext,
  query: Extract<AnyQuery, { kind: K }>,
) => Promise<Record<string, unknown>>;

const runners: { [K in QueryKind]?: QueryRunner<K> } = {
  EventsQuery: runEventsQuery,
};

/** `POST /query`: runs the body's query. */
export async function runQuery(context: QueryContext, body: QueryBody): Promise<Record<string, unknown>> {
  const runner = runners[body.query.kind] as QueryRunner<QueryKind> | undefined;
  if (!runner) throw new Error(`no runner for ${body.query.kind}`);
  return runner(context, body.query);
}
