/**
 * Breakdowns (posthog/hogql_queries/insights/trends/breakdown.py): one row per property value,
 * the top `breakdown_limit` values by volume, the rest in one "Other" row, missing values in a
 * "None" row. Ranking and grouping: columnar/rank.ts and columnar/engine.ts.
 */
import { BREAKDOWN_NULL_LABEL, BREAKDOWN_NULL_VALUE, BREAKDOWN_OTHER_LABEL, BREAKDOWN_OTHER_VALUE } from './types.ts';

/**
 * A property value as a breakdown value: strings as they are, booleans 'true'/'false', numbers
 * stringified; missing, null and the empty string are "no value" (PostHog treats '' as none).
 */
export function breakdownText(v: unknown): string {
  if (v === undefined || v === null || v === '') return BREAKDOWN_NULL_VALUE;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

export function breakdownLabel(value: string): string {
  if (value === BREAKDOWN_NULL_VALUE) return BREAKDOWN_NULL_LABEL;
  if (value === BREAKDOWN_OTHER_VALUE) return BREAKDOWN_OTHER_LABEL;
  return value;
}
