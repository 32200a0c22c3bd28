/**
 * Types of the trend engine (PostHog's legacy `insights/trend` endpoint, computed in memory).
 * The engine is pure: storage hands it events (or hourly counts), it hands back the response body.
 * The query it reads is model.ts.
 */
import type { Expr } from '../hogql/ast.ts';

/** A raw event as storage hands it over (already limited to the project). */
export interface TrendEvent {
  uuid?: string;
  event: string;
  distinct_id: string;
  /** Resolved person (merged distinct ids share one); the caller falls back to distinct_id when unknown. */
  person_id: string;
  /** ISO UTC, or epoch milliseconds. */
  timestamp: string | number;
  properties: Record<string, unknown>;
  /** The person's CURRENT properties (PostHog without person-on-events). */
  person_properties: Record<string, unknown>;
}

/** `type`: 'event' (default), 'person' or 'group' (with `group_type_index`); other types are refused at parse time. */
export interface PropertyFilter {
  key: string;
  value?: unknown;
  operator?: string;
  type?: string;
  /** A group filter's type index (0-4): the property is read from the event's `$group_N` group. */
  group_type_index?: number;
}

/**
 * PostHog's `{"type": "hogql", "key": "<boolean expression>"}` filter, its expression parsed. Trends
 * take it in the request's, series' and test-account filters (properties.ts HOGQL); the columnar
 * engine evaluates it per dictionary entry or distinct tuple (columnar/masks.ts).
 */
export interface HogQLPropertyFilter {
  type: 'hogql';
  key: string;
  expr: Expr;
  /** The caller's name of `key` (`properties__0__key`): errors while evaluating the expression name it. */
  attr?: string;
}

export interface PropertyGroup {
  type: 'AND' | 'OR';
  values: (PropertyFilter | HogQLPropertyFilter | PropertyGroup)[];
}

export const isHogQLFilter = (v: PropertyFilter | HogQLPropertyFilter): v is HogQLPropertyFilter =>
  v.type === 'hogql' && 'expr' in v;

export interface ProjectSettings {
  timezone: string;
  /** 0 = Sunday, 1 = Monday (PostHog's Team.week_start_day). */
  week_start_day: 0 | 1;
  test_account_filters: PropertyFilter[];
}

/** An action matches an event if ANY step matches (step.event null = any event; all of the step's filters must match). */
export interface ActionDefinition {
  id: number;
  name: string;
  steps: { event: string | null; properties?: PropertyFilter[] }[];
}

export type Interval = 'hour' | 'day' | 'week' | 'month';

export const PROPERTY_MATHS = ['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'] as const;
export type PropertyMath = (typeof PROPERTY_MATHS)[number];

export const COUNT_PER_ACTOR_MATHS = [
  'avg_count_per_actor',
  'min_count_per_actor',
  'max_count_per_actor',
  'median_count_per_actor',
  'p75_count_per_actor',
  'p90_count_per_actor',
  'p95_count_per_actor',
  'p99_count_per_actor',
] as const;
export type CountPerActorMath = (typeof COUNT_PER_ACTOR_MATHS)[number];

export const ACTIVE_USER_MATHS = ['dau', 'weekly_active', 'monthly_active'] as const;

export type MathType =
  | 'total'
  | 'dau'
  | 'weekly_active'
  | 'monthly_active'
  | 'unique_session'
  /** Distinct `$group_N` (`math_group_type_index`) among the matching events. */
  | 'unique_group'
  | PropertyMath
  | CountPerActorMath;

/**
 * A series' math as the model carries it: `hogql` is PostHog's `math: "hogql"` with `math_hogql`,
 * typed for the expression engine; the front ends refuse it today, so the engine never sees it.
 */
export type SeriesMath = MathType | 'hogql';

/** Displays that return one `aggregated_value` per series over the whole range instead of per-bucket data. */
const AGGREGATED = [
  'ActionsTable',
  'ActionsPie',
  'ActionsBarValue',
  'WorldMap',
  'BoldNumber',
  'CalendarHeatmap',
] as const;

export const DISPLAYS = [
  'ActionsLineGraph',
  'ActionsLineGraphCumulative',
  'ActionsBar',
  'ActionsAreaGraph',
  'ActionsStackedBar',
  'ActionsUnstackedBar',
  ...AGGREGATED,
] as const;
export type KnownDisplay = (typeof DISPLAYS)[number];
/** The legacy endpoint takes any display string; one it does not know is answered as a time series. */
export type Display = KnownDisplay | (string & {});

export const AGGREGATED_DISPLAYS: ReadonlySet<Display> = new Set<Display>(AGGREGATED);

/** Displays that answer without the breakdown of the request (one number, or one heatmap, per series). */
export const UNBROKEN_DISPLAYS: ReadonlySet<Display> = new Set<Display>(['BoldNumber', 'CalendarHeatmap']);

export type FormulaNode =
  | { kind: 'number'; value: number }
  | { kind: 'series'; index: number }
  | { kind: 'negate'; operand: FormulaNode }
  | { kind: 'binary'; op: '+' | '-' | '*' | '/' | '%'; left: FormulaNode; right: FormulaNode };

export interface DateRange {
  /** Lower bound of the events counted (bucket-aligned when PostHog rounds it). */
  from: Date;
  /** Upper bound, inclusive. */
  to: Date;
  /** Bucket starts: UTC instants of the local bucket starts. */
  buckets: Date[];
  /** The lower bound before rounding to its bucket (what PostHog's compare period is computed from). */
  unrounded_from: Date;
  /** The upper bound as PostHog adjusts it (`to`, or the end of the current hour for an hourly range without date_to). */
  adjusted_to: Date;
  interval: Interval;
  timezone: string;
  /** The project's week start, kept so the range alone can derive the compared period. */
  week_start_day: 0 | 1;
}

export interface SeriesAction {
  id: string | number | null;
  type: 'events' | 'actions';
  order: number;
  name: string | null;
  custom_name: string | null;
  math: SeriesMath;
  math_property: string | null;
  math_property_type: string | null;
  math_group_type_index?: number;
  properties: unknown[];
}

export interface TrendFilterEcho {
  insight: 'TRENDS';
  events: SeriesAction[];
  actions: SeriesAction[];
  properties: PropertyGroup;
  filter_test_accounts: boolean;
  date_from: string;
  date_to: string;
  interval: Interval;
  display: Display;
  /** A cohort breakdown echoes its list of cohort ids / `"all"`. */
  breakdown?: string | (number | string)[];
  breakdown_type?: string;
  breakdown_limit?: number;
  breakdown_group_type_index?: number;
  aggregation_group_type_index?: number;
  compare: boolean;
  compare_to?: string;
  formula?: string;
}

export interface TrendSeries {
  action: SeriesAction | null;
  label: string;
  count: number;
  data: number[];
  labels: string[];
  days: string[];
  filter: TrendFilterEcho;
  /** A cohort breakdown's rows carry the cohort id (a number) or `"all"`, as PostHog. */
  breakdown_value?: string | number;
  aggregated_value?: number;
  compare?: boolean;
  compare_label?: 'current' | 'previous';
}

export interface TrendResponse {
  result: TrendSeries[];
  timezone: string;
}

export const BREAKDOWN_NULL_VALUE = '$$_posthog_breakdown_null_$$';
export const BREAKDOWN_OTHER_VALUE = '$$_posthog_breakdown_other_$$';
export const BREAKDOWN_NULL_LABEL = 'None (i.e. no value)';
export const BREAKDOWN_OTHER_LABEL = 'Other (i.e. all remaining values)';
