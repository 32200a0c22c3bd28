/**
 * INTERIM TrendsQuery runner of the q-async branch, so the query envelope (refresh modes, cache, async)
 * can be tested end to end. It is REPLACED AT MERGE by the trends helper's runner
 * (shared/domain/query/trends.ts): delete this file and its line in ./index.ts then.
 *
 * It translates the few TrendsQuery fields it knows (series of EventsNode / ActionsNode with math,
 * dateRange, interval) into the legacy request and answers the legacy engine's series as `results`.
 */
import type { AnyQuery } from '../../schemas/query/index.ts';
import { computeProjectTrend } from '../trends.ts';
import type { QueryContext } from './index.ts';

type Node = { kind?: unknown; event?: unknown; id?: unknown; math?: unknown; math_property?: unknown };

export async function interimTrendsRunner(
  context: QueryContext,
  query: Extract<AnyQuery, { kind: 'TrendsQuery' }>,
): Promise<Record<string, unknown>> {
  const q = query as Record<string, unknown>;
  const series = (Array.isArray(q.series) ? q.series : []) as Node[];
  const entity = (s: Node, order: number) => ({
    id: s.kind === 'ActionsNode' ? s.id : s.event,
    math: s.math,
    math_property: s.math_property,
    order,
  });
  const range = (q.dateRange ?? {}) as { date_from?: unknown; date_to?: unknown };
  const legacy = {
    events: series.flatMap((s, i) => (s.kind === 'ActionsNode' ? [] : [entity(s, i)])),
    actions: series.flatMap((s, i) => (s.kind === 'ActionsNode' ? [entity(s, i)] : [])),
    date_from: range.date_from,
    date_to: range.date_to,
    interval: q.interval,
  };
  const answer = await computeProjectTrend(context.membership, context.projectId, legacy, true);
  return { results: answer.body.result, hasMore: false };
}
