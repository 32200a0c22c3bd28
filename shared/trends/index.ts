/** The trend engine: PostHog's legacy `insights/trend`, computed in memory from raw events or hourly rollups. */
export * from './types.ts';
export * from './model.ts';
export { parseTrendRequest } from './parse.ts';
export {
  resolveDateRange,
  eventsNeeded,
  eventsToRead,
  needsEventNames,
  needsPersons,
  eventPropertiesUsed,
  groupTypesRead,
} from './compute.ts';
export { type GroupLookup, groupColumn, groupKeyText } from './groups.ts';
export { computeTrend } from './columnar/index.ts';
export { canUseHourlyRollups, computeTrendFromHourly } from './hourly.ts';
export { MAX_BREAKDOWN_LIMIT, MAX_TREND_BUCKETS, MAX_CELLS, MAX_DAYS_READ, MAX_SERIES } from './limits.ts';
