/**
 * The row engine as it was before the columnar engine (shared/trends/columnar/) replaced it: every
 * event a `TrendEvent` object, filtered per series and grouped. Kept in the test tree as the reference
 * the property test (test/unit/trends/columnar-equivalence.test.ts) checks the columnar engine against.
 */
import { indexActions, periodsFor, projectContext, readFrom, resolveDateRange } from '#shared/trends/compute.ts';
import type { DateContext, Period } from '#shared/trends/dates.ts';
import { buildResponse, type PeriodResult } from '#shared/trends/output.ts';
import { compileFilters, compileGroup, type EventPredicate, parseFilter } from '#shared/trends/properties.ts';
import type { SeriesModel, TrendsModel } from '#shared/trends/model.ts';
import type {
  ActionDefinition,
  ProjectSettings,
  PropertyFilter,
  TrendEvent,
  TrendResponse,
} from '#shared/trends/types.ts';
import { breakdownReader, breakdownRows } from './breakdown.ts';
import { computeRow, lowerIndex, type RowValues, type TimedEvent } from './math.ts';

function storedFilters(filters: PropertyFilter[] | undefined, attr: string, ctx: DateContext): EventPredicate {
  const parsed = (filters ?? []).map((f, i) => parseFilter(f as unknown as Record<string, unknown>, `${attr}__${i}`));
  return compileFilters(parsed, ctx);
}

function seriesMatcher(
  entity: SeriesModel,
  actions: ReadonlyMap<number, ActionDefinition>,
  ctx: DateContext,
): EventPredicate {
  const own = compileGroup(entity.properties, ctx);
  if (entity.kind === 'EventsNode') {
    const name = entity.event;
    return name === null ? own : (e) => e.event === name && own(e);
  }
  const steps = actions.get(entity.id)!.steps.map((step, i) => {
    const filters = storedFilters(step.properties, `${entity.attr}__steps__${i}__properties`, ctx);
    return (e: TrendEvent) => (step.event === null || step.event === undefined || e.event === step.event) && filters(e);
  });
  return (e) => steps.some((s) => s(e)) && own(e);
}

function parseTimestamp(ts: string | number): number {
  if (typeof ts === 'number') return ts;
  return Date.parse(/(Z|[+-]\d{2}:?\d{2})$/i.test(ts) || !ts.includes('T') ? ts : `${ts}Z`);
}

function timedEvents(events: TrendEvent[]): TimedEvent[] {
  const out: TimedEvent[] = [];
  let sorted = true;
  for (const e of events) {
    const t = parseTimestamp(e.timestamp);
    if (!Number.isFinite(t)) continue;
    if (sorted && out.length && out[out.length - 1]!.t > t) sorted = false;
    out.push({ t, e });
  }
  return sorted ? out : out.sort((a, b) => a.t - b.t);
}

function eventsPerSeries(
  query: TrendsModel,
  all: TimedEvent[],
  project: ProjectSettings,
  actions: ReadonlyMap<number, ActionDefinition>,
  ctx: DateContext,
): TimedEvent[][] {
  const global = compileGroup(query.properties, ctx);
  const testAccounts = query.filterTestAccounts
    ? storedFilters(project.test_account_filters, query.attrs.testAccounts.attr, ctx)
    : () => true;
  return query.series.map((entity) => {
    const matches = seriesMatcher(entity, actions, ctx);
    return all.filter(({ e }) => matches(e) && global(e) && testAccounts(e));
  });
}

export function computeTrendByRows(
  query: TrendsModel,
  input: {
    events: TrendEvent[];
    project: ProjectSettings;
    actions: ActionDefinition[];
    now: Date;
    firstEventAt?: Date;
  },
): TrendResponse {
  const ctx = projectContext(query, input.project, input.now);
  const periods = periodsFor(query, resolveDateRange(query, input.project, input.now, input.firstEventAt));
  const actions = indexActions(query, input.actions);
  const all = timedEvents(input.events);
  const perSeries = eventsPerSeries(query, all, input.project, actions, ctx);
  const breakdown = query.breakdownFilter;
  const read = breakdown ? breakdownReader(breakdown, all) : null;
  const rowsOf = (entity: SeriesModel, events: TimedEvent[], period: Period): RowValues[] => {
    const relevant = events.slice(
      lowerIndex(events, readFrom(query, period, ctx.tz)),
      lowerIndex(events, period.to + 1),
    );
    const rowCtx = {
      period,
      interval: query.interval,
      date: ctx,
      cumulative: query.trendsFilter.display === 'ActionsLineGraphCumulative',
    };
    return breakdown && read
      ? breakdownRows(relevant, entity, breakdown, read, rowCtx)
      : [computeRow(relevant, entity, rowCtx)];
  };
  const results: PeriodResult[] = periods.map((period) => ({
    period,
    series: query.series.map((entity, i) => ({ entity, rows: rowsOf(entity, perSeries[i]!, period) })),
  }));
  return buildResponse({ query, timezone: ctx.tz, actions }, results);
}
