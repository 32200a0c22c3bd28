/**
 * The one typed trend query the engine reads, shaped as PostHog's TrendsQuery (posthog/schema.py).
 * Two front ends build it, once per request: `/query` maps its validated TrendsQuery into it
 * (shared/domain/query/trends-model.ts) and the legacy `insights/trend` request is validated and
 * converted into it (parse.ts, after PostHog's filter_to_query). Everything in it is checked: the
 * engine (dates, limits, compute, output) never sees a request it cannot answer, and the errors it
 * can still raise (caps, unknown actions, stored filters) name the caller's own fields through
 * `attrs`, set by whichever front end built the model.
 */
import type { Expr } from '../hogql/ast.ts';
import type { CohortBreakdownValue } from './cohort-filters.ts';
import type { Display, FormulaNode, Interval, PropertyGroup, SeriesMath } from './types.ts';

interface SeriesCommon {
  name: string | null;
  custom_name: string | null;
  math: SeriesMath;
  math_property: string | null;
  math_property_type: 'event_properties' | 'person_properties';
  /**
   * `math_group_type_index`: with `unique_group`, `dau`, `weekly_active`, `monthly_active` the series
   * counts that type's groups (`$group_N`) instead of persons (PostHog's is_groups_math); null otherwise.
   */
  math_group_type_index: number | null;
  /** The aggregate of `math: "hogql"`; null otherwise. */
  math_hogql: Expr | null;
  properties: PropertyGroup;
  /** The caller's name of this series in errors: `events__0` (legacy) or `query__series__0`. */
  attr: string;
  /** The caller's name of its event or action id: `events__0__id`, `query__series__0__event`. */
  idAttr: string;
  /** How the legacy `filter` echo lists it: its `events`/`actions` list, position there, filters in array form. */
  echo: { list: 'events' | 'actions'; index: number; properties: unknown[] };
}

export interface EventsSeries extends SeriesCommon {
  kind: 'EventsNode';
  /** null = all events. */
  event: string | null;
}

export interface ActionsSeries extends SeriesCommon {
  kind: 'ActionsNode';
  id: number;
}

export type SeriesModel = EventsSeries | ActionsSeries;

/** `hogql`: an expression (`expr`) other than a plain property read, evaluated by the columnar engine. */
export type BreakdownSource = 'event' | 'person' | 'session' | 'hogql' | 'group' | 'cohort';

export interface BreakdownModel {
  breakdown_type: 'event' | 'person' | 'session' | 'hogql' | 'group' | 'cohort';
  /** A group breakdown's type index (`breakdown_group_type_index`): the property of the event's `$group_N` group. */
  group_type_index?: number;
  /** The breakdown as requested (echoed in `filter.breakdown`; for hogql, the expression's text). */
  breakdown: string;
  breakdown_limit: number;
  breakdown_hide_other_aggregation: boolean;
  /** Where the value is read: event properties, person properties, group properties or the session's duration. */
  source: BreakdownSource;
  property: string;
  /**
   * A hogql breakdown's expression (source `hogql`). Null for every other breakdown, and for a hogql
   * one that only reads a property (`properties.<key>`, `person.properties.<key>`): that is read as
   * `source`/`property`, like an event or person breakdown.
   */
  expr: Expr | null;
  /** The caller's name of the breakdown (`breakdown`, `query__breakdownFilter__breakdown`): errors while evaluating `expr` name it. */
  attr?: string;
  /** A cohort breakdown's values (source `cohort`): each its own row (columnar/cohorts.ts). */
  cohorts?: CohortBreakdownValue[];
}

/** The caller's names of the fields the engine's later checks can refuse. */
export interface ModelAttrs {
  /** The series list as a whole (the series cap, "at least one series"). */
  series: string;
  date_from: string;
  date_to: string;
  interval: string;
  breakdown_limit: string;
  compare: string;
  compare_to: string;
  /** The project's time zone: a field of the legacy request's answer, none of the query's. */
  timezone: string | null;
  /**
   * The project's test-account filters: `each` names the filter inside (`filter_test_accounts__2__value`,
   * legacy); otherwise the switch that applies them (`query__filterTestAccounts`) is named.
   */
  testAccounts: { attr: string; each: boolean };
}

export interface TrendsModel {
  /** In series order: formula letter A is series 0. */
  series: SeriesModel[];
  /** Raw date strings (null = default: date_from -7d, date_to now); `explicitDate`: no rounding to the interval. */
  dateRange: { date_from: string | null; date_to: string | null; explicitDate: boolean };
  interval: Interval;
  properties: PropertyGroup;
  filterTestAccounts: boolean;
  /**
   * `aggregation_group_type_index`: actors are that type's groups (`$group_N`), not persons, for every
   * actor-counting math; events without the group are left out of every series. Null: persons.
   */
  aggregation_group_type_index: number | null;
  /** Null without a breakdown, and for displays that drop it (BoldNumber, CalendarHeatmap). */
  breakdownFilter: BreakdownModel | null;
  /** `compare_to`: relative offset of the compared period (`-1w`); null = the period immediately before. */
  compareFilter: { compare: boolean; compare_to: string | null };
  trendsFilter: { display: Display; formula: string | null };
  /** The parsed formula (null without one). */
  formula: FormulaNode | null;
  attrs: ModelAttrs;
}

/** The event name a series reads (null = every event), or its action's id. */
export const seriesId = (s: SeriesModel): string | number | null => (s.kind === 'EventsNode' ? s.event : s.id);
