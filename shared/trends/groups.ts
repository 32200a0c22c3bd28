/**
 * Groups in trends (PostHog's group analytics): capture writes each event's groups as the event
 * properties `$group_0`..`$group_4` (shared/domain/group-types.ts), so the engine reads a group key
 * as a plain dictionary-encoded column, and a group's properties through a per-query lookup the
 * caller loads once (`GroupLookup`). Pure.
 */
import { ValidationError } from '#shared/errors.ts';
import type { SeriesModel, TrendsModel } from './model.ts';
import type { PropertyFilter, PropertyGroup } from './types.ts';

/** PostHog's limit: group types per project, index 0-4. */
export const GROUP_TYPE_INDEXES = 5;

/** The event property holding an event's group of type `index`. */
export const groupColumn = (index: number): string => `$group_${index}`;

/** A group's current properties, by type index and key; undefined for a group never identified. */
export type GroupLookup = (typeIndex: number, groupKey: string) => Readonly<Record<string, unknown>> | undefined;

export const NO_GROUPS: GroupLookup = () => undefined;

/** A `$group_N` value as a group key (ClickHouse's `$group_N` is a string column: '' = no group); null for none. */
export function groupKeyText(value: unknown): string | null {
  const key = typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
  return key === '' ? null : key;
}

/** A group type index as a request sends it (a number or a numeric string, 0-4); null when absent. */
export function groupTypeIndexOf(raw: unknown, attr: string): number | null {
  if (raw === undefined || raw === null || raw === '') return null;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 0 || n >= GROUP_TYPE_INDEXES)
    throw new ValidationError(`Group type index must be an integer from 0 to ${GROUP_TYPE_INDEXES - 1}.`, attr);
  return n;
}

/** Maths whose actors are groups when the series (or the query) names a group type. */
export const ACTOR_MATHS: ReadonlySet<string> = new Set<string>([
  'dau',
  'weekly_active',
  'monthly_active',
  'avg_count_per_actor',
  'min_count_per_actor',
  'max_count_per_actor',
  'median_count_per_actor',
  'p75_count_per_actor',
  'p90_count_per_actor',
  'p95_count_per_actor',
  'p99_count_per_actor',
]);

/**
 * The group type a series counts instead of persons, or null: `unique_group` and the active-user
 * maths with `math_group_type_index` (PostHog's is_groups_math), else the query's
 * `aggregation_group_type_index` for every math that counts actors.
 */
export function actorGroupOf(series: SeriesModel, query: TrendsModel): number | null {
  if (series.math === 'unique_group') return series.math_group_type_index;
  if (!ACTOR_MATHS.has(series.math)) return null;
  return series.math_group_type_index ?? query.aggregation_group_type_index;
}

/**
 * The group type whose events alone a series counts: its actor group, else the query's aggregation
 * type (PostHog leaves out events whose `$group_N` is empty when it aggregates by that group).
 */
export function requiredGroupOf(series: SeriesModel, query: TrendsModel): number | null {
  return actorGroupOf(series, query) ?? query.aggregation_group_type_index;
}

const isGroupFilter = (f: {
  type?: string;
  group_type_index?: unknown;
}): f is PropertyFilter & { group_type_index: number } => f.type === 'group' && Number.isInteger(f.group_type_index);

/** The group types whose properties a filter group reads. */
export function groupTypesOfFilters(group: PropertyGroup, into: Set<number>): Set<number> {
  for (const v of group.values) {
    if ('values' in v) groupTypesOfFilters(v, into);
    else if (isGroupFilter(v)) into.add(v.group_type_index);
  }
  return into;
}

/** Group filters of a flat list read `$group_N` columns: the event keys they need. */
export function groupColumnsOfFilters(filters: readonly { type?: string; group_type_index?: number }[]): string[] {
  return filters.flatMap((f) => (isGroupFilter(f) ? [groupColumn(f.group_type_index)] : []));
}

/**
 * Groups whose properties one trend loads at most (every type together): each is a key of a
 * BatchGetItem and an entry of the query's lookup, so a query stays within its memory and time
 * whatever the number of groups its events name.
 */
export const MAX_QUERY_GROUPS = 50_000;

/** 400 past MAX_QUERY_GROUPS, on the date range: a shorter one names fewer groups. */
export function checkQueryGroups(count: number, query: TrendsModel, max = MAX_QUERY_GROUPS): void {
  if (count > max)
    throw new ValidationError(
      `This trend reads the properties of ${count} groups; at most ${max.toLocaleString('en-US')} are read per query. Choose a shorter date range.`,
      query.attrs.date_from,
    );
}
