/**
 * What a kind's runner is given and returns, apart from the envelope (index.ts) that picks and runs
 * it: its own file, so the runners import it without importing the envelope that imports them.
 */
import type { MembershipRecord } from '../../db/organizations.ts';
import type { ProjectRecord } from '../../db/projects.ts';
import type { AnyQuery, QueryKind } from '../../schemas/query/index.ts';
import type { Checkpoint } from './checkpoint.ts';

/** Who asks about which project, and by when. */
export interface QueryContext {
  membership: MembershipRecord;
  projectId: number;
  /** When the answer is due (epoch ms); a runner that cannot finish by then stops (see refresh modes). */
  deadline: number;
}

/**
 * What every kind's runner gets besides its query: the context and the project, read once by the
 * envelope or the worker, and the checkpoint its loops call (checkpoint.ts).
 */
export interface RunContext extends QueryContext {
  project: ProjectRecord;
  check: Checkpoint;
}

/**
 * A kind's runner: the validated query (its schema in shared/schemas/query/) in, the kind's response
 * body out, as PostHog shapes it for that kind (`results`, `columns`, `hasMore`, ...). The envelope
 * every kind shares (`is_cached`, `last_refresh`, `cache_key`, `query_status`, ...) is added here.
 */
export type QueryRunner<K extends QueryKind> = (
  context: RunContext,
  query: Extract<AnyQuery, { kind: K }>,
) => Promise<Record<string, unknown>>;
