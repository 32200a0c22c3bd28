/**
 * The actors behind one number of a trend that counts groups (PostHog's InsightActorsQuery over a
 * TrendsQuery: a series, optionally a day and a breakdown value): the group keys of the matching
 * events, each with its event count. Same masks, buckets and breakdown values as the engine's answer.
 */
import { ValidationError } from '#shared/errors.ts';
import { indexActions, periodsFor, projectContext, resolveDateRange } from '../compute.ts';
import { bucketDay, windowStart } from '../dates.ts';
import { groupColumn, groupKeyText, requiredGroupOf } from '../groups.ts';
import { windowDays } from '../math.ts';
import type { TrendsModel } from '../model.ts';
import { BREAKDOWN_OTHER_VALUE } from '../types.ts';
import { BatchLookups, type ColumnarInput, QueryState, seriesNodes } from './engine.ts';
import { evaluate } from './masks.ts';

export interface ActorsPick {
  /** The series' position in the query. */
  series: number;
  /** One bucket, as the answer's `days` names it (`2024-03-10`); null: the whole period. */
  day: string | null;
  /** One breakdown value (`breakdown_value` of a row); null: every value. */
  breakdown: string | null;
  /** The caller's names of these fields, for errors. */
  attrs: { series: string; day: string; breakdown: string };
}

/** The group type whose actors a pick lists (400 on a series that does not count groups): checked before anything is read. */
export function actorGroupTypeOf(query: TrendsModel, pick: Pick<ActorsPick, 'series' | 'attrs'>): number {
  const entity = query.series[pick.series];
  if (!entity) throw new ValidationError(`The query has ${query.series.length} series.`, pick.attrs.series);
  // With aggregation_group_type_index every series's actors are groups (PostHog's GroupStrategy), whatever its math.
  const typeIndex = requiredGroupOf(entity, query);
  if (typeIndex === null)
    throw new ValidationError(
      'Only actors of a series that counts groups (unique_group, math_group_type_index or aggregation_group_type_index) are listed: persons of an insight are not supported.',
      pick.attrs.series,
    );
  return typeIndex;
}

/** The group type the series counts and its actors: group key → matching events, in first-seen order. */
export function trendGroupActors(
  query: TrendsModel,
  input: Omit<ColumnarInput, 'denseCells'>,
  pick: ActorsPick,
): { typeIndex: number; actors: Map<string, number> } {
  const typeIndex = actorGroupTypeOf(query, pick);
  const ctx = projectContext(query, input.project, input.now);
  const [period] = periodsFor(query, resolveDateRange(query, input.project, input.now, input.firstEventAt));
  const B = period!.buckets.length;
  let from = period!.from;
  let to = period!.to;
  if (pick.day !== null) {
    const b = period!.buckets.findIndex((t) => bucketDay(t, query.interval, ctx.tz) === pick.day);
    if (b < 0) throw new ValidationError(`"${pick.day}" is not a day of this trend.`, pick.attrs.day);
    from = period!.buckets[b]!;
    to = b + 1 < B ? period!.buckets[b + 1]! - 1 : period!.to;
    // A trailing active-users window: its actors are those of the days it spans.
    const days = windowDays(query.series[pick.series]!.math, query.interval);
    if (days !== null) from = windowStart(from, days, ctx.tz);
  }
  const breakdown = query.breakdownFilter;
  if (pick.breakdown === BREAKDOWN_OTHER_VALUE)
    throw new ValidationError('The actors of the "Other" row are not listed; pick a value.', pick.attrs.breakdown);
  const actions = indexActions(query, input.actions);
  const node = seriesNodes(query, input.project, actions, ctx, { groups: input.groups, cohorts: input.cohorts })[
    pick.series
  ]!;
  const state = new QueryState(input.groups);
  const actors = new Map<string, number>();
  const lo = Math.max(from, input.source.from);
  const hi = Math.min(to, input.source.to);
  const column = groupColumn(typeIndex);
  input.source.forEachBatch((batch) => {
    const mask = evaluate(node, batch);
    if (mask === false) return;
    const keys = batch.columns.get(column);
    if (!keys) return;
    const groups = breakdown && pick.breakdown !== null ? new BatchLookups(batch, state).groups(breakdown) : null;
    const wanted = pick.breakdown === null ? -1 : state.groups.of(pick.breakdown);
    const { time, base, n } = batch;
    for (let i = 0; i < n; i += 1) {
      if (mask !== true && mask[i] === 0) continue;
      const t = base + time[i]!;
      if (t < lo || t > hi) continue;
      if (groups !== null && groups.table[groups.indexes[i]!] !== wanted) continue;
      const v = keys.indexes[i]!;
      const key = v === 0 ? null : groupKeyText(keys.dictionary[v - 1]);
      if (key !== null) actors.set(key, (actors.get(key) ?? 0) + 1);
    }
  });
  return { typeIndex, actors };
}
