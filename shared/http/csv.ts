/** `format=csv`: PostHog's CSV renderer flattens nested fields into dotted columns (`properties.email`, `distinct_ids.0`). */

function flatten(value: unknown, prefix: string, out: Record<string, unknown>): void {
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    if (entries.length === 0 && prefix) out[prefix] = '';
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  out[prefix] = value;
}

function cell(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
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

export function toCsv(rows: unknown[]): string {
  const flat = rows.map((r) => {
    const out: Record<string, unknown> = {};
    flatten(r, '', out);
    return out;
  });
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const row of flat) for (const k of Object.keys(row)) if (!seen.has(k)) (seen.add(k), columns.push(k));
  return [columns.map(cell).join(','), ...flat.map((row) => columns.map((c) => cell(row[c])).join(','))].join('\r\n') + '\r\n';
}
