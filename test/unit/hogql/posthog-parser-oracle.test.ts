import createHogQLParser from '@posthog/hogql-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { Constant, Expr } from '#shared/hogql/ast.ts';
import { parseExpr, printHogQL } from '#shared/hogql/index.ts';
import { parseSelectStatement, type SelectStatement } from '#shared/hogql/select.ts';

/**
 * Our HogQL parser held to PostHog's own: `@posthog/hogql-parser`, the WebAssembly build of the C++
 * parser PostHog runs in production. Seeded generators write expression and SELECT texts within the
 * grammar ours accepts (docs/hogql.md); both parse each, both trees are brought to one shape, and they
 * must be equal. Where they differ, ours is wrong until shown otherwise; the few deliberate differences
 * are listed in docs/hogql.md ("Against PostHog's parser") and kept out of the generators here, each
 * with a pinned case below that shows it.
 *
 * The shape: spans dropped; PostHog's sugar as ours reads it (`0 - x` for unary minus, `_caseWithExpression`
 * as `multiIf` of equalities, `ArrayAccess` as `arrayElement` or a longer field path, `count(*)` as
 * `count()`); AND, OR and `||` chains flattened (PostHog flattens them through parentheses, ours only
 * along one chain: both associative); numbers compared by value (-0 as 0).
 */

const posthog = await createHogQLParser();

type Canon = unknown;

const constant = (v: Constant): Canon =>
  v === null
    ? 'null'
    : typeof v === 'number'
      ? `n:${Object.is(v, -0) ? 0 : v}`
      : typeof v === 'boolean'
        ? `b:${v}`
        : `s:${JSON.stringify(v)}`;

/** Nested nodes of the same associative kind merged into one (`(a AND b) AND c` is `a AND b AND c`). */
function flatten(kind: string, items: Canon[]): Canon[] {
  return items.flatMap((i) => {
    const node = i as { k?: string; items?: Canon[]; name?: string; args?: Canon[] };
    if (kind === 'concat') return node.k === 'call' && node.name === 'concat' && node.args ? node.args : [i];
    return node.k === kind && node.items ? node.items : [i];
  });
}

function call(name: string, args: Canon[], params?: Canon[], distinct?: boolean): Canon {
  const flat = name === 'concat' ? flatten('concat', args) : args;
  return { k: 'call', name, args: flat, ...(params ? { params } : {}), ...(distinct ? { distinct: true } : {}) };
}

/** Our tree in the common shape. */
function ours(e: Expr): Canon {
  switch (e.kind) {
    case 'constant':
      return { k: 'const', v: constant(e.value) };
    case 'field':
      return { k: 'field', chain: e.chain };
    case 'array':
    case 'tuple':
      return { k: e.kind, items: e.items.map(ours) };
    case 'call':
      return call(e.name, e.args.map(ours), e.params?.map(ours), e.distinct);
    case 'not':
      return { k: 'not', expr: ours(e.expr) };
    case 'and':
    case 'or':
      return { k: e.kind, items: flatten(e.kind, e.exprs.map(ours)) };
    case 'compare':
      return { k: 'compare', op: e.op, left: ours(e.left), right: ours(e.right) };
    case 'arithmetic':
      return { k: 'arithmetic', op: e.op, left: ours(e.left), right: ours(e.right) };
    case 'negate':
      // PostHog's tree for unary minus.
      return { k: 'arithmetic', op: '-', left: { k: 'const', v: 'n:0' }, right: ours(e.expr) };
    case 'between':
      return { k: 'between', expr: ours(e.expr), low: ours(e.low), high: ours(e.high), negated: e.negated };
    case 'alias':
      return { k: 'alias', alias: e.alias, expr: ours(e.expr) };
  }
}

const COMPARE: Record<string, string> = {
  '==': 'eq',
  '!=': 'notEq',
  '<': 'lt',
  '<=': 'ltEq',
  '>': 'gt',
  '>=': 'gtEq',
  like: 'like',
  ilike: 'ilike',
  'not like': 'notLike',
  'not ilike': 'notILike',
  in: 'in',
  'not in': 'notIn',
  '=~': 'regex',
  '!~': 'notRegex',
  '=~*': 'iRegex',
  '!~*': 'notIRegex',
};

// PostHog's JSON AST, the input being read (any is allowed in tests: biome.jsonc).
type Node = any;

/** PostHog's JSON tree in the common shape; node kinds ours has no counterpart for stay visible by name. */
function theirs(n: Node): Canon {
  switch (n.node) {
    case 'Constant':
      return { k: 'const', v: constant(n.value_type === 'number' ? Number(n.value) : n.value) };
    case 'Field':
      return { k: 'field', chain: n.chain };
    case 'Array':
    case 'Tuple':
      return { k: n.node.toLowerCase(), items: n.exprs.map(theirs) };
    case 'Call': {
      const args: Node[] = n.args;
      if (n.name === '_caseWithExpression') {
        // CASE x WHEN v THEN r ... ELSE e END: ours is multiIf(x = v, r, ..., e).
        const [subject, ...rest] = args.map(theirs);
        const out: Canon[] = [];
        for (let i = 0; i + 1 < rest.length; i += 2)
          out.push({ k: 'compare', op: 'eq', left: subject, right: rest[i] }, rest[i + 1]);
        out.push(rest.at(-1));
        return call('multiIf', out);
      }
      // `NOT (x)` reads as a call of ClickHouse's not(): the same operator.
      if (n.name.toLowerCase() === 'not' && args.length === 1 && !n.params && !n.distinct)
        return { k: 'not', expr: theirs(args[0]) };
      const star =
        args.length === 1 && args[0].node === 'Field' && args[0].chain.length === 1 && args[0].chain[0] === '*';
      return call(n.name, star ? [] : args.map(theirs), n.params?.map(theirs), n.distinct);
    }
    case 'ArrayAccess': {
      const array = theirs(n.array) as { k: string; chain?: string[] };
      const index = n.property;
      if (array.k === 'field' && index.node === 'Constant' && typeof index.value === 'string')
        return { k: 'field', chain: [...(array.chain ?? []), index.value] };
      return call('arrayElement', [array, theirs(index)]);
    }
    case 'Not':
      return { k: 'not', expr: theirs(n.expr) };
    case 'And':
    case 'Or': {
      const kind = n.node.toLowerCase();
      return { k: kind, items: flatten(kind, n.exprs.map(theirs)) };
    }
    case 'CompareOperation':
      return { k: 'compare', op: COMPARE[n.op] ?? n.op, left: theirs(n.left), right: theirs(n.right) };
    case 'ArithmeticOperation':
      return { k: 'arithmetic', op: n.op, left: theirs(n.left), right: theirs(n.right) };
    case 'BetweenExpr':
      return { k: 'between', expr: theirs(n.expr), low: theirs(n.low), high: theirs(n.high), negated: n.negated };
    case 'Alias':
      return { k: 'alias', alias: n.alias, expr: theirs(n.expr) };
    default:
      return { k: `posthog:${n.node}` };
  }
}

/**
 * A SELECT in the common shape. Our statement keeps a column's name, not whether it was written with AS: a
 * name other than the expression's printed text is an alias (the generators' aliases never print as one).
 */
function oursSelect(s: SelectStatement): Canon {
  return {
    distinct: s.distinct,
    columns: s.columns.map((c) =>
      c.name !== printHogQL(c.expr) ? { k: 'alias', alias: c.name, expr: ours(c.expr) } : ours(c.expr),
    ),
    where: s.where && ours(s.where),
    groupBy: s.groupBy.map(ours),
    having: s.having && ours(s.having),
    orderBy: s.orderBy.map((o) => ({ expr: ours(o.expr), direction: o.direction })),
    limit: s.limit,
    offset: s.offset,
  };
}

function theirsSelect(n: Node): Canon {
  const from = n.select_from;
  const onlyEvents =
    from?.node === 'JoinExpr' &&
    from.table?.node === 'Field' &&
    from.table.chain.join('.') === 'events' &&
    !from.alias &&
    !from.next_join;
  return {
    ...(onlyEvents ? {} : { from: 'not events alone' }),
    distinct: n.distinct === true,
    columns: n.select.map(theirs),
    where: n.where ? theirs(n.where) : null,
    groupBy: (n.group_by ?? []).map(theirs),
    having: n.having ? theirs(n.having) : null,
    orderBy: (n.order_by ?? []).map((o: Node) => ({ expr: theirs(o.expr), direction: o.order })),
    limit: n.limit ? Number(n.limit.value) : null,
    offset: n.offset ? Number(n.offset.value) : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Generators: HogQL source text within the grammar ours accepts.

/** Between tokens: spaces, a newline, a tab, a comment (both parsers skip them). */
const gap = fc.constantFrom(
  ' ',
  ' ',
  ' ',
  ' ',
  '  ',
  '\n',
  '\t',
  ' /* c */ ',
  ' -- c\n',
  ' // c\n',
  '\u00a0',
  '\u2003',
  '\ufeff',
);

const STRING_PIECES = [
  'a',
  'Z',
  ' ',
  '0',
  "''",
  "\\'",
  '\\\\',
  '\\n',
  '\\t',
  '\\r',
  '\\b',
  '\\f',
  '\\a',
  '\\v',
  '\\0',
  '\\x41',
  '\\N',
  '\u0001',
  '"',
  '`',
  '%',
  '_',
  '{',
  '}',
  '--',
  '/*',
  ';',
  'é',
  '🙂',
  '中',
  '\n',
  '\t',
  '\u2028',
];
const stringLiteral = fc
  .array(fc.constantFrom(...STRING_PIECES), { maxLength: 8 })
  .map((pieces) => `'${pieces.join('')}'`);

const number = fc.oneof(
  fc.nat({ max: 2 ** 31 }).map(String),
  fc.constantFrom(
    '0',
    '1',
    '42',
    '9007199254740991',
    '3.25',
    '0.5',
    '.5',
    '1.',
    '1e3',
    '2.5E-2',
    '1e-7',
    '0x1F',
    '0xff',
  ),
  fc.constantFrom('0b101', '1e308', '1e400', '007', 'inf', 'INF', 'nan', 'infinity'),
);

const literal = fc.oneof(
  { weight: 4, arbitrary: number },
  { weight: 4, arbitrary: stringLiteral },
  { weight: 1, arbitrary: fc.constantFrom('true', 'FALSE', 'null', 'NULL', 'True') },
);

const FIELDS = [
  'event',
  'timestamp',
  'distinct_id',
  'properties.$browser',
  'properties.$a.b',
  "properties['a b']",
  "properties.a['b']",
  'properties.`a b`',
  'properties."x-y"',
  'person.properties.email',
  'person.created_at',
  '$session_id',
  'a',
  'b',
  '_x1',
  '`event`',
  '`a``b`',
  '"quoted"',
  '"q""q"',
  '"q\\"q"',
  'date',
  'day',
  'year',
  'key',
  'first',
];
const field = fc.constantFrom(...FIELDS);

const SCALARS = ['lower', 'concat', 'toString', 'toFloat', 'if', 'coalesce', 'now', 'dateDiff', 'f', 'year'];
const AGGREGATES = ['count', 'sum', 'uniq', 'COUNT', 'avg'];

const BINARY = [
  '+',
  '-',
  '*',
  '/',
  '%',
  '=',
  '==',
  '!=',
  '<>',
  '<',
  '<=',
  '>',
  '>=',
  '=~',
  '~',
  '!~',
  '=~*',
  '~*',
  '!~*',
  'LIKE',
  'like',
  'ILIKE',
  'NOT LIKE',
  'NOT ILIKE',
  'IN',
  'NOT IN',
  'AND',
  'and',
  'OR',
  '||',
  '??',
];

const UNITS = ['SECOND', 'minute', 'Hour', 'DAY', 'week', 'MONTH', 'quarter', 'year'];

const parens = (t: string) => `(${t})`;

/**
 * Expression texts. Composite operands are parenthesised at random, so precedence is exercised both ways.
 * `inner: true` leaves out aggregates and aliases (a statement's WHERE, GROUP BY and plain columns).
 */
const expressions = ({ inner, maxDepth }: { inner: boolean; maxDepth: number }) =>
  fc.letrec<{ expr: string; operand: string; composite: string }>((tie) => ({
    expr: fc.oneof(
      { maxDepth, depthSize: 'small', withCrossShrink: true },
      { weight: 3, arbitrary: field },
      { weight: 3, arbitrary: literal },
      { weight: 5, arbitrary: tie('composite') },
    ),
    /** An operand: a bare composite half the time, else parenthesised. */
    operand: fc.oneof(tie('expr'), tie('composite').map(parens)),
    composite: fc.oneof(
      fc
        .tuple(tie('operand'), gap, fc.constantFrom(...BINARY), gap, tie('operand'))
        .map(([a, g1, op, g2, b]) => `${a}${g1}${op}${g2}${b}`),
      fc.tuple(fc.constantFrom('-', '- ', 'NOT ', 'not '), tie('operand')).map(([op, a]) => `${op}${a}`),
      // Signs on literals: part of the number (`-1`, `+2`, `- inf`), or a negation (`-(1)`, `- -1`).
      fc
        .tuple(fc.constantFrom('-', '- ', '+', '-(', '- -', '-(-', '-(+'), number)
        .map(([sign, n]) => `${sign}${n}${')'.repeat(sign.split('(').length - 1)}`),
      fc
        .tuple(
          fc.constantFrom(...(inner ? SCALARS : [...SCALARS, ...AGGREGATES])),
          fc.array(tie('expr'), { maxLength: 3 }),
          fc.boolean(),
        )
        .map(([name, args, trailing]) => `${name}(${args.join(', ')}${trailing && args.length ? ',' : ''})`),
      ...(inner
        ? []
        : [
            fc.constantFrom('count()', 'count(*)', 'COUNT(*)'),
            tie('expr').map((a) => `count(DISTINCT ${a})`),
            fc.tuple(fc.constantFrom('0.5', '0.9', '1'), tie('expr')).map(([p, a]) => `quantile(${p})(${a})`),
          ]),
      fc.array(tie('expr'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
      fc.array(tie('expr'), { minLength: 1, maxLength: 3 }).map((items) => `(${items.join(', ')},)`),
      fc.array(tie('expr'), { minLength: 2, maxLength: 3 }).map((items) => `(${items.join(', ')})`),
      fc
        .tuple(
          tie('operand'),
          fc.constantFrom(' BETWEEN ', ' NOT BETWEEN ', ' between '),
          tie('operand'),
          tie('operand'),
        )
        .map(([x, between, lo, hi]) => `${x}${between}${lo} AND ${hi}`),
      fc.tuple(tie('operand'), fc.constantFrom(' IS NULL', ' IS NOT NULL', ' is null')).map(([a, s]) => `${a}${s}`),
      fc.tuple(tie('operand'), tie('operand'), tie('operand')).map(([c, a, b]) => `${c} ? ${a} : ${b}`),
      fc
        .tuple(
          fc.option(tie('operand'), { nil: undefined }),
          fc.array(fc.tuple(tie('expr'), tie('expr')), { minLength: 1, maxLength: 2 }),
          fc.option(tie('expr'), { nil: undefined }),
        )
        .map(
          ([subject, whens, otherwise]) =>
            `CASE ${subject ?? ''} ${whens.map(([w, t]) => `WHEN ${w} THEN ${t}`).join(' ')}${otherwise === undefined ? '' : ` ELSE ${otherwise}`} END`,
        ),
      fc
        .tuple(
          fc.oneof(fc.nat({ max: 100 }).map(String), fc.constantFrom("'2'", 'x', '(1 + 2)')),
          fc.constantFrom(...UNITS),
        )
        .map(([n, u]) => `INTERVAL ${n} ${u}`),
      fc.tuple(tie('operand'), fc.nat({ max: 5 })).map(([a, i]) => `${a}[${i}]`),
      ...(inner
        ? []
        : [fc.tuple(tie('expr'), fc.constantFrom('x', 'y1', '`n m`', "'label'")).map(([a, n]) => `(${a} AS ${n})`)]),
    ),
  })).expr;

const expr = expressions({ inner: false, maxDepth: 3 });
/** A statement's expressions are smaller: PostHog's parser takes most of the run's time, and a statement has several. */
const innerExpr = expressions({ inner: true, maxDepth: 1 });

/** Output names: none is a field the generators read (an alias read back is replaced by its expression). */
const alias = fc.constantFrom('n1', 'total', '`my n`', "'label'", 'N2');
const column = fc.tuple(innerExpr, fc.option(alias, { nil: undefined })).map(([e, a]) => (a ? `${e} AS ${a}` : e));
const direction = fc.constantFrom('', ' ASC', ' DESC', ' desc', ' ascending');
/** ORDER BY / GROUP BY items: never a bare number (that names a column by position). */
const key = innerExpr.filter((t) => !/^[\d.]/.test(t.trim()));
const aggregate = fc.oneof(
  fc.constantFrom('count()', 'count(*)', 'uniq(distinct_id)', 'count(DISTINCT event)'),
  innerExpr.map((e) => `sum(${e})`),
  innerExpr.map((e) => `avg(toFloat(${e}))`),
);
const tail = fc.record({
  limit: fc.option(fc.nat({ max: 1000 }), { nil: undefined }),
  offset: fc.option(fc.nat({ max: 50 }), { nil: undefined }),
  semicolon: fc.boolean(),
});
const tailText = (t: { limit?: number; offset?: number; semicolon: boolean }) =>
  `${t.limit === undefined ? '' : ` LIMIT ${t.limit}`}${t.offset === undefined ? '' : ` OFFSET ${t.offset}`}${t.semicolon ? ';' : ''}`;

/** SELECT texts: rows (no aggregate anywhere), or groups (columns are keys or aggregates). */
const select = fc.oneof(
  fc
    .record({
      distinct: fc.boolean(),
      columns: fc.array(column, { minLength: 1, maxLength: 3 }),
      where: fc.option(innerExpr, { nil: undefined }),
      order: fc.array(fc.tuple(key, direction), { maxLength: 2 }),
      tail,
    })
    .map(
      (q) =>
        `SELECT ${q.distinct ? 'DISTINCT ' : ''}${q.columns.join(', ')} FROM events` +
        `${q.where === undefined ? '' : ` WHERE ${q.where}`}` +
        `${q.order.length ? ` ORDER BY ${q.order.map(([e, d]) => `${e}${d}`).join(', ')}` : ''}${tailText(q.tail)}`,
    ),
  fc
    .record({
      keys: fc.array(fc.constantFrom(...FIELDS), { minLength: 1, maxLength: 2 }),
      aggregates: fc.array(fc.tuple(aggregate, fc.option(alias, { nil: undefined })), { minLength: 1, maxLength: 2 }),
      where: fc.option(innerExpr, { nil: undefined }),
      having: fc.option(fc.tuple(aggregate, fc.constantFrom('>', '<=', '!='), fc.nat({ max: 9 })), { nil: undefined }),
      order: fc.array(fc.tuple(aggregate, direction), { maxLength: 2 }),
      tail,
    })
    .map(
      (q) =>
        `SELECT ${[...q.keys, ...q.aggregates.map(([a, n]) => (n ? `${a} AS ${n}` : a))].join(', ')} FROM events` +
        `${q.where === undefined ? '' : ` WHERE ${q.where}`} GROUP BY ${q.keys.join(', ')}` +
        `${q.having ? ` HAVING ${q.having.join(' ')}` : ''}` +
        `${q.order.length ? ` ORDER BY ${q.order.map(([e, d]) => `${e}${d}`).join(', ')}` : ''}${tailText(q.tail)}`,
    ),
);

/** Parses with ours; undefined when ours refuses the text (a ValidationError: outside our grammar). */
function parseOurs<T>(parse: () => T): T | undefined {
  try {
    return parse();
  } catch (e) {
    if (e instanceof ValidationError) return undefined;
    throw e;
  }
}

function theirsOrError(json: string): Node {
  const tree = JSON.parse(json);
  return tree.error ? { k: 'posthog refused', message: String(tree.message).slice(0, 200) } : tree;
}

/** Ours and PostHog's tree of one expression, in the common shape. */
function both(text: string): { ours: string; theirs: string } {
  const mine = parseOurs(() => parseExpr(text, 'x'));
  const tree = theirsOrError(posthog.parseExpr(text, true));
  return {
    ours: JSON.stringify(mine === undefined ? { k: 'ours refused' } : ours(mine)),
    theirs: JSON.stringify(tree.k === 'posthog refused' ? { k: 'posthog refused' } : theirs(tree)),
  };
}

describe("our HogQL parser against PostHog's: pinned readings", () => {
  // Each was a disagreement the fuzz found, now read as PostHog reads it, or a neighbour of one.
  it.each([
    // A sign is part of a number literal only.
    '-7',
    '- 7',
    '+7',
    '-inf',
    '- nan',
    '-(7)',
    '-(-7)',
    '- -7',
    '-7[1]',
    '-x * 2',
    '2 * -x',
    '1 - -1',
    // `NOT (` is a call of not().
    'NOT (a) = b',
    'NOT (a = b)',
    'not (a)[1]',
    'NOT a = b',
    'NOT (a) AND b',
    // One WHEN without a subject is if().
    'CASE WHEN a THEN b END',
    'CASE WHEN a THEN b ELSE c END',
    'CASE WHEN a THEN b WHEN c THEN d END',
    'CASE x WHEN a THEN b END',
    // `??` from left to right.
    'a ?? b ?? c',
    'a ?? (b ?? c)',
    // BETWEEN binds looser than comparisons, IS NULL and ??, tighter than NOT.
    'a BETWEEN b AND c = d',
    'a BETWEEN b = c AND d',
    'a BETWEEN b AND c IS NULL',
    'a BETWEEN b AND c ?? d',
    'a BETWEEN b AND c BETWEEN d AND e',
    'a = b BETWEEN c AND d',
    'a BETWEEN b AND c OR d',
    'NOT a BETWEEN b AND c',
    'a BETWEEN NOT b AND c',
    'a ?? b BETWEEN c AND d',
    'a < b NOT BETWEEN c AND d = e',
    'x BETWEEN 1 AND 2 AND y',
    // PostHog's escapes.
    "'a\\nb\\t\\\\ \\x41 \\N \\0 \\a\\v'",
    "'it''s \\'q\\''",
    '`a``b`',
    '"a\\"b"',
    "`a\\'b`",
  ])('%s', (text) => {
    const { ours: mine, theirs: expected } = both(text);
    expect(mine).toBe(expected);
  });

  it.each([
    // Escapes PostHog's lexer has not: a syntax error in both (ClickHouse would read `\d` as `d`).
    "'\\d+'",
    "'\\.'",
    '`a\\`b`',
    // A sign on anything but a number literal.
    '+x',
    '+(1)',
  ])('%s: refused by both', (text) => {
    expect(both(text)).toEqual({ ours: '{"k":"ours refused"}', theirs: '{"k":"posthog refused"}' });
  });
});

describe("our HogQL parser against PostHog's (@posthog/hogql-parser, seeded)", () => {
  it('expressions: the same tree for every generated text ours accepts', () => {
    const texts = fc.sample(expr, { numRuns: 2000, seed: 3535 });
    const disagreements: string[] = [];
    let compared = 0;
    const started = performance.now();
    let oursMs = 0;
    let theirsMs = 0;
    for (const text of texts) {
      let t = performance.now();
      const mine = parseOurs(() => parseExpr(text, 'x'));
      oursMs += performance.now() - t;
      if (mine === undefined) continue;
      compared++;
      t = performance.now();
      const json = posthog.parseExpr(text, true);
      theirsMs += performance.now() - t;
      const tree = theirsOrError(json);
      const expected = tree.k === 'posthog refused' ? tree : theirs(tree);
      if (JSON.stringify(ours(mine)) !== JSON.stringify(expected))
        disagreements.push(
          `${JSON.stringify(text)}\n  ours:    ${JSON.stringify(ours(mine))}\n  posthog: ${JSON.stringify(expected)}`,
        );
    }
    console.info(
      `HogQL parser oracle: ${compared} of ${texts.length} expressions compared in ${Math.round(performance.now() - started)} ms (ours ${Math.round(oursMs)} ms, PostHog's ${Math.round(theirsMs)} ms), ${disagreements.length} disagreements`,
    );
    expect(disagreements.slice(0, 40)).toEqual([]);
    // Not vacuous: most generated texts are ours to parse.
    expect(compared).toBeGreaterThan(texts.length * 0.8);
  }, 300_000);

  it('SELECT statements: the same clauses and trees for every generated statement ours accepts', () => {
    const texts = fc.sample(select, { numRuns: 300, seed: 3536 });
    const disagreements: string[] = [];
    let compared = 0;
    const started = performance.now();
    for (const text of texts) {
      const mine = parseOurs(() => parseSelectStatement(text, 'query'));
      if (mine === undefined) continue;
      compared++;
      const tree = theirsOrError(posthog.parseSelect(text, true));
      const expected = tree.k === 'posthog refused' ? tree : theirsSelect(tree);
      if (JSON.stringify(oursSelect(mine)) !== JSON.stringify(expected))
        disagreements.push(
          `${JSON.stringify(text)}\n  ours:    ${JSON.stringify(oursSelect(mine))}\n  posthog: ${JSON.stringify(expected)}`,
        );
    }
    console.info(
      `HogQL parser oracle: ${compared} of ${texts.length} SELECTs compared in ${Math.round(performance.now() - started)} ms, ${disagreements.length} disagreements`,
    );
    expect(disagreements.slice(0, 20)).toEqual([]);
    expect(compared).toBeGreaterThan(texts.length * 0.8);
  }, 300_000);
});
