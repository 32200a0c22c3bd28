/**
 * The project's one CSV writer: API responses (`format=csv`), trends and export files. csv-stringify
 * writes RFC 4180 (CRLF line ends; a field with a comma, quote or line break quoted, quotes doubled);
 * what each cell says is ours. OWASP's CSV-injection rule: a text cell starting with `=`, `+`, `-`,
 * `@`, tab or carriage return is prefixed with `'`, so a spreadsheet shows it instead of running it as
 * a formula. True numbers (finite JSON/JS numbers, e.g. a trend's `-5`) are written as they are: a
 * spreadsheet reads them as numbers, never as formulas; the text `-5` (a string property) is prefixed
 * like any other text.
 */
import { stringify } from 'csv-stringify/sync';
import { breakdownLabel } from './trends/breakdown.ts';
import type { TrendResponse, TrendSeries } from './trends/types.ts';

const FORMULA_LEAD = /^[=+\-@\t\r]/;

/** A cell's text before quoting: nothing for null, JSON for objects, ISO for dates, formulas neutralised. */
function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint') return String(value);
  const raw =
    value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return FORMULA_LEAD.test(raw) ? `'${raw}` : raw;
}

/** Every cell is text by then (cellText), so csv-stringify's own casts (booleans as 1) never apply. */
const write = (rows: readonly (readonly unknown[])[]): string =>
  stringify(
    rows.map((cells) => cells.map(cellText)),
    // A lone LF or CR is a line break to a reader too: quoted, not only the CRLF that ends a record.
    { record_delimiter: 'windows', quoted_match: /[\r\n]/ },
  );

/** One cell as it appears in a line. */
export const csvCell = (value: unknown): string => write([[value]]).slice(0, -2);

/** A header line and one line per row; objects in cells are written as JSON. */
export function csvTable(header: readonly unknown[], rows: readonly (readonly unknown[])[]): string {
  return write([header, ...rows]);
}

/** Records as CSV with the given columns in order (export files). */
export function recordsToCsv(records: readonly Record<string, unknown>[], columns: readonly string[]): string {
  return csvTable(
    columns,
    records.map((r) => columns.map((c) => r[c])),
  );
}

// ---------------------------------------------------------------------------------------------
// API responses: PostHog's CSV renderer flattens nested fields into dotted columns
// (`properties.email`, `distinct_ids.0`).
// ---------------------------------------------------------------------------------------------

/**
 * Columns from nested fields (one per person property key or distinct id: as many as a tenant
 * cares to create) kept per CSV, first seen first; top-level fields are always kept.
 */
export const MAX_CSV_NESTED_COLUMNS = 1000;
/** Rows per CSV answer: lists already page (at most 1000 per page); this bounds the unpaged ones. */
export const MAX_CSV_ROWS = 1000;

function flatten(value: unknown, prefix: string, out: Record<string, unknown>): void {
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    if (entries.length === 0 && prefix) out[prefix] = '';
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  out[prefix] = value;
}

/** Rows from a response body: a page's `results`, a timeline's `points`, or the body itself. */
export function rowsOf(body: unknown): unknown[] {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (Array.isArray(b.results)) return b.results;
    if (Array.isArray(b.points)) return b.points;
  }
  return body === undefined ? [] : [body];
}

export interface FlatCsv {
  text: string;
  omittedRows: number;
  omittedColumns: number;
}

export function flatCsv(rows: unknown[]): FlatCsv {
  const flat = rows.slice(0, MAX_CSV_ROWS).map((r) => {
    const out: Record<string, unknown> = {};
    flatten(r, '', out);
    return out;
  });
  const columns: string[] = [];
  const seen = new Set<string>();
  let nested = 0;
  for (const row of flat) {
    for (const k of Object.keys(row)) {
      if (seen.has(k)) continue;
      seen.add(k);
      if (k.includes('.') && nested++ >= MAX_CSV_NESTED_COLUMNS) continue;
      columns.push(k);
    }
  }
  return {
    text: csvTable(
      columns,
      flat.map((row) => columns.map((c) => row[c])),
    ),
    omittedRows: Math.max(0, rows.length - MAX_CSV_ROWS),
    omittedColumns: seen.size - columns.length,
  };
}

/** What a CSV answer left out, for a response header; undefined when nothing was. */
export function omissionNote(csv: FlatCsv): string | undefined {
  const notes = [
    ...(csv.omittedColumns
      ? [`${csv.omittedColumns} columns omitted (at most ${MAX_CSV_NESTED_COLUMNS} columns from nested fields)`]
      : []),
    ...(csv.omittedRows ? [`${csv.omittedRows} rows omitted (at most ${MAX_CSV_ROWS} rows)`] : []),
  ];
  return notes.length ? notes.join('; ') : undefined;
}

// ---------------------------------------------------------------------------------------------
// Trends: one row per series, one column per bucket (headed by `days`), or a single `value`
// column for aggregated displays.
// ---------------------------------------------------------------------------------------------

/** The series name, then the breakdown value (`Pageviews - Chrome`), then the compared period. */
function rowName(series: TrendSeries): string {
  let name = series.label;
  if (series.breakdown_value !== undefined) {
    const base = series.action
      ? series.action.custom_name || series.action.name || 'All events'
      : `Formula (${series.filter.formula ?? ''})`;
    // Cohort rows carry the cohort's id: their label already names the cohort (with the series when there are several).
    name =
      series.filter.breakdown_type === 'cohort'
        ? series.label.startsWith(`${base} - `)
          ? series.label
          : `${base} - ${series.label}`
        : `${base} - ${breakdownLabel(series.breakdown_value as string)}`;
  }
  return series.compare_label ? `${name} (${series.compare_label})` : name;
}

export function trendToCsv(response: TrendResponse): string {
  const rows = response.result;
  const aggregated = rows.some((r) => r.aggregated_value !== undefined);
  const header = aggregated ? ['series', 'value'] : ['series', ...(rows[0]?.days ?? [])];
  return csvTable(
    header,
    rows.map((r) => [rowName(r), ...(aggregated ? [r.aggregated_value ?? 0] : r.data)]),
  );
}
