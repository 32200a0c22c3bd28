/**
 * ActorsQuery whose source is an InsightActorsQuery over a TrendsQuery: the persons behind one point
 * of a trend (PostHog's persons modal). Answered by the trend engine itself, from the same model the
 * trend was drawn from: that one series, over the point's bucket (for weekly/monthly active users,
 * the trailing window ending there), restricted to the point's breakdown value, broken down by
 * `person_id` and counted per person. So a point's actors are exactly those the engine counted.
 */
import * as v from 'valibot';
import { getPersons, type PersonRecord } from '../../db/persons.ts';
import { ValidationError } from '../../errors.ts';
import { ACTORS_DEFAULT_LIMIT, type ActorsQuery } from '../../schemas/query/actors.ts';
import { insightActorsQuery, insightActorsSource } from '../../schemas/query/insight-actors.ts';
import { HOGQL } from '../../trends/hogql.ts';
import { MAX_BREAKDOWN_LIMIT } from '../../trends/limits.ts';
import type { BreakdownModel, SeriesModel, TrendsModel } from '../../trends/model.ts';
import { breakdownModel } from '../../trends/parse.ts';
import { parseProperties } from '../../trends/properties.ts';
import { BREAKDOWN_NULL_VALUE, BREAKDOWN_OTHER_VALUE, type PropertyGroup } from '../../trends/types.ts';
import { answerTrend } from '../trends.ts';
import { personObject } from './actors.ts';
import type { RunContext } from './runner.ts';
import { trendsModelOf } from './trends-model.ts';

const AT = 'query__source';
/** Columns this answer can hold: the actor (PostHog names it `actor`, or `person`) and their matching events. */
const COLUMNS = new Set(['actor', 'person', 'event_count']);
/** Days before a point's bucket that an active-users math counts (its trailing window, the bucket included). */
const TRAILING_DAYS: Record<string, number> = { weekly_active: 6, monthly_active: 29 };

export interface ActorsPoint {
  model: TrendsModel;
  /** The series' original math: an active-users math widens the window. */
  math: string;
}

function parsed<T>(schema: v.GenericSchema<unknown, T>, value: unknown, at: string): T {
  const result = v.safeParse(schema, value);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = (issue.path ?? []).map((p) => String(p.key)).join('__');
  throw new ValidationError(issue.message, path ? `${at}__${path}` : at);
}

/** `YYYY-MM-DD…` moved back whole days (the time, if any, dropped: the window starts at a day's start). */
function daysBefore(day: string, days: number): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(day);
  if (!m) throw new ValidationError('day must be a date (YYYY-MM-DD) of the trend.', `${AT}__day`);
  return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) - days * 86_400_000)
    .toISOString()
    .slice(0, 10);
}

/** The filter that keeps only the point's breakdown value, or null without a breakdown. */
function breakdownRestriction(breakdown: BreakdownModel | null, value: unknown): PropertyGroup | null {
  if (!breakdown || value === undefined || value === null) return null;
  const attr = `${AT}__breakdown`;
  if (breakdown.source !== 'event' && breakdown.source !== 'person')
    throw new ValidationError(`The actors of a ${breakdown.breakdown_type} breakdown are not supported.`, attr);
  const one = Array.isArray(value) ? value[0] : value;
  if (one === BREAKDOWN_OTHER_VALUE)
    throw new ValidationError('The actors of the "Other" row are not listed: pick one breakdown value.', attr);
  const filter =
    one === BREAKDOWN_NULL_VALUE || one === ''
      ? { key: breakdown.property, type: breakdown.source, operator: 'is_not_set' }
      : { key: breakdown.property, type: breakdown.source, operator: 'exact', value: one };
  return parseProperties([filter], attr, HOGQL).group;
}

/** The trend's own errors name its fields as a query's (`query__series__0`): here it sits at `query__source__source`. */
async function asSource<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof ValidationError && e.attr?.startsWith('query__'))
      throw new ValidationError(e.detail, `${AT}__source__${e.attr.slice('query__'.length)}`, e.code);
    throw e;
  }
}

/** The trend model whose answer is the point's actors: one row per person, their count of matching events. */
export async function actorsModelOf(source: ActorsQuery['source']): Promise<ActorsPoint> {
  const insight = parsed(insightActorsQuery, source, AT);
  const trend = parsed(insightActorsSource, insight.source, `${AT}__source`);
  const model = await asSource(() => trendsModelOf(trend));
  const index = insight.series ?? 0;
  const picked: SeriesModel | undefined = model.series[index];
  if (!picked) throw new ValidationError(`The trend has no series ${index}.`, `${AT}__series`);
  if (insight.day === undefined || insight.day === null)
    throw new ValidationError('day is required: the date of the point whose actors to list.', `${AT}__day`);
  const day = String(insight.day);
  const restriction = breakdownRestriction(model.breakdownFilter, insight.breakdown);
  const properties: PropertyGroup = restriction
    ? { type: 'AND', values: [picked.properties, restriction] }
    : picked.properties;
  const series: SeriesModel = { ...picked, math: 'total', math_property: null, math_hogql: null, properties };
  const trailing = TRAILING_DAYS[picked.math];
  const perPerson = breakdownModel(
    { type: 'hogql', breakdown: 'person_id', limit: MAX_BREAKDOWN_LIMIT, hideOther: false },
    'ActionsTable',
    {
      breakdown: `${AT}__breakdown`,
      breakdown_type: `${AT}__breakdown`,
      breakdown_limit: `${AT}__breakdown`,
      breakdown_hide_other_aggregation: `${AT}__breakdown`,
      breakdown_group_type_index: `${AT}__breakdown`,
    },
  );
  return {
    math: picked.math,
    model: {
      ...model,
      series: [series],
      // Not explicit: both ends round to the interval, so the range is exactly the point's bucket.
      dateRange: { date_from: trailing ? daysBefore(day, trailing) : day, date_to: day, explicitDate: false },
      breakdownFilter: perPerson,
      compareFilter: { compare: false, compare_to: null },
      trendsFilter: { display: 'ActionsTable', formula: null },
      formula: null,
    },
  };
}

/** The ActorsQuery's answer: `[actor, event_count]` rows, most events first, paged by limit and offset. */
export async function runInsightActorsQuery(context: RunContext, query: ActorsQuery): Promise<Record<string, unknown>> {
  const select = query.select?.length ? query.select : ['actor', 'event_count'];
  select.forEach((c, i) => {
    if (!COLUMNS.has(c.split('--')[0]!.trim()))
      throw new ValidationError(
        'The actors of an insight have the columns actor (or person) and event_count.',
        `query__select__${i}`,
      );
  });
  const { model } = await actorsModelOf(query.source);
  const computed = await asSource(() => answerTrend(context.project, model, context.check));
  const rows = computed.response.result.filter((r) => r.breakdown_value !== BREAKDOWN_OTHER_VALUE);
  const truncated = rows.length < computed.response.result.length;
  const counted = rows
    .map((r) => ({ id: String(r.breakdown_value), count: r.aggregated_value ?? r.count }))
    .filter((r) => r.count > 0)
    .sort((a, b) => b.count - a.count || Number(a.id) - Number(b.id) || a.id.localeCompare(b.id));
  const limit = query.limit ?? ACTORS_DEFAULT_LIMIT;
  const offset = query.offset ?? 0;
  const page = counted.slice(offset, offset + limit);
  // A distinct id with no person yet counts in the trend under its own id: no actor to show.
  const ids = page.map((r) => Number(r.id)).filter((id) => Number.isSafeInteger(id));
  const persons = new Map((await getPersons(context.projectId, ids)).map((p: PersonRecord) => [String(p.id), p]));
  const results = page.flatMap((r) => {
    const person = persons.get(r.id);
    if (!person) return [];
    return [select.map((c) => (c.split('--')[0]!.trim() === 'event_count' ? r.count : personObject(person)))];
  });
  return {
    results,
    columns: select,
    types: select.map((c) => (c.split('--')[0]!.trim() === 'event_count' ? 'UInt64' : 'Tuple')),
    hasMore: offset + limit < counted.length || truncated,
    limit,
    offset,
    missing_actors_count: page.length - results.length,
  };
}
