/** Small AST constructors for the evaluator's tests (the parser is another helper's; these tests do not need it). */
import { expect } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { ArithmeticOp, CompareOp, Constant, Expr } from '#shared/hogql/ast.ts';
import { compileAggregate, evaluateRow, type FieldReader } from '#shared/hogql/evaluate.ts';
import type { EvalContext, HogValue } from '#shared/hogql/values.ts';

export const ATTR = 'query__select__0';
export const ctx: EvalContext = { timezone: 'UTC', now: new Date('2024-01-15T12:34:56Z') };

export type Lit = Constant | Lit[] | Expr;
const isExpr = (v: unknown): v is Expr => typeof v === 'object' && v !== null && !Array.isArray(v) && 'kind' in v;

/** A literal: constants as they are, JS arrays as array nodes, nodes as they are. */
export const lit = (v: Lit): Expr =>
  isExpr(v) ? v : Array.isArray(v) ? { kind: 'array', items: v.map(lit) } : { kind: 'constant', value: v };
export const tuple = (...items: Lit[]): Expr => ({ kind: 'tuple', items: items.map(lit) });
export const field = (...chain: string[]): Expr => ({ kind: 'field', chain });
export const prop = (key: string): Expr => field('properties', key);
export const call = (name: string, ...args: Lit[]): Expr => ({ kind: 'call', name, args: args.map(lit) });
export const cmp = (op: CompareOp, left: Lit, right: Lit): Expr => ({
  kind: 'compare',
  op,
  left: lit(left),
  right: lit(right),
});
export const arith = (op: ArithmeticOp, left: Lit, right: Lit): Expr => ({
  kind: 'arithmetic',
  op,
  left: lit(left),
  right: lit(right),
});
export const and = (...exprs: Lit[]): Expr => ({ kind: 'and', exprs: exprs.map(lit) });
export const or = (...exprs: Lit[]): Expr => ({ kind: 'or', exprs: exprs.map(lit) });
export const not = (expr: Lit): Expr => ({ kind: 'not', expr: lit(expr) });

export type Row = Record<string, HogValue>;
/** Reads `properties.x` as row['properties.x'], missing as null. */
export const reader =
  (row: Row): FieldReader =>
  (chain) =>
    row[chain.join('.')] ?? null;

export const ev = (expr: Expr, row: Row = {}, context: EvalContext = ctx): HogValue =>
  evaluateRow(expr, reader(row), context, ATTR);
/** A function of constant arguments. */
export const fn = (name: string, ...args: Lit[]): HogValue => ev(call(name, ...args));

/** Runs an aggregate expression over rows as one group. */
export function aggregate(expr: Expr, rows: Row[], context: EvalContext = ctx): HogValue {
  const acc = compileAggregate(expr, context, ATTR)();
  for (const row of rows) acc.add(reader(row));
  return acc.result();
}

/** The ValidationError `run` throws, checked to carry the caller's attr. */
export function failure(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).attr).toBe(ATTR);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}
