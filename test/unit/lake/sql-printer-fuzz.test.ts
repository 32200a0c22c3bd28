import { DuckDBInstance, LIST, listValue, VARCHAR } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { Expr } from '#shared/hogql/ast.ts';
import { PROPERTY_COLUMNS } from '#shared/lake/rows.ts';
import { DUCKDB, LakeSqlUnsupported, numberLiteral, oneStatement, stringLiteral } from '#shared/lake/sql/dialect.ts';
import { printLakeExpr } from '#shared/lake/sql/expr.ts';
import {
  drawnQuery,
  FUZZ_FILES,
  FUZZ_PROJECT,
  FUZZ_TABLE,
  type PrintedQuery,
  printedQuery,
} from '../../support/lake-sql-fuzz.ts';
import { trinoStatementFaults } from '../../support/trino-grammar.ts';

/**
 * The printer wall of issue 35, proven by the engine's own parser rather than by our eyes: HogQLQuery
 * statements drawn from the AST grammar (test/support/lake-sql-fuzz.ts), each printed for DuckDB and
 * for Athena through the service's path, and each printed text parsed by DuckDB itself
 * (`json_serialize_sql` on a plain in-memory connection: the parser only, nothing bound or run).
 * Every parse must be one SELECT whose only relation is the project's own source, whose functions are
 * the printer's own, whose string constants hold every text the user wrote byte for byte (chr(n)
 * pieces joined back), and whose top-level WHERE conjunction holds `project_id = <p>`.
 *
 * DuckDB's parser also reads the Athena text: the printer's Athena SQL is in the syntax the two
 * share (Trino's functions are only names to a parser). Where they differ in meaning (ATHENA_FUNCTIONS)
 * the names are listed, not run.
 */
const SEED = Number(process.env.LAKE_SQL_FUZZ_SEED ?? 35);
const QUERIES = Number(process.env.LAKE_SQL_FUZZ_QUERIES ?? 100_000);
/** Statements per json_serialize_sql call (one call per statement costs ~7x more per statement). */
const BATCH = 1_000;

/**
 * Every function the DuckDB printer writes (expr.ts, select.ts, dialect.ts), as DuckDB's parser names
 * them: operators as functions (`~~` LIKE, `~~*` ILIKE), `INTERVAL (n) DAY` as to_days(trunc(n)).
 */
const DUCKDB_FUNCTIONS = new Set([
  ...['+', '-', '*', '/', '||', '~~', '~~*'],
  ...['lower', 'upper', 'length', 'coalesce', 'concat', 'chr', 'strpos', 'nullif', 'list_value', 'list_contains'],
  ...['count', 'count_star', 'sum', 'avg', 'min', 'max'],
  ...['json_extract_string', 'json_extract', 'json_merge_patch', 'json_object'],
  ...['regexp_matches', 'regexp_full_match', 'regexp_extract'],
  ...['timezone', 'date_trunc', 'date_diff', 'trunc'],
  ...['to_seconds', 'to_minutes', 'to_hours', 'to_days', 'to_weeks', 'to_months', 'to_quarters', 'to_years'],
]);

/** Every function the Athena printer writes: Trino's names, read by DuckDB's parser as names only (a lambda's parameters as row). */
const ATHENA_FUNCTIONS = new Set([
  ...['+', '-', '*', '/', '||', '~~'],
  ...['lower', 'upper', 'length', 'coalesce', 'concat', 'chr', 'strpos', 'nullif', 'trim', 'infinity', 'nan'],
  ...['count', 'count_star', 'sum', 'avg', 'min', 'max'],
  ...['json_extract_scalar', 'json_extract', 'json_format', 'json_parse', 'map_concat', 'map_filter', 'map', 'row'],
  ...['regexp_like', 'regexp_extract'],
  ...['at_timezone', 'with_timezone', 'date_trunc', 'date_add', 'date_diff'],
]);

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null;

/** Every object of a parse tree (a loop, not a generator: this walk runs over 200,000 trees). */
function nodes(root: unknown): Node[] {
  const out: Node[] = [];
  const stack = [root];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (isNode(v)) {
      out.push(v);
      for (const key in v) {
        const x = v[key];
        if (typeof x === 'object' && x !== null) stack.push(x);
      }
    }
  }
  return out;
}

/** A text constant as the engine will hold it: a VARCHAR constant, chr(n), or `||` of those; else undefined. */
function textOf(n: Node): string | undefined {
  if (n.class === 'CONSTANT') {
    const value = n.value as { type: { id: string }; is_null: boolean; value?: string };
    // An empty text's value is left out of the parse (skip_empty).
    return value.type.id === 'VARCHAR' && !value.is_null ? (value.value ?? '') : undefined;
  }
  if (n.class !== 'FUNCTION') return undefined;
  const children = (n.children ?? []) as Node[];
  if (n.function_name === 'chr' && children.length === 1) {
    const arg = children[0] as Node;
    const value = arg.value as { value: unknown } | undefined;
    return arg.class === 'CONSTANT' && typeof value?.value === 'number' ? String.fromCodePoint(value.value) : undefined;
  }
  if (n.function_name !== '||') return undefined;
  let text = '';
  for (const child of children) {
    const part = textOf(child);
    if (part === undefined) return undefined;
    text += part;
  }
  return text;
}

/** The conjuncts of an AND tree (a nested AND is the same conjunction). */
function conjuncts(n: Node | null): Node[] {
  if (!n) return [];
  if (n.type !== 'CONJUNCTION_AND') return [n];
  return ((n.children ?? []) as Node[]).flatMap(conjuncts);
}

const isColumn = (n: Node, name: string) =>
  n.class === 'COLUMN_REF' && JSON.stringify(n.column_names) === JSON.stringify([name]);
const constantValue = (n: Node) => (n.class === 'CONSTANT' ? (n.value as { value: unknown }).value : undefined);

/** A broken rule: the message names it (plain checks: 200,000 parses through expect() would cost more than the parses). */
function fail(rule: string, detail: unknown = ''): never {
  throw new Error(`${rule} ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`.trim());
}

/** The project's own source: read_parquet of exactly the given files (DuckDB), or the lake's Glue table (Athena). */
function checkRelation(from: Node, dialect: 'duckdb' | 'athena'): void {
  if (dialect === 'athena') {
    if (from.type !== 'BASE_TABLE' || from.schema_name !== FUZZ_TABLE.database || from.table_name !== FUZZ_TABLE.table)
      fail('the relation is not the lake table:', from);
    return;
  }
  const fn = from.function as Node | undefined;
  if (from.type !== 'TABLE_FUNCTION' || fn?.function_name !== 'read_parquet')
    fail('the relation is not read_parquet:', from);
  const [files, ...named] = (fn.children ?? []) as Node[];
  const listed = files?.function_name === 'list_value' ? (files.children as Node[]).map(textOf) : [];
  if (JSON.stringify(listed) !== JSON.stringify(FUZZ_FILES)) fail('read_parquet reads other files:', listed);
  // The named parameters (hive_partitioning = true, ...): a name and constants, nothing read.
  for (const param of named)
    if (
      param.type !== 'COMPARE_EQUAL' ||
      (param.left as Node).class !== 'COLUMN_REF' ||
      [...nodes(param.right)].some((n) => n.class === 'FUNCTION' && n.function_name !== 'struct_pack')
    )
      fail('a read_parquet parameter that is not a constant:', param);
}

/** The DuckDB pointer (expr.ts) or Trino JSONPath (dialect.ts) a property key is read with, or null where a column of its own holds it. */
function keyPath(key: string, dialect: 'duckdb' | 'athena'): string | null {
  const [person, name] = key.startsWith('person:') ? [true, key.slice(7)] : [false, key];
  if (!person && Object.hasOwn(PROPERTY_COLUMNS, name)) return null;
  return dialect === 'duckdb' ? `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}` : `$["${name}"]`;
}

/**
 * The checks of one printed text, given DuckDB's parse of it: one SELECT, the project's source the
 * only relation, the printer's functions only, every text of the user whole, the project predicate
 * in the top-level WHERE conjunction.
 */
function checkParse(json: string, q: PrintedQuery, dialect: 'duckdb' | 'athena'): void {
  const parsed = JSON.parse(json) as { error: boolean; error_message?: string; statements: { node: Node }[] };
  if (parsed.error) fail('DuckDB cannot parse it:', parsed.error_message);
  if (parsed.statements.length !== 1) fail('statements:', parsed.statements.length);
  const root = parsed.statements[0]!.node;
  if (root.type !== 'SELECT_NODE') fail('not a SELECT:', root.type);
  // (Empty lists and nulls are left out of the parse: skip_empty, skip_null.)
  if ((root.cte_map as { map?: unknown[] } | undefined)?.map?.length) fail('a WITH clause');
  checkRelation(root.from_table as Node, dialect);

  const allowed = dialect === 'duckdb' ? DUCKDB_FUNCTIONS : ATHENA_FUNCTIONS;
  const texts = new Set<string>();
  const rest = { ...root, from_table: null };
  for (const n of nodes(rest)) {
    // No query inside the query, no other relation, no set operation.
    if (n !== rest && 'from_table' in n) fail('a second SELECT');
    if (n.class === 'SUBQUERY' || n.type === 'SET_OPERATION_NODE') fail('a subquery or set operation');
    if (n.class === 'FUNCTION' && !allowed.has(n.function_name as string))
      fail('a function the printer does not write:', n.function_name);
    // Texts: constants, chr(n), and whole `||` chains of those.
    if (n.class === 'CONSTANT' || n.function_name === '||' || n.function_name === 'chr') {
      const text = textOf(n);
      if (text !== undefined) texts.add(text);
    }
  }
  for (const text of q.texts) if (!texts.has(text)) fail("a user's text is not one constant:", JSON.stringify(text));
  for (const key of q.keys) {
    const path = keyPath(key, dialect);
    if (path !== null && !texts.has(path)) fail('a property key is not one constant:', path);
  }
  const project = conjuncts(root.where_clause as Node | null).some(
    (c) =>
      c.type === 'COMPARE_EQUAL' &&
      isColumn(c.left as Node, 'project_id') &&
      constantValue(c.right as Node) === FUZZ_PROJECT,
  );
  if (!project) fail('project_id = <p> is not in the top-level WHERE conjunction');
}

/**
 * Every how-many-th Athena text also goes through Trino's own grammar and the statement checks read
 * from its tree (test/support/trino-grammar.ts). The ANTLR parser in JavaScript costs milliseconds a
 * statement (docs/reliability.md), so a fixed sample of each batch does: ~300 statements of a 100,000 run.
 */
const TRINO_SAMPLE_EVERY = 250;
let trinoChecked = 0;

/**
 * The Athena text's checks: DuckDB's parse of it, as for the DuckDB text (the syntax the printer
 * writes for Athena is one both parsers read), and for a sample Trino's own grammar (issue 35:
 * dt-sql-parser's TrinoSQL): one statement, no comment token, no control character in a literal, the
 * Glue table the only relation, the project predicate a top-level conjunct.
 */
function checkAthenaText(json: string, q: PrintedQuery, index: number): void {
  checkParse(json, q, 'athena');
  if (index % TRINO_SAMPLE_EVERY !== 0) return;
  expect(
    trinoStatementFaults(q.athenaSql!, {
      table: `"${FUZZ_TABLE.database}"."${FUZZ_TABLE.table}"`,
      projectId: FUZZ_PROJECT,
    }),
  ).toEqual([]);
  trinoChecked += 1;
}

let duck: Awaited<ReturnType<DuckDBInstance['connect']>>;
beforeAll(async () => {
  // One thread: the parses are a serial stream (measured: less CPU per parse than with two threads).
  duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
});
afterAll(() => duck?.closeSync());

/** DuckDB's parse of each text, in order (json_serialize_sql: the parser only, nothing bound or run). */
async function parseAll(texts: string[]): Promise<string[]> {
  const reader = await duck.runAndReadAll(
    'SELECT json_serialize_sql(s, skip_null := true, skip_empty := true) FROM unnest($1) WITH ORDINALITY AS t(s, i) ORDER BY i',
    [listValue(texts)],
    [LIST(VARCHAR)],
  );
  return reader.getRows().map((row) => row[0] as string);
}

/** One batch: the drawn statements printed, those each engine got, and DuckDB's parses of their texts (DuckDB's first). */
interface Batch {
  seed: number;
  duckdb: PrintedQuery[];
  athena: PrintedQuery[];
  refused: number;
}

/** Draws and prints one batch; a refusal is the service's 400 (a HogQL rule, or what a lake engine cannot print), never another error. */
function printBatch(seed: number, count: number): Batch {
  const printed = fc.sample(drawnQuery, { numRuns: count, seed }).map(printedQuery);
  for (const q of printed)
    for (const error of q.refusals)
      if (!(error instanceof ValidationError)) fail(`seed ${seed}: ${q.hogql}\n`, String(error.stack));
  return {
    seed,
    duckdb: printed.filter((q) => q.duckdbSql !== null),
    athena: printed.filter((q) => q.athenaSql !== null),
    refused: printed.filter((q) => q.duckdbSql === null && q.athenaSql === null).length,
  };
}

const parseBatch = (b: Batch) => parseAll([...b.duckdb.map((q) => q.duckdbSql!), ...b.athena.map((q) => q.athenaSql!)]);

function checkBatch(b: Batch, parses: string[]): void {
  const named = (q: PrintedQuery, sql: string | null, check: () => void) => {
    try {
      check();
    } catch (error) {
      throw new Error(`batch seed ${b.seed} (run seed LAKE_SQL_FUZZ_SEED=${SEED}): ${q.hogql}\n${sql}\n${error}`);
    }
  };
  for (const [i, q] of b.duckdb.entries()) named(q, q.duckdbSql, () => checkParse(parses[i]!, q, 'duckdb'));
  for (const [i, q] of b.athena.entries())
    named(q, q.athenaSql, () => checkAthenaText(parses[b.duckdb.length + i]!, q, i));
}

describe('the printer wall, proven by DuckDB’s parser (issue 35)', () => {
  it(`${QUERIES.toLocaleString('en-US')} drawn HogQLQuery statements: one SELECT over the project's own source, every text whole (seed ${SEED})`, async () => {
    const started = Date.now();
    const cpuStart = process.cpuUsage();
    const outcomes = { duckdb: 0, athena: 0, refused: 0 };
    const seeds = Array.from({ length: Math.ceil(QUERIES / BATCH) }, (_, k) => SEED + k * BATCH);
    const batchOf = (k: number) => printBatch(seeds[k]!, Math.min(BATCH, QUERIES - k * BATCH));
    // A pipeline: DuckDB parses one batch on its own thread while this one prints the next and checks the last.
    let current = batchOf(0);
    let parsing = parseBatch(current);
    for (let k = 0; k < seeds.length; k++) {
      const next = k + 1 < seeds.length ? batchOf(k + 1) : null;
      const parses = await parsing;
      if (next) parsing = parseBatch(next);
      checkBatch(current, parses);
      outcomes.duckdb += current.duckdb.length;
      outcomes.athena += current.athena.length;
      outcomes.refused += current.refused;
      if (next) current = next;
    }
    const cpu = process.cpuUsage(cpuStart);
    console.info(
      `lake SQL fuzz, seed ${SEED}: ${JSON.stringify({ ...outcomes, trinoChecked })}; ${Date.now() - started} ms elapsed, ${Math.round((cpu.user + cpu.system) / 1000)} ms CPU (this process and DuckDB's threads)`,
    );
    // Not vacuous: most statements print for both engines (refusals: `%`, non-constant intervals, ORDER BY a number out of range).
    expect(outcomes.duckdb).toBeGreaterThan(QUERIES * 0.75);
    expect(outcomes.athena).toBeGreaterThan(QUERIES * 0.7);
    expect(trinoChecked).toBeGreaterThanOrEqual(Math.floor((outcomes.athena / TRINO_SAMPLE_EVERY) * 0.9));
    // ~110 s of CPU (DuckDB's parse on its own thread, overlapped with printing and checking); the timeout
    // leaves room for a machine shared with other runs (10 minutes at a load of 25 on 2 cores).
  }, 900_000);
});

describe('the literal printers, by hand', () => {
  it('a text: quoted, quotes doubled, controls, line breaks and invisible characters as chr(n) joined with ||', () => {
    expect(stringLiteral('')).toBe("''");
    expect(stringLiteral("it's")).toBe("'it''s'");
    expect(stringLiteral('a\nb')).toBe("('a' || chr(10) || 'b')");
    expect(stringLiteral('\0')).toBe('chr(0)');
    expect(stringLiteral("x\r\n--'")).toBe("('x' || chr(13) || chr(10) || '--''')");
    expect(stringLiteral('\u2028\u202e\ufeff\x85')).toBe('(chr(8232) || chr(8238) || chr(65279) || chr(133))');
    // Backslashes, dollar quotes, comment markers and unicode stay as they are: inside the quotes both engines read them as text.
    expect(stringLiteral("\\' $$ /* é🙂")).toBe("'\\'' $$ /* é🙂'");
    expect(() => stringLiteral('\ud800')).toThrow(LakeSqlUnsupported);
  });

  it('DuckDB reads every printed text back byte for byte (every code point below U+3000, and the attacks)', async () => {
    const texts = [
      ...Array.from({ length: 0x3000 / 64 }, (_, i) =>
        String.fromCodePoint(...Array.from({ length: 64 }, (_, j) => i * 64 + j).filter((c) => c < 0xd800)),
      ),
      "''",
      "'; SELECT 1; --",
      '\n) UNION ALL SELECT 1 --',
      '🙂\u{10ffff}',
    ];
    const list = texts.map(stringLiteral).join(', ');
    const rows = (await duck.runAndReadAll(`SELECT unnest([${list}]) AS t`)).getRows();
    expect(rows.map((r) => r[0])).toEqual(texts);
  });

  it('a number never starts with `-`: negative ones in parentheses, non-integers and big ones as doubles', () => {
    expect(numberLiteral(7)).toBe('7');
    expect(numberLiteral(-7)).toBe('(-7)');
    expect(numberLiteral(-1.5)).toBe('CAST(-1.5 AS double)');
    expect(numberLiteral(2 ** 53)).toBe('CAST(9007199254740992 AS double)');
    expect(() => numberLiteral(Number.NaN)).toThrow(LakeSqlUnsupported);
    expect(() => numberLiteral(-Infinity)).toThrow(LakeSqlUnsupported);
  });

  it('a negation is (-(x)): `--` never appears, whatever is negated', () => {
    const neg = (expr: Expr): Expr => ({ kind: 'negate', expr });
    const n = (value: number): Expr => ({ kind: 'constant', value });
    expect(printLakeExpr(neg(n(-7)), DUCKDB)).toBe('(-((-7)))');
    expect(printLakeExpr(neg(neg({ kind: 'field', chain: ['properties', 'n'] })), DUCKDB)).toBe(
      `(-((-(json_extract_string("properties", '/n')))))`,
    );
    expect(printLakeExpr({ kind: 'arithmetic', op: '-', left: n(1), right: neg(n(-1)) }, DUCKDB)).toBe(
      '(1 - (-((-1))))',
    );
  });

  it("the printers' last check: one statement, no comment, no control character but the line breaks, plain quotes only", () => {
    expect(oneStatement(`SELECT ';', '--', '/*', '$$', "a""b", 'x''y', TIMESTAMP '2024-01-01'\nFROM t`)).toContain(
      'FROM t',
    );
    const broken = [
      'SELECT 1; SELECT 2',
      'SELECT 1 -- x',
      'SELECT (--1)',
      'SELECT /* x */ 1',
      "SELECT 'a",
      'SELECT 1\r',
      // Prefixed and dollar-quoted strings, parameters: read otherwise than a plain quote by one engine or the other.
      "SELECT E'\\n'",
      "SELECT U&'\\0000'",
      "SELECT X'00'",
      'SELECT $$a$$',
      'SELECT $1',
    ];
    for (const sql of [...broken, "SELECT 'a\0'"]) expect(() => oneStatement(sql), sql).toThrow(/lake SQL printer/);
  });
});
