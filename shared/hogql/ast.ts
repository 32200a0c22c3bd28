/**
 * The typed AST of a HogQL expression (PostHog's expression syntax). One tree serves three readers:
 * the row evaluator (the reference), the columnar engine (which evaluates a subtree once per
 * dictionary entry or distinct tuple) and, later, a SQL printer for an external engine. Sugar is
 * removed by the parser so readers see few node kinds: `CASE`/`? :` become `multiIf`/`if` calls,
 * `a || b` becomes `concat`, `x[i]` on a non-property becomes `arrayElement`, `IS [NOT] NULL` is a
 * comparison with null.
 */

/** Character offsets in the source text, for error messages. */
export type Span = readonly [start: number, end: number];

export type Constant = null | boolean | number | string;

export type CompareOp =
  | 'eq'
  | 'notEq'
  | 'lt'
  | 'ltEq'
  | 'gt'
  | 'gtEq'
  | 'like'
  | 'ilike'
  | 'notLike'
  | 'notILike'
  | 'in'
  | 'notIn'
  | 'regex'
  | 'notRegex'
  | 'iRegex'
  | 'notIRegex';

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%';

export type Expr =
  | { kind: 'constant'; value: Constant; span?: Span }
  | { kind: 'array'; items: Expr[]; span?: Span }
  | { kind: 'tuple'; items: Expr[]; span?: Span }
  /**
   * A field path: `['event']`, `['properties', '$os']`, `['properties', '$a', 'b']` (nested JSON),
   * `['person', 'properties', 'email']`, `['person', 'created_at']`. Property keys are taken as
   * written (`properties['a b']` gives `['properties', 'a b']`).
   */
  | { kind: 'field'; chain: string[]; span?: Span }
  /**
   * A function call. `params` holds a parametric aggregate's parameters (`quantile(0.9)(x)`);
   * `distinct` is `count(DISTINCT x)`. Names keep the caller's spelling; lookups are case-sensitive
   * as ClickHouse's, except the case-insensitive SQL ones the function table lists.
   */
  | { kind: 'call'; name: string; args: Expr[]; params?: Expr[]; distinct?: boolean; span?: Span }
  | { kind: 'not'; expr: Expr; span?: Span }
  | { kind: 'and'; exprs: Expr[]; span?: Span }
  | { kind: 'or'; exprs: Expr[]; span?: Span }
  | { kind: 'compare'; op: CompareOp; left: Expr; right: Expr; span?: Span }
  | { kind: 'arithmetic'; op: ArithmeticOp; left: Expr; right: Expr; span?: Span }
  | { kind: 'negate'; expr: Expr; span?: Span }
  | { kind: 'between'; expr: Expr; low: Expr; high: Expr; negated: boolean; span?: Span }
  /** `expr AS name`, or a trailing `-- label` comment on a select column. */
  | { kind: 'alias'; alias: string; expr: Expr; span?: Span };

/** One `orderBy` entry of EventsQuery / ActorsQuery: an expression and its direction. */
export interface OrderExpr {
  expr: Expr;
  direction: 'ASC' | 'DESC';
}
