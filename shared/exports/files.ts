import { brotliCompressSync, gzipSync } from 'node:zlib';
import { recordsToCsv } from '../csv.ts';

export const FILE_FORMATS = ['JSONLines', 'CSV'] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];
export const COMPRESSIONS = ['none', 'gzip', 'brotli'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/** One file's bytes: JSON Lines (nested values stay objects) or CSV (nested values as JSON), then compressed. */
export function encodeRows(
  rows: Record<string, unknown>[],
  columns: string[],
  format: FileFormat,
  compression: Compression,
): { body: Buffer; extension: string; contentType: string } {
  const text =
    format === 'JSONLines'
      ? rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : '')
      : recordsToCsv(rows, columns);
  const raw = Buffer.from(text, 'utf8');
  const extension = format === 'JSONLines' ? 'jsonl' : 'csv';
  const contentType = format === 'JSONLines' ? 'application/jsonl' : 'text/csv';
  if (compression === 'gzip') return { body: gzipSync(raw), extension: `${extension}.gz`, contentType };
  if (compression === 'brotli') return { body: brotliCompressSync(raw), extension: `${extension}.br`, contentType };
  return { body: raw, extension, contentType };
}

/** PostHog's prefix variables, from the window's start (UTC). */
export function renderPrefix(prefix: string, window: { start: Date; end: Date }, table: string): string {
  const iso = window.start.toISOString();
  const vars: Record<string, string> = {
    year: iso.slice(0, 4),
    month: iso.slice(5, 7),
    day: iso.slice(8, 10),
    hour: iso.slice(11, 13),
    minute: iso.slice(14, 16),
    second: iso.slice(17, 19),
    table,
    data_interval_start: iso,
    data_interval_end: window.end.toISOString(),
  };
  // Own keys only: `{constructor}` or `{toString}` stay literal rather than expanding to Object.prototype's functions.
  return prefix.replace(/\{(\w+)\}/g, (all, name: string) => (Object.hasOwn(vars, name) ? vars[name]! : all));
}

/**
 * Where a window's file goes. Deterministic: a re-run (retry, backfill over an exported window)
 * writes the same key and so replaces its own file instead of adding a duplicate.
 */
export function objectKey(
  prefix: string,
  window: { start: Date; end: Date },
  table: string,
  extension: string,
): string {
  const base = renderPrefix(prefix, window, table).replace(/\/+$/, '');
  const name = `${window.start.toISOString()}-${window.end.toISOString()}.${extension}`;
  return base ? `${base}/${name}` : name;
}
