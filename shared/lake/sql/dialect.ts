/**
 * What differs between the two engines that read the lake: Athena (Trino) deployed, DuckDB locally.
 * Everything else of a query is printed once (expr.ts, trends.ts) and calls these. Both read the
 * same columns: `timestamp` is a UTC wall-clock TIMESTAMP (Parquet TIMESTAMP_MILLIS, Glue `timestamp`),
 * `project_id` and `day` are the Hive partition columns of the path.
 */

export class LakeSqlUnsupported extends Error {
  override name = 'LakeSqlUnsupported';
  constructor(
    /** The construct, as the caller wrote it: what a 400 names. */
    readonly construct: string,
  ) {
    super(`${construct} is not supported on the lake`);
  }
}

export interface Dialect {
  name: 'athena' | 'duckdb';
  /** The text of a JSON property of `properties` (null when absent or JSON null). */
  jsonText(key: string): string;
  /** A UTC instant column as wall-clock time in `tz` (a naive timestamp). */
  localTime(column: string, tz: string): string;
  /** The start of `local`'s bucket (naive, local); weeks start on `weekStart` (0 Sunday, 1 Monday). */
  truncate(unit: 'hour' | 'day' | 'week' | 'month', local: string, weekStart: 0 | 1): string;
  /** PostHog's toFloat64OrNull of a text value. */
  toFloat(text: string): string;
  /** A RE2 match (both engines use RE2: DuckDB's regexp_matches, Trino's regexp_like). */
  regex(text: string, pattern: string): string;
  /** A case-insensitive LIKE. */
  ilike(text: string, pattern: string): string;
  /** A naive UTC timestamp literal. */
  timestamp(at: Date): string;
}

export function stringLiteral(s: string): string {
  // NUL ends a string in both engines' C paths: refused rather than truncated.
  if (s.includes('\0')) throw new LakeSqlUnsupported('a NUL character in a string');
  return `'${s.replaceAll("'", "''")}'`;
}

export const identifier = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new LakeSqlUnsupported(`the column name ${name}`);
  return `"${name}"`;
};

const timestampText = (at: Date) => at.toISOString().replace('T', ' ').replace('Z', '');

/** IANA names only (the project's setting is validated; this keeps the printer safe on its own). */
function zone(tz: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(tz)) throw new LakeSqlUnsupported(`the time zone ${tz}`);
  return stringLiteral(tz);
}

export const DUCKDB: Dialect = {
  name: 'duckdb',
  // JSON Pointer: any key, `~` and `/` escaped (no JSONPath quoting rules to get wrong).
  jsonText: (key) =>
    `json_extract_string("properties", ${stringLiteral(`/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`)})`,
  localTime: (column, tz) => `timezone(${zone(tz)}, timezone('UTC', ${column}))`,
  truncate: (unit, local, weekStart) =>
    unit === 'week' && weekStart === 0
      ? `(date_trunc('week', ${local} + INTERVAL 1 DAY) - INTERVAL 1 DAY)`
      : `date_trunc('${unit}', ${local})`,
  toFloat: (text) => `TRY_CAST(trim(${text}) AS DOUBLE)`,
  regex: (text, pattern) => `regexp_matches(${text}, ${pattern})`,
  ilike: (text, pattern) => `(${text} ILIKE ${pattern})`,
  timestamp: (at) => `TIMESTAMP '${timestampText(at)}'`,
};

export const ATHENA: Dialect = {
  name: 'athena',
  jsonText: (key) => {
    // Trino's JSONPath has no escape inside a quoted key: such keys are refused, not mangled.
    if (/["\\]/.test(key)) throw new LakeSqlUnsupported(`the property name ${key}`);
    return `json_extract_scalar("properties", ${stringLiteral(`$["${key}"]`)})`;
  },
  localTime: (column, tz) => `at_timezone(with_timezone(${column}, 'UTC'), ${zone(tz)})`,
  truncate: (unit, local, weekStart) => {
    // date_trunc on a zoned timestamp truncates in its zone; the cast keeps the local wall time.
    const trunc =
      unit === 'week' && weekStart === 0
        ? `date_add('day', -1, date_trunc('week', date_add('day', 1, ${local})))`
        : `date_trunc('${unit}', ${local})`;
    return `CAST(${trunc} AS timestamp)`;
  },
  toFloat: (text) => `try_cast(trim(${text}) AS double)`,
  regex: (text, pattern) => `regexp_like(${text}, ${pattern})`,
  ilike: (text, pattern) => `(lower(${text}) LIKE lower(${pattern}))`,
  timestamp: (at) => `TIMESTAMP '${timestampText(at)}'`,
};
