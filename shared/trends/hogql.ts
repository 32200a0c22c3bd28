/**
 * HogQL expressions where a trend takes them (a `hogql` breakdown, a `type: "hogql"` property filter,
 * `math: "hogql"` with `math_hogql`): parsed and checked once, when the request is read, naming the
 * caller's field. The columnar engine evaluates them (columnar/expressions.ts, columnar/hogql-math.ts).
 */
import { ValidationError } from '#shared/errors.ts';
import { CATALOG, type Expr, fieldsOf, parseExpr } from '#shared/hogql/index.ts';
import { unavailableField } from './columnar/expressions.ts';

/**
 * A trend's expression: a plain one (breakdowns, filters) or an aggregate per bucket (math_hogql).
 * Fields events storage does not keep for trends (`uuid`, `person.created_at`) are a 400 too.
 */
export function parseTrendExpr(text: unknown, attr: string, kind: 'value' | 'aggregate'): Expr {
  const expr = parseExpr(text, attr, {
    scope: 'events',
    aggregates: kind === 'aggregate' ? 'required' : 'forbidden',
    catalog: CATALOG,
  });
  const missing = unavailableField(fieldsOf(expr));
  if (missing !== null)
    throw new ValidationError(
      `HogQL field ${missing} is not available in trends: use event, timestamp, distinct_id, person_id, $session_id, elements_chain, properties.<key> or person.properties.<key>.`,
      attr,
    );
  return expr;
}
