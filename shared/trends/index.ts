/** The trend engine: PostHog's legacy `insights/trend`, computed in memory from raw events or hourly rollups. */
export * from './types.ts';
export { parseTrendRequest } from './parse.ts';
export { resolveDateRange, eventsNeeded, needsEventNames, needsPersons, eventPropertiesUsed, computeTrend } from './compute.ts';
export { canUseHourlyRollups, computeTrendFromHourly } from './hourly.ts';
