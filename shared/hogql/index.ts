/**
 * HogQL expressions: the public entry points. Every entry takes the caller's `attr` (the request
 * field the text came from) and raises ValidationError (400) naming it; see docs/hogql.md.
 */
import type { Expr, OrderExpr } from './ast.ts';
import { type CheckOptions, checkExpr } from './check.ts';
import { LIMITS } from './limits.ts';
import * as parser from './parser.ts';

export type { ArithmeticOp, CompareOp, Constant, Expr, OrderExpr, Span } from './ast.ts';
export { childrenOf, fieldsOf, hasAggregate, type Needs, needsOf, unalias, walk, withoutSpans } from './analysis.ts';
export {
  type CheckOptions,
  checkExpr,
  type FunctionCatalog,
  type FunctionSignature,
  fieldList,
  SCOPE_COLUMNS,
  type Scope,
} from './check.ts';
export { KIND_NAMES, kindOf, type ValueKind } from './kinds.ts';
export { LIMITS, type Limits } from './limits.ts';
export { compileAggregate, compileScalar, evaluateRow, type FieldReader } from './evaluate.ts';
export { CATALOG } from './functions/index.ts';
export { printConstant, printHogQL, printIdentifier } from './print.ts';
export { type EvalContext, HogDate, HogDateTime, HogTuple, type HogValue } from './values.ts';

/** Parses one expression under the caps; with `check`, also validates it (fields, functions, aggregates). */
export function parseExpr(text: unknown, attr: string, check?: CheckOptions): Expr {
  const { expr } = parser.parseHogQL(text, attr, LIMITS);
  if (check) checkExpr(expr, check, attr);
  return expr;
}

/** A select column (`expr [AS alias] [-- label]`): the expression without its alias, and its label. */
export function parseSelectColumn(text: unknown, attr: string, check?: CheckOptions): { expr: Expr; label?: string } {
  const column = parser.parseSelectColumn(text, attr, LIMITS);
  if (check) checkExpr(column.expr, check, attr);
  return column;
}

/** An orderBy entry (`expr [ASC|DESC]`, ASC when absent). */
export function parseOrderExpr(text: unknown, attr: string, check?: CheckOptions): OrderExpr {
  const order = parser.parseOrderExpr(text, attr, LIMITS);
  if (check) checkExpr(order.expr, check, attr);
  return order;
}
