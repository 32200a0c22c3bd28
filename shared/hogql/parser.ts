import { ValidationError } from '#shared/errors.ts';
import { childrenOf } from './analysis.ts';
import type { ArithmeticOp, CompareOp, Expr, OrderExpr, Span } from './ast.ts';
import { type Comment, type Token, tokenize } from './lexer.ts';
import { checkLength, depthExceeded, LIMITS, type Limits, nodesExceeded, tooManyArgs, tooManyItems } from './limits.ts';

/**
 * A hand-written Pratt parser for HogQL's expression syntax. Precedences follow PostHog's HogQLParser
 * grammar (tightest first): `x[i]` / `a.b`, unary `-`, `* / %`, `+ - ||`, comparisons (`= != < LIKE IN
 * =~ ...`), `IS [NOT] NULL`, `??`, `BETWEEN`, `NOT`, `AND`, `OR`, `? :`, `AS`; a `BETWEEN`'s bounds stop at
 * `AND`, so `x BETWEEN 1 AND 2 AND y` is `(x BETWEEN 1 AND 2) AND y`. As in PostHog's grammar, `NOT (x)` is a call of
 * not() (`NOT (a) = b` is `not(a) = b`), a sign is part of a number literal only (`-1`, but `-(1)` is a
 * negation), and test/unit/hogql/posthog-parser-oracle.test.ts holds the two parsers to the same trees.
 *
 * It never backtracks: each token is looked at a bounded number of times, so parsing is linear in the
 * text. Every recursion goes through `expression`, which checks the depth cap before descending.
 */

/** Binding powers: an operator binds when its power is above the caller's minimum. */
const BP = {
  alias: 1,
  ternary: 2,
  or: 3,
  and: 4,
  not: 5,
  /** Looser than comparisons and `??`, as PostHog's grammar: `a BETWEEN b AND c = d` is `a BETWEEN b AND (c = d)`. */
  between: 5.5,
  nullish: 6,
  isNull: 7,
  compare: 8,
  additive: 9,
  multiplicative: 10,
  postfix: 12,
} as const;

const COMPARE_OPS: Record<string, CompareOp> = {
  '=': 'eq',
  '==': 'eq',
  '!=': 'notEq',
  '<>': 'notEq',
  '<': 'lt',
  '<=': 'ltEq',
  '>': 'gt',
  '>=': 'gtEq',
  '=~': 'regex',
  '~': 'regex',
  '!~': 'notRegex',
  '=~*': 'iRegex',
  '~*': 'iRegex',
  '!~*': 'notIRegex',
};

/** Words that cannot start an operand (they continue or close one); quote them to use them as names. */
const RESERVED = new Set(['and', 'or', 'in', 'like', 'ilike', 'between', 'is', 'when', 'then', 'else', 'end', 'as']);

const INTERVAL_UNITS: Record<string, string> = {
  second: 'Second',
  minute: 'Minute',
  hour: 'Hour',
  day: 'Day',
  week: 'Week',
  month: 'Month',
  quarter: 'Quarter',
  year: 'Year',
};

export interface ParseResult {
  expr: Expr;
  /** Comments after the last token, for a select column's `-- label`. */
  trailingComments: Comment[];
}

/** Resolves a `{name.path}` placeholder (HogQLQuery's `{filters}`, `{variables.x}`); without one, `{` is an error. */
export type Placeholder = (path: string[], at: number) => Expr;

export class Parser {
  /** Set by a statement parser (select.ts) that accepts placeholders. */
  placeholder?: Placeholder;
  private pos = 0;
  private depth = 0;
  private nodes = 0;

  constructor(
    private readonly tokens: Token[],
    readonly comments: Comment[],
    private readonly limits: Limits,
    private readonly attr: string,
  ) {}

  /** End of the last token of the text. */
  get textEnd(): number {
    return (this.tokens[this.tokens.length - 2] as Token | undefined)?.end ?? 0;
  }

  peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)] as Token;
  }

  next(): Token {
    const tok = this.tokens[this.pos] as Token;
    if (tok.type !== 'eof') this.pos++;
    return tok;
  }

  /** End of the last consumed token. */
  private get lastEnd(): number {
    return this.pos === 0 ? 0 : (this.tokens[this.pos - 1] as Token).end;
  }

  isKeyword(tok: Token, word: string): boolean {
    return tok.type === 'ident' && !tok.quoted && tok.value.toLowerCase() === word;
  }

  private isOp(tok: Token, op: string): boolean {
    return tok.type === 'op' && tok.value === op;
  }

  fail(tok: Token, expected?: string): never {
    const found = tok.type === 'eof' ? 'end of expression' : `${describe(tok)} at position ${tok.start}`;
    throw new ValidationError(
      `HogQL syntax error: unexpected ${found}${expected ? `, expected ${expected}` : ''}.`,
      this.attr,
    );
  }

  private expectOp(op: string): Token {
    const tok = this.next();
    if (!this.isOp(tok, op)) this.fail(tok, `"${op}"`);
    return tok;
  }

  private expectKeyword(word: string): Token {
    const tok = this.next();
    if (!this.isKeyword(tok, word)) this.fail(tok, word.toUpperCase());
    return tok;
  }

  private make<T extends Expr>(node: T): T {
    this.count();
    return node;
  }

  private count(): void {
    this.nodes++;
    if (this.nodes > this.limits.maxNodes) throw nodesExceeded(this.limits, this.attr);
  }

  private span(start: number): Span {
    return [start, this.lastEnd];
  }

  expression(minBp: number): Expr {
    if (this.depth >= this.limits.maxDepth) throw depthExceeded(this.limits, this.attr);
    this.depth++;
    const start = this.peek().start;
    let left = this.prefix();
    let concat: Expr | null = null;
    for (;;) {
      const tok = this.peek();
      const bp = this.infixPower(tok);
      if (bp <= minBp) break;
      left = this.infix(left, tok, bp, start, concat);
      concat = left.kind === 'call' && left.name === 'concat' && this.isOp(tok, '||') ? left : null;
    }
    this.depth--;
    return left;
  }

  private infixPower(tok: Token): number {
    if (tok.type === 'op') {
      switch (tok.value) {
        case '.':
        case '[':
          return BP.postfix;
        case '*':
        case '/':
        case '%':
          return BP.multiplicative;
        case '+':
        case '-':
        case '||':
          return BP.additive;
        case '??':
          return BP.nullish;
        case '?':
          return BP.ternary;
        default:
          return tok.value in COMPARE_OPS ? BP.compare : 0;
      }
    }
    if (tok.type !== 'ident' || tok.quoted) return 0;
    switch (tok.value.toLowerCase()) {
      case 'in':
      case 'like':
      case 'ilike':
        return BP.compare;
      case 'between':
        return BP.between;
      case 'not': {
        const after = this.peek(1);
        if (this.isKeyword(after, 'between')) return BP.between;
        return ['in', 'like', 'ilike'].some((w) => this.isKeyword(after, w)) ? BP.compare : 0;
      }
      case 'is':
        return BP.isNull;
      case 'and':
        return BP.and;
      case 'or':
        return BP.or;
      case 'as':
        return BP.alias;
      default:
        return 0;
    }
  }

  private infix(left: Expr, tok: Token, bp: number, start: number, concat: Expr | null): Expr {
    this.next();
    if (tok.type === 'op') {
      switch (tok.value) {
        case '.':
          return this.access(left, tok);
        case '[': {
          const index = this.expression(BP.alias);
          this.expectOp(']');
          if (left.kind === 'field' && index.kind === 'constant' && typeof index.value === 'string') {
            // The field node is this parse's own, so the path grows in place (linear, not quadratic).
            this.count();
            left.chain.push(index.value);
            left.span = this.span(start);
            return left;
          }
          return this.make({ kind: 'call', name: 'arrayElement', args: [left, index], span: this.span(start) });
        }
        case '*':
        case '/':
        case '%':
        case '+':
        case '-': {
          const right = this.expression(bp);
          const op = tok.value as ArithmeticOp;
          return this.make({ kind: 'arithmetic', op, left, right, span: this.span(start) });
        }
        case '||': {
          const right = this.expression(bp);
          if (concat !== null && concat === left && left.kind === 'call') {
            if (left.args.length >= this.limits.maxArgs) throw tooManyArgs('concat', this.limits, this.attr);
            left.args.push(right);
            left.span = this.span(start);
            return left;
          }
          return this.make({ kind: 'call', name: 'concat', args: [left, right], span: this.span(start) });
        }
        case '??': {
          // Left to right, as PostHog reads it: `a ?? b ?? c` is ifNull(ifNull(a, b), c).
          const right = this.expression(bp);
          return this.make({ kind: 'call', name: 'ifNull', args: [left, right], span: this.span(start) });
        }
        case '?': {
          const then = this.expression(BP.alias);
          this.expectOp(':');
          const otherwise = this.expression(bp - 1);
          return this.make({ kind: 'call', name: 'if', args: [left, then, otherwise], span: this.span(start) });
        }
        default: {
          const right = this.expression(bp);
          return this.make({
            kind: 'compare',
            op: COMPARE_OPS[tok.value] as CompareOp,
            left,
            right,
            span: this.span(start),
          });
        }
      }
    }
    const word = String(tok.value).toLowerCase();
    switch (word) {
      case 'not': {
        const what = String(this.next().value).toLowerCase();
        if (what === 'between') return this.between(left, true, start);
        const op: CompareOp = what === 'in' ? 'notIn' : what === 'like' ? 'notLike' : 'notILike';
        return this.compareRight(left, op, start);
      }
      case 'in':
        return this.compareRight(left, 'in', start);
      case 'like':
        return this.compareRight(left, 'like', start);
      case 'ilike':
        return this.compareRight(left, 'ilike', start);
      case 'between':
        return this.between(left, false, start);
      case 'is': {
        const negated = this.isKeyword(this.peek(), 'not');
        if (negated) this.next();
        const nullTok = this.expectKeyword('null');
        const right = this.make<Expr>({ kind: 'constant', value: null, span: [nullTok.start, nullTok.end] });
        return this.make({ kind: 'compare', op: negated ? 'notEq' : 'eq', left, right, span: this.span(start) });
      }
      case 'and':
      case 'or': {
        const exprs = [left, this.expression(bp)];
        while (this.isKeyword(this.peek(), word)) {
          this.next();
          exprs.push(this.expression(bp));
        }
        return this.make({ kind: word, exprs, span: this.span(start) });
      }
      default: {
        // AS
        const name = this.next();
        if (name.type !== 'ident' && name.type !== 'string') this.fail(name, 'an alias name');
        return this.make({ kind: 'alias', alias: name.value, expr: left, span: this.span(start) });
      }
    }
  }

  private compareRight(left: Expr, op: CompareOp, start: number): Expr {
    if (this.isKeyword(this.peek(), 'cohort')) {
      throw new ValidationError('HogQL: IN COHORT is not supported; use a cohort property filter.', this.attr);
    }
    const right = this.expression(BP.compare);
    return this.make({ kind: 'compare', op, left, right, span: this.span(start) });
  }

  private between(expr: Expr, negated: boolean, start: number): Expr {
    // The low bound runs to AND, the high one over everything that binds tighter than BETWEEN (PostHog's reading).
    const low = this.expression(BP.and);
    this.expectKeyword('and');
    const high = this.expression(BP.between);
    return this.make({ kind: 'between', expr, low, high, negated, span: this.span(start) });
  }

  /** `a.b`: a field path grows; anything else has no members to read. */
  private access(left: Expr, dot: Token): Expr {
    const name = this.next();
    if (name.type !== 'ident') this.fail(name, 'a name after "."');
    if (left.kind !== 'field') {
      throw new ValidationError(
        `HogQL: "." at position ${dot.start} reads a field's member (properties.<key>); it cannot follow a ${left.kind}.`,
        this.attr,
      );
    }
    this.count();
    left.chain.push(name.value);
    left.span = [left.span?.[0] ?? dot.start, name.end];
    return left;
  }

  private prefix(): Expr {
    const tok = this.next();
    const start = tok.start;
    switch (tok.type) {
      case 'number':
      case 'string':
        return this.make({ kind: 'constant', value: tok.value, span: [tok.start, tok.end] });
      case 'eof':
        return this.fail(tok, 'an expression');
      case 'op':
        return this.prefixOp(tok);
      default:
        break;
    }
    if (!tok.quoted) {
      const word = tok.value.toLowerCase();
      const callNext = this.isOp(this.peek(), '(');
      switch (word) {
        case 'null':
        case 'true':
        case 'false':
          return this.make({
            kind: 'constant',
            value: word === 'null' ? null : word === 'true',
            span: [tok.start, tok.end],
          });
        case 'inf':
        case 'infinity':
        case 'nan':
          if (!callNext && !this.isOp(this.peek(), '.')) {
            return this.make({
              kind: 'constant',
              value: word === 'nan' ? Number.NaN : Infinity,
              span: [start, tok.end],
            });
          }
          break;
        case 'not': {
          // `NOT (x)` is a call of not(), as PostHog reads it: `NOT (a) = b` is `not(a) = b`, not `NOT (a = b)`.
          if (callNext) {
            const c = this.call(tok.value, start);
            if (c.kind !== 'call' || c.args.length !== 1 || c.params || c.distinct) return c;
            return { kind: 'not', expr: c.args[0]!, span: c.span };
          }
          const expr = this.expression(BP.not);
          return this.make({ kind: 'not', expr, span: this.span(start) });
        }
        case 'case':
          return this.caseExpr(start);
        case 'interval': {
          const after = this.peek();
          if (after.type === 'number' || after.type === 'string' || (after.type === 'ident' && !callNext)) {
            return this.interval(start);
          }
          break;
        }
        default:
          if (RESERVED.has(word)) this.fail(tok, 'an expression');
      }
    }
    if (this.isOp(this.peek(), '(')) return this.call(tok.value, start);
    return this.make({ kind: 'field', chain: [tok.value], span: [tok.start, tok.end] });
  }

  private prefixOp(tok: Token): Expr {
    const start = tok.start;
    switch (tok.value) {
      case '(': {
        if (this.isOp(this.peek(), ')')) this.fail(this.peek(), 'an expression');
        const first = this.expression(0);
        if (this.isOp(this.peek(), ')')) {
          this.next();
          return first;
        }
        const items = this.list(')', [first], 'Tuple');
        return this.make({ kind: 'tuple', items, span: this.span(start) });
      }
      case '[': {
        const items = this.list(']', [], 'Array');
        return this.make({ kind: 'array', items, span: this.span(start) });
      }
      case '-':
      case '+': {
        // A sign written on a number literal (`-1`, `- 2.5`, `+inf`) is part of the number, as in PostHog's
        // grammar (numberLiteral); anything else (`-(1)`, `-x`, `-(-7)`) is a negation of its operand, never folded.
        const number = this.signedNumber(tok.value === '-' ? -1 : 1, start);
        if (number) return number;
        if (tok.value === '+') return this.fail(this.peek(), 'a number after "+"');
        const expr = this.expression(BP.multiplicative);
        return this.make({ kind: 'negate', expr, span: this.span(start) });
      }
      case '{': {
        if (!this.placeholder) return this.fail(tok, 'an expression');
        const path: string[] = [];
        for (;;) {
          const name = this.next();
          if (name.type !== 'ident') this.fail(name, 'a placeholder name');
          path.push(name.value);
          if (!this.isOp(this.peek(), '.')) break;
          this.next();
        }
        this.expectOp('}');
        return this.make(this.placeholder(path, start));
      }
      case '*':
        throw new ValidationError(
          `HogQL: "*" at position ${start} is only supported as count(*); list the fields you want instead.`,
          this.attr,
        );
      default:
        return this.fail(tok, 'an expression');
    }
  }

  /** The number literal right after a sign, with the sign applied (the infix loop continues after it); else undefined. */
  private signedNumber(sign: 1 | -1, start: number): Expr | undefined {
    const tok = this.peek();
    const word = tok.type === 'ident' && !tok.quoted ? tok.value.toLowerCase() : '';
    const special =
      ['inf', 'infinity', 'nan'].includes(word) && !this.isOp(this.peek(1), '(') && !this.isOp(this.peek(1), '.');
    if (tok.type !== 'number' && !special) return undefined;
    this.next();
    const value = tok.type === 'number' ? tok.value : word === 'nan' ? Number.NaN : Infinity;
    return this.make({ kind: 'constant', value: sign * value, span: [start, tok.end] });
  }

  /**
   * Comma-separated expressions up to `close` (a trailing comma allowed, as HogQL allows it).
   * `(` has been read, and for a tuple its first item too.
   */
  private list(close: string, items: Expr[], what: 'Array' | 'Tuple'): Expr[] {
    if (items.length > 0) {
      const comma = this.next();
      if (!this.isOp(comma, ',')) this.fail(comma, `"," or "${close}"`);
    }
    for (;;) {
      if (this.isOp(this.peek(), close) && (items.length > 0 || what === 'Array')) break;
      if (items.length >= this.limits.maxItems) throw tooManyItems(what, this.limits, this.attr);
      items.push(this.expression(0));
      const tok = this.next();
      if (this.isOp(tok, close)) return items;
      if (!this.isOp(tok, ',')) this.fail(tok, `"," or "${close}"`);
    }
    this.next();
    return items;
  }

  private call(name: string, start: number): Expr {
    let { args, distinct } = this.callArgs(name);
    let params: Expr[] | undefined;
    if (this.isOp(this.peek(), '(')) {
      // `quantile(0.9)(x)`: the first list holds a parametric aggregate's parameters.
      if (distinct) this.fail(this.peek());
      params = args;
      ({ args, distinct } = this.callArgs(name));
    }
    const node: Extract<Expr, { kind: 'call' }> = { kind: 'call', name, args, span: [start, start] };
    if (params !== undefined) node.params = params;
    if (distinct) node.distinct = true;
    node.span = this.span(start);
    return this.make(node);
  }

  private callArgs(name: string): { args: Expr[]; distinct: boolean } {
    this.expectOp('(');
    const args: Expr[] = [];
    let distinct = false;
    const first = this.peek();
    const second = this.peek(1);
    if (this.isKeyword(first, 'distinct') && !this.isOp(second, ')') && !this.isOp(second, ',')) {
      this.next();
      distinct = true;
    } else if (this.isOp(first, '*') && this.isOp(second, ')')) {
      // count(*) is count().
      this.next();
    }
    if (this.isOp(this.peek(), ')')) {
      this.next();
      if (distinct) this.fail(this.tokens[this.pos - 1] as Token, 'an expression');
      return { args, distinct };
    }
    for (;;) {
      if (args.length >= this.limits.maxArgs) throw tooManyArgs(name, this.limits, this.attr);
      args.push(this.expression(0));
      const tok = this.next();
      if (this.isOp(tok, ')')) return { args, distinct };
      if (!this.isOp(tok, ',')) this.fail(tok, '"," or ")"');
      if (this.isOp(this.peek(), ')')) {
        this.next();
        return { args, distinct };
      }
    }
  }

  /**
   * `CASE [x] WHEN c THEN r ... [ELSE e] END` is `multiIf(c, r, ..., e)` (`if(c, r, e)` for one WHEN without
   * a subject); without ELSE, e is null.
   */
  private caseExpr(start: number): Expr {
    if (this.isKeyword(this.peek(), 'end')) this.fail(this.peek(), 'WHEN');
    const subject = this.isKeyword(this.peek(), 'when') ? undefined : this.expression(BP.alias);
    const args: Expr[] = [];
    while (this.isKeyword(this.peek(), 'when')) {
      this.next();
      const whenStart = this.peek().start;
      let cond = this.expression(BP.alias);
      if (subject !== undefined) {
        cond = this.make({ kind: 'compare', op: 'eq', left: subject, right: cond, span: this.span(whenStart) });
      }
      this.expectKeyword('then');
      if (args.length + 2 > this.limits.maxArgs) throw tooManyArgs('multiIf', this.limits, this.attr);
      args.push(cond, this.expression(BP.alias));
    }
    if (args.length === 0) this.fail(this.peek(), 'WHEN');
    if (this.isKeyword(this.peek(), 'else')) {
      this.next();
      args.push(this.expression(BP.alias));
    } else {
      args.push(this.make({ kind: 'constant', value: null, span: [this.lastEnd, this.lastEnd] }));
    }
    this.expectKeyword('end');
    // One WHEN without a subject is if(c, r, e), as PostHog reads it (its printed name is the column's name).
    const name = subject === undefined && args.length === 3 ? 'if' : 'multiIf';
    return this.make({ kind: 'call', name, args, span: this.span(start) });
  }

  /** `INTERVAL 7 DAY` is `toIntervalDay(7)`, as PostHog reads it. */
  private interval(start: number): Expr {
    const amount = this.expression(BP.multiplicative);
    const unitTok = this.next();
    const unit = unitTok.type === 'ident' && !unitTok.quoted ? INTERVAL_UNITS[unitTok.value.toLowerCase()] : undefined;
    if (unit === undefined) this.fail(unitTok, `an interval unit (${Object.keys(INTERVAL_UNITS).join(', ')})`);
    return this.make({ kind: 'call', name: `toInterval${unit}`, args: [amount], span: this.span(start) });
  }
}

function describe(tok: Token): string {
  switch (tok.type) {
    case 'string':
      return `string '${tok.value.length > 20 ? `${tok.value.slice(0, 20)}…` : tok.value}'`;
    case 'number':
      return `number ${tok.value}`;
    default:
      return `"${tok.value.length > 40 ? `${tok.value.slice(0, 40)}…` : tok.value}"`;
  }
}

/** Depth of the finished tree: left-nested chains (`a + b + c ...`) deepen it without recursing. */
export function treeDepth(root: Expr): number {
  let max = 0;
  const stack: [Expr, number][] = [[root, 1]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [e, d] = item;
    if (d > max) max = d;
    for (const child of childrenOf(e)) stack.push([child, d + 1]);
  }
  return max;
}

export function start(text: unknown, attr: string, limits: Limits): Parser {
  if (typeof text !== 'string') throw new ValidationError('HogQL expression must be a string.', attr);
  checkLength(text, limits, attr);
  const { tokens, comments } = tokenize(text, limits, attr);
  if (tokens.length === 1) throw new ValidationError('HogQL expression is empty.', attr);
  return new Parser(tokens, comments, limits, attr);
}

export function finish(parser: Parser, expr: Expr, limits: Limits, attr: string): void {
  const tok = parser.peek();
  if (tok.type !== 'eof') parser.fail(tok, 'end of expression');
  if (treeDepth(expr) > limits.maxDepth) throw depthExceeded(limits, attr);
}

/** Parses one HogQL expression (caps applied; no field or function checks: see check.ts). */
export function parseHogQL(text: unknown, attr: string, limits: Limits = LIMITS): ParseResult {
  const parser = start(text, attr, limits);
  const expr = parser.expression(0);
  finish(parser, expr, limits, attr);
  const end = parser.textEnd;
  return { expr, trailingComments: parser.comments.filter((c) => c.start >= end) };
}

/**
 * A select column of EventsQuery / ActorsQuery: `expr [AS alias] [-- label]`. PostHog's events
 * explorer sends `count() -- Total`; the label is that comment, else the alias. `expr` is returned
 * without its top-level alias.
 */
export function parseSelectColumn(
  text: unknown,
  attr: string,
  limits: Limits = LIMITS,
): { expr: Expr; label?: string } {
  const { expr, trailingComments } = parseHogQL(text, attr, limits);
  const comment = trailingComments.filter((c) => c.marker === '--' && c.text.trim() !== '').pop();
  let inner = expr;
  while (inner.kind === 'alias') inner = inner.expr;
  const label = comment?.text.trim() ?? (expr.kind === 'alias' ? expr.alias : undefined);
  return label === undefined ? { expr: inner } : { expr: inner, label };
}

/** An orderBy entry: `expr [ASC|DESC]` (ASC when absent), as PostHog's events explorer sends it. */
export function parseOrderExpr(text: unknown, attr: string, limits: Limits = LIMITS): OrderExpr {
  const parser = start(text, attr, limits);
  const expr = parser.expression(0);
  let direction: OrderExpr['direction'] = 'ASC';
  const tok = parser.peek();
  if (parser.isKeyword(tok, 'desc') || parser.isKeyword(tok, 'descending')) direction = 'DESC';
  if (direction === 'DESC' || parser.isKeyword(tok, 'asc') || parser.isKeyword(tok, 'ascending')) {
    parser.next();
  }
  finish(parser, expr, limits, attr);
  return { expr, direction };
}
