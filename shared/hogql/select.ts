/**
 * HogQLQuery's statement: one SELECT over `events`, parsed with the expression parser (parser.ts) and
 * its caps. The grammar is a subset of PostHog's, chosen so that every statement it accepts reads one
 * table and can be printed for the lake's engines without a query of its own inside:
 *
 *   SELECT [DISTINCT] expr [AS alias] | * | events.*, ... FROM events [[AS] alias] [WHERE expr] [GROUP BY expr, ...]
 *   [HAVING expr] [ORDER BY expr [ASC|DESC], ...] [LIMIT n [OFFSET m]] [;]
 *
 * Every other construct (JOIN, subqueries, UNION, window functions, other tables, table functions,
 * SETTINGS, FORMAT, INTO, a second statement) is a 400 naming it. Output aliases are replaced by their
 * expressions wherever they are read (ClickHouse's rule), so no engine has to resolve them.
 */
import { ValidationError } from '#shared/errors.ts';
import { childrenOf, walk, withoutSpans } from './analysis.ts';
import type { Expr, OrderExpr } from './ast.ts';
import { type Token, tokenize } from './lexer.ts';
import { depthExceeded, LIMITS, type Limits } from './limits.ts';
import { Parser, type Placeholder, treeDepth } from './parser.ts';
import { printHogQL } from './print.ts';

export interface SelectColumn {
  expr: Expr;
  /** Whether the name was written (`AS name`): other clauses may read it. */
  aliased?: boolean;
  /** What PostHog names the column: its alias, else the expression as HogQL prints it. */
  name: string;
}

export interface SelectStatement {
  distinct: boolean;
  columns: SelectColumn[];
  where: Expr | null;
  groupBy: Expr[];
  having: Expr | null;
  orderBy: OrderExpr[];
  limit: number | null;
  offset: number | null;
}

/** Aggregates a statement may call (exact ones only: an approximate count may not change the numbers). */
export const SELECT_AGGREGATES: ReadonlySet<string> = new Set([
  'count',
  'uniq',
  'uniqExact',
  'sum',
  'avg',
  'min',
  'max',
]);

/** A statement's text is longer than an expression's: several clauses, each under the expression caps. */
export const SELECT_LIMITS: Limits = { ...LIMITS, maxLength: 20_000, maxNodes: 5_000 };

/** The one table a statement reads. */
export const SELECT_TABLE = 'events';

/**
 * What `*` (and `events.*`) expands to: PostHog's events fields in its order (its table's non-hidden
 * database fields less `team_id`). `created_at` (ingestion time) is NULL in a day's files written
 * before the lake kept it, until the day is compacted again.
 */
export const EVENTS_ASTERISK: readonly string[] = [
  'uuid',
  'event',
  'properties',
  'timestamp',
  'distinct_id',
  'elements_chain',
  'created_at',
  '$session_id',
  '$window_id',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
];

/** `*` or `<table>.*` in the select list, expanded once the FROM clause names the table and its alias. */
interface Asterisk {
  asterisk: string | null;
}

const CLAUSE_WORDS = new Set(['where', 'group', 'having', 'order', 'limit', 'offset', 'join', 'settings', 'format']);

const JOIN_WORDS = new Set([
  'join',
  'inner',
  'left',
  'right',
  'full',
  'cross',
  'outer',
  'any',
  'all',
  'semi',
  'anti',
  'asof',
  'array',
  'global',
  'paste',
]);

class SelectParser {
  constructor(
    private readonly p: Parser,
    private readonly attr: string,
    private readonly limits: Limits,
  ) {}

  private refuse(construct: string): never {
    throw new ValidationError(
      `HogQLQuery: ${construct} ${construct.endsWith('s') ? 'are' : 'is'} not supported.`,
      this.attr,
    );
  }

  private word(tok: Token, w: string): boolean {
    return this.p.isKeyword(tok, w);
  }

  private op(tok: Token, o: string): boolean {
    return tok.type === 'op' && tok.value === o;
  }

  private expect(w: string): void {
    const tok = this.p.next();
    if (!this.word(tok, w)) this.p.fail(tok, w.toUpperCase());
  }

  private expr(): Expr {
    const e = this.p.expression(0);
    if (treeDepth(e) > this.limits.maxDepth) throw depthExceeded(this.limits, this.attr);
    if (this.word(this.p.peek(), 'over')) this.refuse('window functions (OVER)');
    return e;
  }

  private list(): Expr[] {
    const out = [this.expr()];
    while (this.op(this.p.peek(), ',')) {
      this.p.next();
      out.push(this.expr());
    }
    return out;
  }

  /** A select item: an expression, `*` or `name.*`. */
  private selectItem(): Expr | Asterisk {
    const [first, dot, star] = [this.p.peek(), this.p.peek(1), this.p.peek(2)];
    if (this.op(first, '*')) {
      this.p.next();
      return { asterisk: null };
    }
    if (first.type === 'ident' && this.op(dot, '.') && this.op(star, '*')) {
      for (let i = 0; i < 3; i++) this.p.next();
      return { asterisk: first.value };
    }
    return this.expr();
  }

  private selectItems(): (Expr | Asterisk)[] {
    const out = [this.selectItem()];
    while (this.op(this.p.peek(), ',')) {
      this.p.next();
      out.push(this.selectItem());
    }
    return out;
  }

  /** `*` and `events.*` (or the table's alias) as the events fields; `person.*` and others are refused by name. */
  private expand(items: (Expr | Asterisk)[], tableAlias: string | null): Expr[] {
    return items.flatMap((item): Expr[] => {
      if (!('asterisk' in item)) return [item];
      const table = item.asterisk;
      if (table === 'person')
        throw new ValidationError(
          'HogQLQuery: person.* is not supported: select person.id (or person_id) and person.properties.<name>.',
          this.attr,
        );
      if (table !== null && table !== SELECT_TABLE && table !== tableAlias)
        throw new ValidationError(
          `HogQLQuery: ${table.slice(0, 40)}.* is not supported (only * and events.* are).`,
          this.attr,
        );
      return EVENTS_ASTERISK.map((name): Expr => ({ kind: 'field', chain: [name] }));
    });
  }

  private integer(what: string): number {
    const tok = this.p.next();
    if (tok.type !== 'number' || !Number.isSafeInteger(tok.value) || tok.value < 0)
      throw new ValidationError(`HogQLQuery: ${what} must be a non-negative integer.`, this.attr);
    return tok.value;
  }

  statement(): SelectStatement & { tableAlias: string | null } {
    const first = this.p.peek();
    if (this.word(first, 'with')) this.refuse('WITH (common table expressions)');
    this.expect('select');
    let distinct = false;
    if (this.word(this.p.peek(), 'distinct')) {
      this.p.next();
      distinct = true;
    }
    const listed = this.selectItems();
    const tableAlias = this.from();
    const items = this.expand(listed, tableAlias);
    const out: SelectStatement & { tableAlias: string | null } = {
      distinct,
      columns: items.map((e) =>
        e.kind === 'alias' ? { expr: e.expr, name: e.alias, aliased: true } : { expr: e, name: printHogQL(e) },
      ),
      where: null,
      groupBy: [],
      having: null,
      orderBy: [],
      limit: null,
      offset: null,
      tableAlias,
    };
    if (this.word(this.p.peek(), 'prewhere')) this.refuse('PREWHERE');
    if (this.word(this.p.peek(), 'where')) {
      this.p.next();
      out.where = this.expr();
    }
    if (this.word(this.p.peek(), 'group')) {
      this.p.next();
      this.expect('by');
      out.groupBy = this.list();
      if (this.word(this.p.peek(), 'with')) this.refuse('GROUP BY ... WITH ROLLUP/CUBE/TOTALS');
    }
    if (this.word(this.p.peek(), 'having')) {
      this.p.next();
      out.having = this.expr();
    }
    if (this.word(this.p.peek(), 'window')) this.refuse('window functions (WINDOW)');
    if (this.word(this.p.peek(), 'order')) {
      this.p.next();
      this.expect('by');
      for (;;) {
        const expr = this.expr();
        let direction: OrderExpr['direction'] = 'ASC';
        const tok = this.p.peek();
        if (this.word(tok, 'desc') || this.word(tok, 'descending')) direction = 'DESC';
        if (direction === 'DESC' || this.word(tok, 'asc') || this.word(tok, 'ascending')) this.p.next();
        if (this.word(this.p.peek(), 'nulls') || this.word(this.p.peek(), 'with'))
          this.refuse('ORDER BY ... NULLS / WITH FILL');
        out.orderBy.push({ expr, direction });
        if (!this.op(this.p.peek(), ',')) break;
        this.p.next();
      }
    }
    if (this.word(this.p.peek(), 'limit')) {
      this.p.next();
      out.limit = this.integer('LIMIT');
      if (this.op(this.p.peek(), ',')) this.refuse('LIMIT m, n');
      if (this.word(this.p.peek(), 'by')) this.refuse('LIMIT BY');
      if (this.word(this.p.peek(), 'with')) this.refuse('LIMIT ... WITH TIES');
      if (this.word(this.p.peek(), 'offset')) {
        this.p.next();
        out.offset = this.integer('OFFSET');
      }
    } else if (this.word(this.p.peek(), 'offset')) {
      this.p.next();
      out.offset = this.integer('OFFSET');
    }
    this.end();
    return out;
  }

  /** `FROM events [[AS] alias]`: the alias, if any. */
  private from(): string | null {
    const tok = this.p.next();
    if (!this.word(tok, 'from')) {
      if (this.word(tok, 'into')) this.refuse('INTO');
      this.p.fail(tok, '"," or FROM');
    }
    const table = this.p.next();
    if (this.op(table, '(')) this.refuse('subqueries');
    if (table.type !== 'ident') this.p.fail(table, 'a table name');
    if (this.op(this.p.peek(), '(')) this.refuse(`table functions (${table.value.slice(0, 40)})`);
    if (this.op(this.p.peek(), '.')) this.refuse('tables other than events');
    if (table.value !== SELECT_TABLE)
      this.refuse(`the table ${table.value.slice(0, 40)} (only events is; person fields are read through person.)`);
    let alias: string | null = null;
    const next = this.p.peek();
    if (this.word(next, 'as')) {
      this.p.next();
      const name = this.p.next();
      if (name.type !== 'ident') this.p.fail(name, 'a table alias');
      alias = name.value;
    } else if (
      next.type === 'ident' &&
      (next.quoted ||
        !(
          CLAUSE_WORDS.has(next.value.toLowerCase()) ||
          JOIN_WORDS.has(next.value.toLowerCase()) ||
          ['final', 'sample', 'prewhere', 'union', 'intersect', 'except', 'window', 'into'].includes(
            next.value.toLowerCase(),
          )
        ))
    ) {
      this.p.next();
      alias = next.value;
    }
    const after = this.p.peek();
    if (this.op(after, ',') || (after.type === 'ident' && !after.quoted && JOIN_WORDS.has(after.value.toLowerCase())))
      this.refuse('JOINs');
    if (this.word(after, 'final') || this.word(after, 'sample')) this.refuse(String(after.value).toUpperCase());
    return alias;
  }

  private end(): void {
    const tok = this.p.peek();
    if (this.op(tok, ';')) {
      this.p.next();
      if (this.p.peek().type !== 'eof') this.refuse('multiple statements');
      return;
    }
    if (tok.type === 'eof') return;
    for (const [w, construct] of [
      ['union', 'UNION'],
      ['intersect', 'INTERSECT'],
      ['except', 'EXCEPT'],
      ['settings', 'SETTINGS'],
      ['format', 'FORMAT'],
      ['into', 'INTO'],
    ] as const)
      if (this.word(tok, w)) this.refuse(construct);
    this.p.fail(tok, 'end of query');
  }
}

const SET_OPERATORS = new Map([
  ['union', 'UNION'],
  ['intersect', 'INTERSECT'],
  ['except', 'EXCEPT'],
]);

/**
 * An unquoted `select` anywhere but the start (not a `.member`): a second statement after `;`, a set
 * operation after UNION [ALL|DISTINCT] / INTERSECT / EXCEPT, else a query inside the query.
 */
function refuseSubqueries(tokens: Token[], attr: string): void {
  const word = (t: Token | undefined) => (t?.type === 'ident' && !t.quoted ? t.value.toLowerCase() : '');
  tokens.forEach((tok, i) => {
    if (i === 0 || word(tok) !== 'select') return;
    const prev = tokens[i - 1];
    if (prev?.type === 'op' && prev.value === '.') return;
    const refuse = (construct: string) => {
      throw new ValidationError(`HogQLQuery: ${construct} not supported.`, attr);
    };
    if (prev?.type === 'op' && prev.value === ';') refuse('multiple statements are');
    const setOp =
      SET_OPERATORS.get(word(prev)) ??
      (['all', 'distinct'].includes(word(prev)) ? SET_OPERATORS.get(word(tokens[i - 2])) : undefined);
    if (setOp) refuse(`${setOp} is`);
    refuse('subqueries are');
  });
}

const keyOf = (e: Expr) => JSON.stringify(withoutSpans(e));

/** `e.event` and `events.event` read `event`: the table's name or alias in front of a field is dropped. */
function stripTable(e: Expr, names: Set<string>): Expr {
  walk(e, (node) => {
    if (node.kind === 'field' && node.chain.length > 1 && names.has(node.chain[0] as string)) node.chain.shift();
  });
  return e;
}

/**
 * A copy of the tree with `f` applied top-down: where `f` returns a node, that node replaces the
 * subtree (its children are not visited); where it returns undefined, the node is copied with its
 * children mapped.
 */
export function mapExpr(e: Expr, f: (e: Expr) => Expr | undefined): Expr {
  const replaced = f(e);
  if (replaced !== undefined) return replaced;
  const m = (x: Expr) => mapExpr(x, f);
  switch (e.kind) {
    case 'constant':
    case 'field':
      return e;
    case 'array':
    case 'tuple':
      return { ...e, items: e.items.map(m) };
    case 'call':
      return { ...e, args: e.args.map(m), ...(e.params ? { params: e.params.map(m) } : {}) };
    case 'not':
    case 'negate':
    case 'alias':
      return { ...e, expr: m(e.expr) };
    case 'and':
    case 'or':
      return { ...e, exprs: e.exprs.map(m) };
    case 'compare':
    case 'arithmetic':
      return { ...e, left: m(e.left), right: m(e.right) };
    case 'between':
      return { ...e, expr: m(e.expr), low: m(e.low), high: m(e.high) };
  }
}

/** Output aliases read elsewhere become their expressions (one level: ClickHouse's alias rule, no engine's). */
const inlineAliases = (e: Expr, aliases: Map<string, Expr>): Expr =>
  mapExpr(e, (node) => {
    if (node.kind === 'alias') return inlineAliases(node.expr, aliases);
    return node.kind === 'field' && node.chain.length === 1 ? aliases.get(node.chain[0] as string) : undefined;
  });

const isAggregateCall = (e: Expr) => e.kind === 'call' && SELECT_AGGREGATES.has(e.name);

function aggregateDepthCheck(e: Expr, where: string, allowed: boolean, attr: string): void {
  const visit = (node: Expr, inside: boolean): void => {
    if (node.kind === 'alias') throw new ValidationError(`HogQLQuery: an alias (AS) inside ${where}.`, attr);
    if (isAggregateCall(node)) {
      if (!allowed) throw new ValidationError(`HogQLQuery: aggregate functions are not allowed in ${where}.`, attr);
      if (inside) throw new ValidationError('HogQLQuery: an aggregate function inside another aggregate.', attr);
    }
    const nested = inside || isAggregateCall(node);
    for (const child of childrenOf(node)) visit(child, nested);
  };
  visit(e, false);
}

/**
 * In an aggregating statement, every field read outside an aggregate must be under a GROUP BY key
 * (else each engine answers with an error of its own, or ClickHouse's NOT_AN_AGGREGATE).
 */
function groupedCheck(e: Expr, keys: Set<string>, attr: string): void {
  const visit = (node: Expr): void => {
    if (keys.has(keyOf(node)) || isAggregateCall(node)) return;
    if (node.kind === 'field')
      throw new ValidationError(
        `HogQLQuery: ${printHogQL(node)} is neither in GROUP BY nor inside an aggregate function.`,
        attr,
      );
    for (const child of childrenOf(node)) visit(child);
  };
  visit(e);
}

/**
 * Parses a HogQLQuery statement. `placeholder` resolves `{filters}` and `{variables.x}`; the result
 * holds no alias nodes and no table-qualified fields.
 */
export function parseSelectStatement(
  text: unknown,
  attr: string,
  placeholder?: Placeholder,
  limits: Limits = SELECT_LIMITS,
): SelectStatement {
  if (typeof text !== 'string') throw new ValidationError('HogQLQuery: query must be a string.', attr);
  if (text.length > limits.maxLength)
    throw new ValidationError(`HogQLQuery: the query is too long (the limit is ${limits.maxLength} characters).`, attr);
  const { tokens, comments } = tokenize(text, limits, attr);
  refuseSubqueries(tokens, attr);
  const parser = new Parser(tokens, comments, limits, attr);
  // A placeholder's expansion (a long filter list, used many times) counts against the statement's nodes.
  let budget = limits.maxNodes;
  const spend = (e: Expr) => {
    walk(e, () => {
      budget--;
    });
    if (budget < 0) throw tooBig(limits, attr);
  };
  if (placeholder)
    parser.placeholder = (path, at) => {
      const e = placeholder(path, at);
      spend(e);
      return e;
    };
  const raw = new SelectParser(parser, attr, limits).statement();
  // `properties.x` and `person.x` keep their meaning whatever the table's alias.
  const tables = new Set([SELECT_TABLE, ...(raw.tableAlias ? [raw.tableAlias] : [])]);
  tables.delete('properties');
  tables.delete('person');
  const strip = (e: Expr) => stripTable(e, tables);
  const columns = raw.columns.map((c) => ({ name: c.name, expr: strip(c.expr) }));
  const aliases = new Map<string, Expr>();
  columns.forEach((c, i) => {
    aggregateDepthCheck(c.expr, 'a select column', true, attr);
    const self = c.expr.kind === 'field' && c.expr.chain.length === 1 && c.expr.chain[0] === c.name;
    if (raw.columns[i]?.aliased && !self) aliases.set(c.name, c.expr);
  });
  // Each read of an alias copies its expression: the copies count too (else `a = a AND a = a ...` multiplies a big alias).
  const sizes = new Map([...aliases].map(([name, e]) => [name, nodeCount(e)]));
  const read = (e: Expr) => {
    const stripped = strip(e);
    walk(stripped, (node) => {
      budget -= node.kind === 'field' && node.chain.length === 1 ? (sizes.get(node.chain[0] as string) ?? 1) : 1;
    });
    if (budget < 0) throw tooBig(limits, attr);
    return inlineAliases(stripped, aliases);
  };
  // `GROUP BY 1` / `ORDER BY 2`: the column at that position, as every engine reads it.
  const key = (e: Expr, clause: string): Expr => {
    if (e.kind !== 'constant') return read(e);
    const column = typeof e.value === 'number' && Number.isInteger(e.value) ? columns[e.value - 1] : undefined;
    if (!column) throw new ValidationError(`HogQLQuery: ${clause} ${printHogQL(e)} names no select column.`, attr);
    return column.expr;
  };
  const statement: SelectStatement = {
    distinct: raw.distinct,
    columns,
    where: raw.where ? read(raw.where) : null,
    groupBy: raw.groupBy.map((g) => key(g, 'GROUP BY')),
    having: raw.having ? read(raw.having) : null,
    orderBy: raw.orderBy.map((o) => ({ expr: key(o.expr, 'ORDER BY'), direction: o.direction })),
    limit: raw.limit,
    offset: raw.offset,
  };
  if (statement.where) aggregateDepthCheck(statement.where, 'WHERE', false, attr);
  for (const g of statement.groupBy) aggregateDepthCheck(g, 'GROUP BY', false, attr);
  if (statement.having) aggregateDepthCheck(statement.having, 'HAVING', true, attr);
  for (const o of statement.orderBy) aggregateDepthCheck(o.expr, 'ORDER BY', true, attr);
  const aggregating =
    statement.groupBy.length > 0 ||
    statement.having !== null ||
    columns.some((c) => hasAggregateCall(c.expr)) ||
    statement.orderBy.some((o) => hasAggregateCall(o.expr));
  if (aggregating) {
    const keys = new Set(statement.groupBy.map(keyOf));
    for (const e of [...columns.map((c) => c.expr), ...statement.orderBy.map((o) => o.expr)])
      groupedCheck(e, keys, attr);
    if (statement.having) groupedCheck(statement.having, keys, attr);
  }
  return statement;
}

function nodeCount(e: Expr): number {
  let n = 0;
  walk(e, () => {
    n++;
  });
  return n;
}

const tooBig = (limits: Limits, attr: string) =>
  new ValidationError(
    `HogQLQuery: the query is too large once its aliases and placeholders are expanded (the limit is ${limits.maxNodes.toLocaleString('en-US')} nodes).`,
    attr,
  );

function hasAggregateCall(e: Expr): boolean {
  let found = false;
  walk(e, (node) => {
    if (isAggregateCall(node)) found = true;
  });
  return found;
}
