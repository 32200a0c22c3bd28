/**
 * CSV export of a trend response: one row per series, one column per bucket (headed by `days`), or
 * a single `value` column for aggregated displays. RFC 4180: CRLF line ends, fields with a comma,
 * quote or line break quoted, quotes doubled.
 */
import { breakdownLabel } from './breakdown.ts';
import type { TrendResponse, TrendSeries } from './types.ts';

function field(value: string | number): string {
  const s = String(value);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The series name, then the breakdown value (`Pageviews - Chrome`), then the compared period. */
function rowName(series: TrendSeries): string {
  let name = series.label;
  if (series.breakdown_value !== undefined) {
    const base = series.action ? series.action.custom_name || series.action.name || 'All events' : `Formula (${series.filter.formula ?? ''})`;
    name = `${base} - ${breakdownLabel(series.breakdown_value)}`;
  }
  return series.compare_label ? `${name} (${series.compare_label})` : name;
}

export function trendToCsv(response: TrendResponse): string {
  const rows = response.result;
  const aggregated = rows.some((r) => r.aggregated_value !== undefined);
  const header = aggregated ? ['series', 'value'] : ['series', ...(rows[0]?.days ?? [])];
  const lines = [header, ...rows.map((r) => [rowName(r), ...(aggregated ? [r.aggregated_value ?? 0] : r.data)])];
  return lines.map((cells) => cells.map(field).join(',')).join('\r\n') + '\r\n';
}
