/** The columnar trend engine: a caller's events become one in-memory batch; storage hands over a ColumnSource. */
import type { CohortSets } from '../cohort-filters.ts';
import { eventPropertiesUsed } from '../compute.ts';
import type { GroupLookup } from '../groups.ts';
import type { TrendsModel } from '../model.ts';
import type { ActionDefinition, ProjectSettings, TrendEvent, TrendResponse } from '../types.ts';
import { batchOfEvents, type ColumnBatch } from './batch.ts';
import { computeCohortBreakdown } from './cohorts.ts';
import { type ColumnarInput, computeTrendFromColumns as computeColumns } from './engine.ts';

export type { ColumnarInput } from './engine.ts';

/** The engine over a ColumnSource; a cohort breakdown is one pass per cohort (cohorts.ts). */
export function computeTrendFromColumns(query: TrendsModel, input: ColumnarInput): TrendResponse {
  if (query.breakdownFilter?.source === 'cohort')
    return computeCohortBreakdown(query, input.cohorts, (pass) => computeColumns(pass, input));
  return computeColumns(query, input);
}
export {
  batchOfEvents,
  batchOfRows,
  batchOfSegment,
  distinctIdsOnly,
  type Actor,
  type ColumnBatch,
  type ColumnSource,
  type EventRow,
  type PersonJoin,
} from './batch.ts';

/** A trend over events handed over as objects (each with its person and person properties). */
export function computeTrend(
  query: TrendsModel,
  input: {
    events: TrendEvent[];
    project: ProjectSettings;
    actions: ActionDefinition[];
    now: Date;
    firstEventAt?: Date;
    groups?: GroupLookup;
    cohorts?: CohortSets;
  },
): TrendResponse {
  let batch: ColumnBatch | undefined;
  // Built on first use, after the request's range and actions are validated (their 400s come first).
  const source = {
    from: -Infinity,
    to: Infinity,
    forEachBatch: (visit: (b: ColumnBatch) => void) =>
      visit((batch ??= batchOfEvents(input.events, eventPropertiesUsed(query, input.project, input.actions)))),
  };
  return computeTrendFromColumns(query, {
    source,
    project: input.project,
    actions: input.actions,
    now: input.now,
    firstEventAt: input.firstEventAt,
    groups: input.groups,
    cohorts: input.cohorts,
  });
}
export { distinctIdsOf, groupKeysOf, storedSource, type StoredColumns } from './stored.ts';
export { cohortRefs } from './cohorts.ts';
