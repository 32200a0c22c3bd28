import type { Expr } from '../../hogql/ast.ts';
import { offsetAt } from '../../trends/tz.ts';

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

/** The lake's JSON text columns: the event's other properties, and its person's properties when the day was written. */
export type JsonColumn = 'properties' | 'person_properties';

export interface Dialect {
  name: 'athena' | 'duckdb';
  /** The text of a JSON property of `properties` (null when absent or JSON null). */
  jsonText(key: string, column?: JsonColumn): string;
  /** The JSON text of a property of `properties` as stored (`true`, `"true"`, `1`; null when absent). */
  jsonRaw(key: string, column?: JsonColumn): string;
  /**
   * A UTC instant as wall-clock time in `tz` (a naive timestamp). With `from` and `to`, only for
   * instants in [from, to] (the event's own timestamp over the days read); without, for any.
   */
  localTime(column: string, tz: string, from?: Date, to?: Date): string;
  /** The start of `local`'s bucket (naive, local); weeks start on `weekStart` (0 Sunday, 1 Monday). */
  truncate(unit: 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year', local: string, weekStart: 0 | 1): string;
  /** The bucket of a UTC day partition's rows (`day`: its 'YYYY-MM-DD' column), as truncate gives it. */
  dayBucket(unit: 'day' | 'week' | 'month', day: string, weekStart: 0 | 1): string;
  /** PostHog's toFloat64OrNull of a text value. */
  toFloat(text: string): string;
  /**
   * A property's text as the trend engine reads it as a number (shared/trends/properties.ts
   * toNumber): the whole text, less JavaScript's trim() spaces, in plain decimal notation and finite;
   * else NULL. (The engines' casts alone also take `inf`, DuckDB's `1_000`, Java's `5d` and its
   * trim of control characters, and overflow to Infinity.)
   */
  toNumber(text: string): string;
  /** A RE2 match (both engines use RE2: DuckDB's regexp_matches, Trino's regexp_like). */
  regex(text: string, pattern: string): string;
  /** A case-insensitive LIKE. */
  ilike(text: string, pattern: string): string;
  /**
   * `text IN (values)` for a text column and text literals (none NULL), with IN's NULL: NULL when the
   * text is NULL, else true or false.
   */
  inTexts(text: string, values: string[]): string;
  /** A naive UTC timestamp literal. */
  timestamp(at: Date): string;
  /** A statement printer's own nodes (aggregates, time functions: select.ts), tried before expr.ts's; undefined to fall through. */
  extend?: (e: Expr) => string | undefined;
}

/**
 * Characters a string literal never carries as themselves: the C0 and C1 controls and DEL (a line
 * break ends a `--` comment, NUL ends a C string), the Unicode line and paragraph separators, the
 * bidirectional controls and the BOM (text a reader of the SQL would not see as it runs).
 */
function spelledOut(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x2028 && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0xfeff
  );
}

/**
 * A text as one SQL value, the same in both engines: quoted, quotes doubled, and each character of
 * spelledOut as chr(n) joined with `||` (DuckDB and Trino both have chr and ||; neither reads a
 * backslash in a quoted string). No character of the input then reaches the SQL text as a line break
 * or a control, so nothing in it can end a comment or a statement. A lone surrogate has no UTF-8
 * form: refused rather than replaced.
 */
export function stringLiteral(s: string): string {
  const parts: string[] = [];
  let run = '';
  for (const c of s) {
    const code = c.codePointAt(0) as number;
    if (code >= 0xd800 && code <= 0xdfff) throw new LakeSqlUnsupported('a lone surrogate in a string');
    if (!spelledOut(code)) {
      run += c;
      continue;
    }
    if (run) parts.push(`'${run.replaceAll("'", "''")}'`);
    run = '';
    parts.push(`chr(${code})`);
  }
  if (run || !parts.length) parts.push(`'${run.replaceAll("'", "''")}'`);
  return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' || ')})`;
}

/** A number as SQL: never starting with `-` (a negative one in parentheses), so no `-` printed before it makes `--`. */
export function numberLiteral(v: number): string {
  if (!Number.isFinite(v)) throw new LakeSqlUnsupported(`the number ${v}`);
  // A non-integer as a double: Trino reads 1.5 as a DECIMAL.
  if (!Number.isInteger(v) || Math.abs(v) >= 2 ** 53) return `CAST(${String(v)} AS double)`;
  return v < 0 ? `(${String(v)})` : String(v);
}

export const identifier = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new LakeSqlUnsupported(`the column name ${name}`);
  return `"${name}"`;
};

/**
 * The printers' last check of their own text, before any engine sees it: one statement, no comment,
 * no control character but the line breaks between clauses, no prefixed or dollar-quoted string.
 * Quoted text is skipped as both engines read it (`''` and `""` inside, no backslash escapes). Input
 * never gets here unquoted (stringLiteral, identifier, numberLiteral), so a failure is a printer bug:
 * an error, never a query sent.
 */
export function oneStatement(sql: string): string {
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i] as string;
    const code = c.charCodeAt(0);
    if ((code < 0x20 && c !== '\n') || code === 0x7f) throw new Error(`lake SQL printer: a control character at ${i}`);
    if (quote) {
      if (c !== quote) continue;
      if (sql[i + 1] === quote) i++;
      else quote = null;
      continue;
    }
    if (c === "'" || c === '"') {
      // A prefix would change how the quote reads (DuckDB's E'\n' escapes, Trino's U&'\0000', X'00' bytes).
      if (c === "'" && /[\w&$]/.test(sql[i - 1] ?? ' ')) throw new Error(`lake SQL printer: a prefixed string at ${i}`);
      quote = c;
    } else if (c === ';' || c === '$' || (c === '-' && sql[i + 1] === '-') || (c === '/' && sql[i + 1] === '*'))
      // `$` opens DuckDB's dollar-quoted strings and names its parameters.
      throw new Error(`lake SQL printer: ${c}${c === '-' || c === '/' ? sql[i + 1] : ''} outside a literal at ${i}`);
  }
  if (quote) throw new Error('lake SQL printer: an unclosed quote');
  return sql;
}

const timestampText = (at: Date) => at.toISOString().replace('T', ' ').replace('Z', '');

/** IANA names only (the project's setting is validated; this keeps the printer safe on its own). */
export function zone(tz: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(tz)) throw new LakeSqlUnsupported(`the time zone ${tz}`);
  return stringLiteral(tz);
}

/**
 * The zone's UTC offsets over [from, to]: each until the instant the next one starts. Hourly probes
 * find a change, a binary search its minute (zones change offset on whole minutes).
 */
export function offsetSpans(tz: string, from: Date, to: Date): { offset: number; until: number | null }[] {
  const spans: { offset: number; until: number | null }[] = [];
  let current = offsetAt(from.getTime(), tz);
  const end = to.getTime();
  for (let t = from.getTime(); t < end; ) {
    const next = Math.min(t + 3_600_000, end);
    if (offsetAt(next, tz) !== current) {
      let [lo, hi] = [t, next];
      while (hi - lo > 60_000) {
        const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
        if (offsetAt(mid, tz) === current) lo = mid;
        else hi = mid;
      }
      spans.push({ offset: current, until: hi });
      current = offsetAt(hi, tz);
    }
    t = next;
  }
  spans.push({ offset: current, until: null });
  return spans;
}

/** properties.ts toNumber's decimal, unanchored, ASCII digit classes (RE2 and Trino's joni agree on it). */
const DECIMAL = '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?';

/**
 * What String.prototype.trim removes (ECMAScript's WhiteSpace and LineTerminator code points): as an
 * RE2 class for DuckDB, as chr() calls for Trino's trim (no control or invisible character in the SQL).
 */
const JS_SPACE_CODES = [
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
  0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
];
const JS_SPACE_CLASS = `[${JS_SPACE_CODES.map((c) => `\\x{${c.toString(16)}}`).join('')}]*`;
const JS_SPACE_CHARS = `(${JS_SPACE_CODES.map((c) => `chr(${c})`).join(' || ')})`;

/** The longest text HogQL reads as a number (convert.ts MAX_PARSED_TEXT). */
const MAX_PARSED_TEXT = 64;

/**
 * HogQL's toFloat of a text (convert.ts parseNumber): the text less JavaScript's trim() spaces, at most
 * 64 characters, a decimal (an overflowing exponent is an infinity), or `inf`/`+inf`/`infinity`,
 * `-inf`/`-infinity`, `nan` in any case; else NULL. A plain cast would also read `1_000` and longer texts.
 */
function parseNumberSql(
  bare: string,
  bareValue: string,
  trimmed: string,
  isDecimal: (t: string) => string,
  cast: (t: string) => string,
  words: { inf: string; nan: string },
): string {
  const lower = `lower(${trimmed})`;
  return (
    `(CASE WHEN ${bare} THEN ${bareValue} ` +
    `WHEN length(${trimmed}) BETWEEN 1 AND ${MAX_PARSED_TEXT} AND ${isDecimal(trimmed)} THEN ${cast(trimmed)} ` +
    `WHEN ${lower} IN ('inf', '+inf', 'infinity') THEN ${words.inf} ` +
    `WHEN ${lower} IN ('-inf', '-infinity') THEN -${words.inf} ` +
    `WHEN ${lower} = 'nan' THEN ${words.nan} END)`
  );
}

/** An infinity (an overflowing exponent) as NULL: the engine's toNumber keeps finite numbers only. */
const finite = (n: string, infinity: string) => `nullif(nullif(${n}, ${infinity}), -${infinity})`;

/** JSON Pointer: any key, `~` and `/` escaped (no JSONPath quoting rules to get wrong). */
const duckdbPointer = (key: string) => stringLiteral(`/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);

/** Trino's JSONPath has no escape inside a quoted key: such keys are refused, not mangled. */
function athenaPath(key: string): string {
  if (/["\\]/.test(key)) throw new LakeSqlUnsupported(`the property name ${key}`);
  return stringLiteral(`$["${key}"]`);
}

export const DUCKDB: Dialect = {
  name: 'duckdb',
  jsonText: (key, column = 'properties') => `json_extract_string(${identifier(column)}, ${duckdbPointer(key)})`,
  jsonRaw: (key, column = 'properties') =>
    `CAST(json_extract(${identifier(column)}, ${duckdbPointer(key)}) AS varchar)`,
  // The zone's offsets over the range as plain arithmetic: ICU's conversion per row costs more than the whole scan.
  localTime: (column, tz, from, to) => {
    // Any instant (a person's creation, shifted times): ICU's conversion, exact across every DST change.
    if (!from || !to) return `timezone(${zone(tz)}, timezone('UTC', ${column}))`;
    zone(tz);
    const shifted = (offset: number) => (offset ? `(${column} + INTERVAL '${offset / 1000} seconds')` : column);
    const spans = offsetSpans(tz, from, to);
    if (spans.length === 1) return shifted(spans[0]!.offset);
    const cases = spans.map((s) =>
      s.until === null
        ? `ELSE ${shifted(s.offset)}`
        : `WHEN ${column} < ${DUCKDB.timestamp(new Date(s.until))} THEN ${shifted(s.offset)}`,
    );
    return `(CASE ${cases.join(' ')} END)`;
  },
  truncate: (unit, local, weekStart) =>
    unit === 'week' && weekStart === 0
      ? `(date_trunc('week', ${local} + INTERVAL 1 DAY) - INTERVAL 1 DAY)`
      : `date_trunc('${unit}', ${local})`,
  dayBucket: (unit, day, weekStart) =>
    unit === 'day' ? `CAST(${day} AS TIMESTAMP)` : DUCKDB.truncate(unit, `CAST(${day} AS TIMESTAMP)`, weekStart),
  // HogQL's parseNumber (shared/hogql/convert.ts): the bare decimal first, then the trimmed text.
  toFloat: (text) => {
    const trimmed = `regexp_extract(${text}, '(?s)^${JS_SPACE_CLASS}(.*?)${JS_SPACE_CLASS}$', 1)`;
    return parseNumberSql(
      `(length(${text}) <= ${MAX_PARSED_TEXT} AND regexp_full_match(${text}, '${DECIMAL}'))`,
      `TRY_CAST(${text} AS DOUBLE)`,
      trimmed,
      (t) => `regexp_full_match(${t}, '${DECIMAL}')`,
      (t) => `TRY_CAST(${t} AS DOUBLE)`,
      { inf: "CAST('Infinity' AS DOUBLE)", nan: "CAST('NaN' AS DOUBLE)" },
    );
  },
  // The common case (a bare decimal) by one full match; only other texts pay for the trim, in RE2.
  toNumber: (text) =>
    finite(
      `(CASE WHEN regexp_full_match(${text}, '${DECIMAL}') THEN TRY_CAST(${text} AS DOUBLE) ` +
        `ELSE TRY_CAST(regexp_extract(${text}, '^${JS_SPACE_CLASS}(${DECIMAL})${JS_SPACE_CLASS}$', 1) AS DOUBLE) END)`,
      "CAST('Infinity' AS DOUBLE)",
    ),
  // DuckDB keeps IN as a row-by-row filter above the Parquet scan; list_contains of a dictionary-encoded
  // column is evaluated once per dictionary entry (2-3x less CPU for a filtered trend). NULL in, NULL out, as IN.
  inTexts: (text, values) => `list_contains([${values.join(', ')}], ${text})`,
  regex: (text, pattern) => `regexp_matches(${text}, ${pattern})`,
  ilike: (text, pattern) => `(${text} ILIKE ${pattern})`,
  timestamp: (at) => `TIMESTAMP '${timestampText(at)}'`,
};

export const ATHENA: Dialect = {
  name: 'athena',
  jsonText: (key, column = 'properties') => `json_extract_scalar(${identifier(column)}, ${athenaPath(key)})`,
  jsonRaw: (key, column = 'properties') => `json_format(json_extract(${identifier(column)}, ${athenaPath(key)}))`,
  localTime: (column, tz) => `at_timezone(with_timezone(${column}, 'UTC'), ${zone(tz)})`,
  truncate: (unit, local, weekStart) => {
    // date_trunc on a zoned timestamp truncates in its zone; the cast keeps the local wall time.
    const trunc =
      unit === 'week' && weekStart === 0
        ? `date_add('day', -1, date_trunc('week', date_add('day', 1, ${local})))`
        : `date_trunc('${unit}', ${local})`;
    return `CAST(${trunc} AS timestamp)`;
  },
  dayBucket: (unit, day, weekStart) =>
    unit === 'day'
      ? `CAST(CAST(${day} AS date) AS timestamp)`
      : ATHENA.truncate(unit, `CAST(${day} AS date)`, weekStart),
  toFloat: (text) => {
    const whole = (t: string) => `regexp_extract(${t}, '${DECIMAL}') = ${t}`;
    return parseNumberSql(
      `(length(${text}) <= ${MAX_PARSED_TEXT} AND ${whole(text)})`,
      `try_cast(${text} AS double)`,
      `trim(${text}, ${JS_SPACE_CHARS})`,
      whole,
      (t) => `try_cast(${t} AS double)`,
      { inf: 'infinity()', nan: 'nan()' },
    );
  },
  // A whole-text match without anchors (the first match equals the text): joni's `^`/`$` are line
  // anchors in some syntaxes. The bare decimal first; the trim only for other texts.
  toNumber: (text) => {
    const trimmed = `trim(${text}, ${JS_SPACE_CHARS})`;
    const whole = (t: string) => `regexp_extract(${t}, '${DECIMAL}') = ${t}`;
    return finite(
      `(CASE WHEN ${whole(text)} THEN try_cast(${text} AS double) WHEN ${whole(trimmed)} THEN try_cast(${trimmed} AS double) END)`,
      'infinity()',
    );
  },
  inTexts: (text, values) => `(${text} IN (${values.join(', ')}))`,
  regex: (text, pattern) => `regexp_like(${text}, ${pattern})`,
  ilike: (text, pattern) => `(lower(${text}) LIKE lower(${pattern}))`,
  timestamp: (at) => `TIMESTAMP '${timestampText(at)}'`,
};
