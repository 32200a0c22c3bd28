/**
 * ActorsQuery over groups: PostHog's `source: InsightActorsQuery` over a TrendsQuery whose series
 * counts groups (unique_group, math_group_type_index, aggregation_group_type_index). The rows are the
 * groups behind one number (a series, optionally a day and a breakdown value), most events first,
 * each as PostHog's GroupStrategy shapes a group actor.
 */
import * as v from 'valibot';
import { getGroups } from '../../db/groups.ts';
import { ValidationError } from '../../errors.ts';
import { ACTORS_DEFAULT_LIMIT, type ActorsQuery } from '../../schemas/query/actors.ts';
import { insightActorsQuery } from '../../schemas/query/insight-actors.ts';
import { trendsQuery } from '../../schemas/query/trends.ts';
import { actorGroupTypeOf, trendGroupActors } from '../../trends/columnar/actors.ts';
import { requiredGroupOf } from '../../trends/groups.ts';
import type { TrendsModel } from '../../trends/model.ts';
import { propertyOf } from '../../trends/properties.ts';
import { trendEngineInput } from '../trends.ts';
import type { RunContext } from './runner.ts';
import { trendsModelOf } from './trends-model.ts';

const S = 'query__source';
const DEFAULT_SELECT = ['actor', 'event_count'];

type Group = Awaited<ReturnType<typeof getGroups>>[number];
type Cell = (g: Group, events: number) => unknown;

/** PostHog's group actor (GroupStrategy.get_actors): its row, with `id`, `type` and `properties` besides. */
const groupActor = (g: Group) => ({
  id: g.group_key,
  type: 'group',
  properties: g.group_properties,
  group_key: g.group_key,
  group_type_index: g.group_type_index,
  created_at: g.created_at,
  group_properties: g.group_properties,
});

function columnOf(expr: string, i: number): { cell: Cell; type: string } {
  const text = expr.trim();
  if (text === 'actor' || text === 'group') return { cell: groupActor, type: 'Tuple' };
  if (text === 'event_count') return { cell: (_, n) => n, type: 'UInt64' };
  if (text === 'id' || text === 'key' || text === 'group_key') return { cell: (g) => g.group_key, type: 'String' };
  if (text === 'created_at') return { cell: (g) => g.created_at, type: 'DateTime' };
  const property = /^(?:group_)?properties\.(.+)$/.exec(text)?.[1];
  if (property !== undefined) return { cell: (g) => propertyOf(g.group_properties, property) ?? null, type: 'String' };
  throw new ValidationError(
    `Group actors have the columns actor, event_count, id (key), created_at and properties.<key>; "${text}" is none of them.`,
    `query__select__${i}`,
  );
}

/** An InsightActorsQuery source whose picked series counts groups, parsed once for its runner. */
export interface GroupActorsSource {
  insight: v.InferOutput<typeof insightActorsQuery>;
  model: TrendsModel;
}

/**
 * The source when it is an InsightActorsQuery whose picked series counts groups: its actors are groups
 * (this file); otherwise null, and the persons path (insight-actors.ts) answers, malformed sources included.
 */
export function groupActorsSource(source: unknown): GroupActorsSource | null {
  const insight = v.safeParse(insightActorsQuery, source);
  if (!insight.success) return null;
  const trend = v.safeParse(trendsQuery, insight.output.source);
  if (!trend.success) return null;
  try {
    const model = trendsModelOf(trend.output);
    const series = model.series[insight.output.series ?? 0];
    return series !== undefined && requiredGroupOf(series, model) !== null ? { insight: insight.output, model } : null;
  } catch {
    return null; // the persons path reports the source's own error
  }
}

export async function runGroupActorsQuery(
  context: RunContext,
  query: ActorsQuery,
  { insight, model }: GroupActorsSource,
): Promise<Record<string, unknown>> {
  if (query.orderBy?.length && !(query.orderBy.length === 1 && /^event_count\s+desc$/i.test(query.orderBy[0]!.trim())))
    throw new ValidationError('Group actors are ordered by event_count DESC only.', 'query__orderBy');
  const select = query.select?.length ? query.select : DEFAULT_SELECT;
  const columns = select.map(columnOf);
  const breakdown = insight.breakdown;
  const attrs = { series: `${S}__series`, day: `${S}__day`, breakdown: `${S}__breakdown` };
  actorGroupTypeOf(model, { series: insight.series ?? 0, attrs });
  const { typeIndex, actors } = trendGroupActors(model, await trendEngineInput(context.project, model, context.check), {
    series: insight.series ?? 0,
    day: insight.day === undefined || insight.day === null ? null : String(insight.day),
    breakdown:
      breakdown === undefined || breakdown === null
        ? null
        : String(Array.isArray(breakdown) ? breakdown[0] : breakdown),
    attrs,
  });
  const ranked = [...actors].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const limit = query.limit ?? ACTORS_DEFAULT_LIMIT;
  const offset = query.offset ?? 0;
  const page = ranked.slice(offset, offset + limit);
  const found = new Map(
    (
      await getGroups(
        context.projectId,
        page.map(([groupKey]) => ({ typeIndex, groupKey })),
      )
    ).map((g) => [g.group_key, g]),
  );
  // As PostHog: actors whose group was never identified are counted, not listed.
  const rows = page.flatMap(([key, events]) => {
    const g = found.get(key);
    return g ? [columns.map((c) => c.cell(g, events))] : [];
  });
  return {
    results: rows,
    columns: select,
    types: columns.map((c) => c.type),
    hasMore: ranked.length > offset + limit,
    limit,
    offset,
    missing_actors_count: page.length - rows.length,
  };
}
