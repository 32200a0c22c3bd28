/**
 * HogQLQuery statements drawn from a typed grammar of the HogQL AST (shared/hogql/ast.ts), for the
 * printer-wall fuzz (test/unit/lake/sql-printer-fuzz.test.ts) and any check of the printed SQL:
 * every node kind the lake printers accept (fields, person fields, property keys, constants of every
 * type, the calls expr.ts and select.ts print, NOT/AND/OR, every comparison, arithmetic, negation
 * chains, BETWEEN, IN lists, intervals, aggregates), output aliases read back in WHERE, HAVING and
 * ORDER BY, and hostile texts (every control and quote character, comment and statement markers,
 * unicode) in every place a user's text reaches the SQL. Each statement's HogQL is the AST printed by
 * printHogQL; `printedQuery` turns it into the DuckDB and Athena SQL through the service's own path
 * (parse, fold the clock, print).
 */
import fc from 'fast-check';
import { foldNow, printStatement } from '#shared/domain/query/hogql.ts';
import type { CompareOp, Expr } from '#shared/hogql/ast.ts';
import { printHogQL } from '#shared/hogql/print.ts';
import { parseSelectStatement, type SelectStatement } from '#shared/hogql/select.ts';
import { PROPERTY_COLUMNS } from '#shared/lake/rows.ts';
import type { LakeSource } from '#shared/lake/sql/trends.ts';

export const FUZZ_PROJECT = 7;
export const FUZZ_FILES = [
  `/lake/events/project_id=${FUZZ_PROJECT}/day=2024-03-02/part-0.parquet`,
  `/lake/events/project_id=${FUZZ_PROJECT}/day=2024-03-03/part-0.parquet`,
];
export const FUZZ_TABLE = { database: 'stage_lake', table: 'events' };
const DUCKDB_SOURCE: LakeSource = { dialect: 'duckdb', files: FUZZ_FILES };
const ATHENA_SOURCE: LakeSource = { dialect: 'athena', ...FUZZ_TABLE };
const NOW = Date.parse('2024-03-16T12:00:00Z');

/** One drawn statement: its HogQL text, the texts the user wrote (each must reach the SQL whole) and the property keys read. */
export interface DrawnQuery {
  hogql: string;
  texts: string[];
  keys: string[];
  timezone: string;
}

export interface PrintedQuery extends DrawnQuery {
  /** Each engine's SQL, or null where the service refuses the statement for it (`refusals` says why). */
  duckdbSql: string | null;
  athenaSql: string | null;
  refusals: Error[];
}

// ---------------------------------------------------------------------------------------------
// Texts

/** Characters that have ended a literal, a comment or a statement in some SQL dialect, or that no reader sees. */
const SPECIALS = [
  ...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)),
  '\x7f',
  '\x80',
  '\x85',
  '\x9f',
  '\u2028',
  '\u2029',
  '\u200e',
  '\u202e',
  '\u2066',
  '\ufeff',
  "'",
  "''",
  '"',
  '`',
  '\\',
  "\\'",
  '--',
  '/*',
  '*/',
  ';',
  '$$',
  '$tag$',
  "E'",
  "U&'",
  '?',
  '$1',
  '{',
  '}',
  '%',
  '_',
  '~',
  '/',
  '[',
  ']',
  'é',
  '🙂',
  '中文',
  ' ',
  ') UNION ALL SELECT 1 --',
  "read_text('/etc/passwd')",
  'project_id = 8',
];

/** Any Unicode scalar value (fc.string's 'binary' unit builds a table of all of them on first use: seconds). */
const codePoint = fc.integer({ min: 0, max: 0x10ffff - 0x800 }).map((n) => (n >= 0xd800 ? n + 0x800 : n));

/** A hostile text: specials and plain characters mixed, or any unicode. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.array(fc.constantFrom(...SPECIALS), { maxLength: 8 }).map((p) => p.join('')) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom(...SPECIALS), fc.string({ maxLength: 3 })), { maxLength: 6 })
      .map((p) => p.join('')),
  },
  { weight: 1, arbitrary: fc.array(codePoint, { maxLength: 8 }).map((cs) => String.fromCodePoint(...cs)) },
);

/** Property keys: plain, the ones with a column of their own, and hostile ones. */
const propertyKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('plan', 'amount', '$current_url', ...Object.keys(PROPERTY_COLUMNS).slice(0, 3)),
  hostileText.filter((k) => k.length > 0),
);

/** Date texts a time field is compared with (read as instants by the printer: not the user's literal in the SQL). */
const dateText = fc.constantFrom(
  '2024-03-02',
  '2024-03-02 10:00:00',
  '2024-03-03T00:00:00Z',
  '2024-03-01T23:00:00+02:00',
);

// ---------------------------------------------------------------------------------------------
// The typed grammar

const C = (value: null | boolean | number | string): Expr => ({ kind: 'constant', value });
const F = (...chain: string[]): Expr => ({ kind: 'field', chain });
const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args });

interface Drawn<T = Expr> {
  expr: T;
  texts: string[];
  keys: string[];
}
const leaf = (expr: Expr, texts: string[] = [], keys: string[] = []): Drawn => ({ expr, texts, keys });
const join = (parts: Drawn[], build: (exprs: Expr[]) => Expr): Drawn => ({
  expr: build(parts.map((p) => p.expr)),
  texts: parts.flatMap((p) => p.texts),
  keys: parts.flatMap((p) => p.keys),
});

const TEXT_FIELDS = [
  'event',
  'distinct_id',
  'uuid',
  'person_id',
  '$session_id',
  '$group_0',
  '$group_4',
  'elements_chain',
  '$window_id',
].map((name) => F(name));
const TIME_FIELDS = [F('timestamp'), F('created_at'), F('person', 'created_at')];

const integer = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.constantFrom(-7, -1, 0, 1, 2 ** 53, -(2 ** 53), 2 ** 31, -(2 ** 63)),
);
const number = fc.oneof(
  { weight: 4, arbitrary: integer },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.constantFrom(-0, 1.5, -1.5, 1e-7, -1e21, 1e308) },
);

const text = (t: string) => leaf(C(t), [t]);
const keyField = fc
  .tuple(fc.boolean(), propertyKey)
  .map(([person, key]) =>
    leaf(person ? F('person', 'properties', key) : F('properties', key), [], [person ? `person:${key}` : key]),
  );

const COMPARE: CompareOp[] = ['eq', 'notEq', 'lt', 'ltEq', 'gt', 'gtEq'];
const PATTERN: CompareOp[] = ['like', 'ilike', 'notLike', 'notILike', 'regex', 'notRegex'];
const STARTS = ['toStartOfHour', 'toStartOfDay', 'toStartOfWeek', 'toMonday', 'toStartOfMonth', 'toStartOfQuarter'];
const UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'];
const INTERVALS = ['toIntervalHour', 'toIntervalDay', 'toIntervalWeek', 'toIntervalMonth'];

interface Refs {
  text: string[];
  number: string[];
  bool: string[];
}

interface Family {
  text: fc.Arbitrary<Drawn>;
  number: fc.Arbitrary<Drawn>;
  bool: fc.Arbitrary<Drawn>;
  time: fc.Arbitrary<Drawn>;
}

/** Expressions of each type, `depth` levels deep at most, reading the output aliases in `refs`. */
const families = new Map<string, Family>();

function family(depth: number, refs: Refs): Family {
  const memo = `${depth}:${JSON.stringify(refs)}`;
  const known = families.get(memo);
  if (known) return known;
  const built = buildFamily(depth, refs);
  families.set(memo, built);
  return built;
}

function buildFamily(depth: number, refs: Refs): Family {
  const fields = (names: string[]) => names.map((n) => leaf(F(n)));
  const time: fc.Arbitrary<Drawn> =
    depth <= 0
      ? fc.oneof(
          fc.constantFrom(...TIME_FIELDS.map((f) => leaf(f))),
          fc.constant(leaf(call('now'))),
          dateText.map((t) => leaf(call('toDateTime', C(t)))),
        )
      : fc.oneof(
          { weight: 3, arbitrary: family(0, refs).time },
          {
            weight: 1,
            arbitrary: fc
              .tuple(fc.constantFrom(...STARTS), family(depth - 1, refs).time)
              .map(([name, t]) => join([t], ([x]) => call(name, x!))),
          },
          { weight: 1, arbitrary: family(depth - 1, refs).time.map((t) => join([t], ([x]) => call('toDate', x!))) },
          {
            weight: 1,
            arbitrary: fc
              .tuple(
                fc.constantFrom('dateAdd', 'dateSub'),
                fc.constantFrom(...UNITS),
                integer,
                family(depth - 1, refs).time,
              )
              .map(([name, unit, n, t]) => join([t], ([x]) => call(name, C(unit), C(n), x!))),
          },
          {
            weight: 1,
            arbitrary: fc
              .tuple(fc.constantFrom('+', '-'), fc.constantFrom(...INTERVALS), integer, family(depth - 1, refs).time)
              .map(([op, unit, n, t]) =>
                join([t], ([x]) => ({ kind: 'arithmetic', op: op as '+' | '-', left: x!, right: call(unit, C(n)) })),
              ),
          },
        );
  if (depth <= 0) {
    return {
      text: fc.oneof(
        { weight: 3, arbitrary: hostileText.map(text) },
        { weight: 2, arbitrary: fc.constantFrom(...TEXT_FIELDS.map((f) => leaf(f))) },
        // All properties as JSON: a long expression of the printer's own, drawn rarely (the parse costs by size).
        { weight: 1, arbitrary: fc.constantFrom(leaf(F('properties')), leaf(F('elements_chain')), leaf(F('event'))) },
        { weight: 2, arbitrary: keyField },
        ...(refs.text.length ? [{ weight: 2, arbitrary: fc.constantFrom(...fields(refs.text)) }] : []),
      ),
      number: fc.oneof(
        { weight: 3, arbitrary: number.map((n) => leaf(C(n))) },
        ...(refs.number.length ? [{ weight: 3, arbitrary: fc.constantFrom(...fields(refs.number)) }] : []),
      ),
      bool: fc.oneof(
        fc.constantFrom(leaf(C(true)), leaf(C(false)), leaf(C(null))),
        ...(refs.bool.length ? [fc.constantFrom(...fields(refs.bool))] : []),
      ),
      time,
    };
  }
  const sub = family(depth - 1, refs);
  const base = family(0, refs);
  const textExpr = fc.oneof(
    { weight: 4, arbitrary: base.text },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom('lower', 'upper'), sub.text).map(([f, t]) => join([t], ([x]) => call(f, x!))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('concat', 'coalesce'), fc.array(sub.text, { minLength: 1, maxLength: 3 }))
        .map(([f, ts]) => join(ts, (xs) => call(f, ...xs))),
    },
    { weight: 1, arbitrary: sub.number.map((n) => join([n], ([x]) => call('toString', x!))) },
    {
      weight: 1,
      arbitrary: fc.tuple(sub.bool, sub.text, sub.text).map((ps) => join(ps, ([c, a, b]) => call('if', c!, a!, b!))),
    },
  );
  const negations = fc
    .tuple(fc.integer({ min: 1, max: 4 }), sub.number)
    .map(([n, x]) =>
      join([x], ([e]) => Array.from({ length: n }).reduce<Expr>((acc) => ({ kind: 'negate', expr: acc }), e!)),
    );
  const numberExpr = fc.oneof(
    { weight: 10, arbitrary: base.number },
    { weight: 6, arbitrary: negations },
    {
      weight: 4,
      arbitrary: fc
        .tuple(sub.number, fc.constantFrom('+', '-', '*', '/', '%'), sub.number)
        .map(([a, op, b]) => join([a, b], ([l, r]) => ({ kind: 'arithmetic', op: op as '+', left: l!, right: r! }))),
    },
    { weight: 1, arbitrary: sub.text.map((t) => join([t], ([x]) => call('length', x!))) },
    {
      // HogQL's toFloat prints as a long CASE of the printer's own: drawn rarely, over a plain text.
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('toFloat', 'toFloat64OrNull', 'length', 'length', 'length', 'length'), base.text)
        .map(([f, t]) => join([t], ([x]) => call(f, x!))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(sub.text, hostileText)
        .map(([t, s]) => join([t, text(s)], ([x, y]) => call('positionCaseInsensitive', x!, y!))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...UNITS), sub.time, sub.time)
        .map(([unit, a, b]) => join([a, b], ([x, y]) => call('dateDiff', C(unit), x!, y!))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(sub.bool, sub.number, sub.number)
        .map((ps) => join(ps, ([c, a, b]) => call('if', c!, a!, b!))),
    },
  );
  const boolExpr = fc.oneof(
    { weight: 2, arbitrary: base.bool },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...COMPARE), sub.text, hostileText)
        .map(([op, t, s]) => join([t, text(s)], ([l, r]) => ({ kind: 'compare', op, left: l!, right: r! }))),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...PATTERN), sub.text, hostileText)
        .map(([op, t, s]) => join([t, text(s)], ([l, r]) => ({ kind: 'compare', op, left: l!, right: r! }))),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom<CompareOp>('in', 'notIn'),
          fc.oneof(base.text, sub.text),
          fc.array(hostileText, { minLength: 1, maxLength: 4 }),
          fc.boolean(),
        )
        .map(([op, t, ss, array]) =>
          join([t, ...ss.map(text)], ([l, ...items]) => ({
            kind: 'compare',
            op,
            left: l!,
            right: { kind: array ? 'array' : 'tuple', items },
          })),
        ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...COMPARE), sub.number, sub.number)
        .map(([op, a, b]) => join([a, b], ([l, r]) => ({ kind: 'compare', op, left: l!, right: r! }))),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...COMPARE),
          fc.constantFrom(...TIME_FIELDS),
          fc.oneof(
            dateText.map(C),
            sub.time.map((t) => t.expr),
          ),
        )
        .map(([op, f, r]) => leaf({ kind: 'compare', op, left: f, right: r })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(sub.number, sub.number, sub.number, fc.boolean())
        .map(([e, lo, hi, negated]) =>
          join([e, lo, hi], ([x, l, h]) => ({ kind: 'between', expr: x!, low: l!, high: h!, negated })),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('isNull', 'isNotNull'), sub.text)
        .map(([f, t]) => join([t], ([x]) => call(f, x!))),
    },
    { weight: 1, arbitrary: sub.bool.map((b) => join([b], ([x]) => ({ kind: 'not', expr: x! }))) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom('and', 'or'), fc.array(sub.bool, { minLength: 2, maxLength: 3 }))
        .map(([kind, bs]) => join(bs, (exprs) => ({ kind: kind as 'and', exprs }))),
    },
  );
  return { text: textExpr, number: numberExpr, bool: boolExpr, time };
}

// ---------------------------------------------------------------------------------------------
// Statements

/** An output alias: plain, or any text (printed back-quoted; never reaches the SQL, whose columns are c0..cN). */
const aliasName = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('x', 'y', 'total') },
  { weight: 1, arbitrary: hostileText.filter((t) => t.length > 0 && !/^[a-z]\d?$/i.test(t)) },
);

const column = (e: Expr, alias?: string) =>
  alias === undefined ? printHogQL(e) : `${printHogQL({ kind: 'alias', alias, expr: e })}`;

const DEPTH = 2;
const plainRefs: Refs = { text: ['a'], number: ['n'], bool: ['b'] };
const plain = family(DEPTH, plainRefs);
const keyed = family(DEPTH, { text: ['a'], number: [], bool: [] });
const noRefs = family(DEPTH, { text: [], number: [], bool: [] });

/** `SELECT <text> AS a, <number> AS n, <bool> AS b, ... FROM events WHERE ... ORDER BY ... LIMIT ...`: every alias read back. */
const rowsStatement = fc
  .record({
    distinct: fc.boolean(),
    a: noRefs.text,
    n: noRefs.number,
    b: noRefs.bool,
    more: fc.array(
      fc.tuple(fc.oneof(noRefs.text, noRefs.number, noRefs.time), fc.option(aliasName, { nil: undefined })),
      {
        maxLength: 2,
      },
    ),
    tableAlias: fc.constantFrom('', ' e', ' AS ev'),
    where: fc.option(plain.bool, { nil: undefined }),
    order: fc.array(fc.oneof(plain.text, plain.number, fc.constantFrom(leaf(C(1)), leaf(C(2)))), { maxLength: 2 }),
    limit: fc.option(fc.nat(200), { nil: undefined }),
    offset: fc.option(fc.nat(50), { nil: undefined }),
  })
  .map((s) => {
    const parts: Drawn[] = [s.a, s.n, s.b, ...s.more.map(([d]) => d), ...(s.where ? [s.where] : []), ...s.order];
    const columns = [
      column(s.a.expr, 'a'),
      column(s.n.expr, 'n'),
      column(s.b.expr, 'b'),
      ...s.more.map(([d, alias]) => column(d.expr, alias)),
    ];
    const hogql = [
      `SELECT ${s.distinct ? 'DISTINCT ' : ''}${columns.join(', ')} FROM events${s.tableAlias}`,
      s.where ? ` WHERE ${printHogQL(s.where.expr)}` : '',
      s.order.length ? ` ORDER BY ${s.order.map((o, i) => `${printHogQL(o.expr)}${i ? ' DESC' : ''}`).join(', ')}` : '',
      s.limit !== undefined ? ` LIMIT ${s.limit}` : '',
      s.offset !== undefined ? ` OFFSET ${s.offset}` : '',
    ].join('');
    return { hogql, parts };
  });

const AGGREGATES = ['sum', 'avg', 'min', 'max'];

/** `SELECT <text> AS a, <aggregate> AS n FROM events WHERE ... GROUP BY a HAVING ... ORDER BY n`. */
const groupedStatement = fc
  .record({
    a: noRefs.text,
    aggregate: fc.oneof(
      fc.constant(leaf(call('count'))),
      fc
        .tuple(fc.constantFrom('count', 'uniq', 'uniqExact'), noRefs.text, fc.boolean())
        .map(([name, t, distinct]) =>
          join([t], ([x]) => ({ kind: 'call', name, args: [x!], distinct: name === 'count' && distinct })),
        ),
      fc.tuple(fc.constantFrom(...AGGREGATES), noRefs.number).map(([name, n]) => join([n], ([x]) => call(name, x!))),
    ),
    where: fc.option(keyed.bool, { nil: undefined }),
    having: fc.option(fc.tuple(fc.constantFrom(...COMPARE), number), { nil: undefined }),
    order: fc.constantFrom('n DESC', 'a', '1', '2 DESC'),
    limit: fc.option(fc.nat(200), { nil: undefined }),
  })
  .map((s) => {
    const parts: Drawn[] = [s.a, s.aggregate, ...(s.where ? [s.where] : [])];
    const having = s.having
      ? ` HAVING ${printHogQL({ kind: 'compare', op: s.having[0], left: F('n'), right: C(s.having[1]) })}`
      : '';
    const hogql = [
      `SELECT ${column(s.a.expr, 'a')}, ${column(s.aggregate.expr, 'n')} FROM events`,
      s.where ? ` WHERE ${printHogQL(s.where.expr)}` : '',
      ' GROUP BY a',
      having,
      ` ORDER BY ${s.order}`,
      s.limit !== undefined ? ` LIMIT ${s.limit}` : '',
    ].join('');
    return { hogql, parts };
  });

/** A HogQLQuery statement, the texts it holds and the property keys it reads. */
export const drawnQuery: fc.Arbitrary<DrawnQuery> = fc
  .tuple(
    fc.oneof({ weight: 3, arbitrary: rowsStatement }, { weight: 2, arbitrary: groupedStatement }),
    fc.constantFrom('UTC', 'UTC', 'America/New_York', 'Asia/Kolkata'),
  )
  .map(([{ hogql, parts }, timezone]) => ({
    hogql,
    texts: parts.flatMap((p) => p.texts),
    keys: parts.flatMap((p) => p.keys),
    timezone,
  }));

/**
 * The one function every check of the printed SQL starts from: a drawn statement through the
 * service's path (parse, fold the clock, print) for DuckDB over FUZZ_FILES and for Athena over
 * FUZZ_TABLE. What the service refuses (a ValidationError: a HogQL rule, or what a lake engine cannot
 * print, such as a `"` in a property key on Athena) is null, with the error in `refusals`.
 */
export function printedQuery(drawn: DrawnQuery): PrintedQuery {
  const refusals: Error[] = [];
  let statement: SelectStatement;
  try {
    statement = foldNow(parseSelectStatement(drawn.hogql, 'query'), NOW, drawn.timezone);
  } catch (error) {
    return { ...drawn, duckdbSql: null, athenaSql: null, refusals: [error as Error] };
  }
  const print = (source: LakeSource) => {
    try {
      return printStatement(
        {
          projectId: FUZZ_PROJECT,
          statement,
          timezone: drawn.timezone,
          weekStart: 1,
          days: { from: '2024-03-01', to: '2024-03-15' },
          limit: Math.min(statement.limit ?? 100, 50_000) + 1,
          offset: statement.offset ?? 0,
        },
        source,
      ).sql;
    } catch (error) {
      refusals.push(error as Error);
      return null;
    }
  };
  return { ...drawn, duckdbSql: print(DUCKDB_SOURCE), athenaSql: print(ATHENA_SOURCE), refusals };
}
