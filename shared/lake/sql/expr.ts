/**
 * HogQL expressions (shared/hogql/ast.ts) printed as SQL over the lake's events, per dialect. It
 * follows shared/hogql/print.ts's seam (one case per node kind, literals escaped in one place) and
 * prints only what it can print faithfully: every other construct is refused by name, never
 * passed through. No input reaches the SQL as text except through stringLiteral, numberLiteral and
 * identifier; every operator has spaces or parentheses around it, so no two tokens fuse.
 */
import type { CompareOp, Expr } from '../../hogql/ast.ts';
import { printHogQL } from '../../hogql/print.ts';
import { PROPERTY_COLUMNS } from '../rows.ts';
import { type Dialect, identifier, LakeSqlUnsupported, numberLiteral, stringLiteral } from './dialect.ts';

/** Event fields a HogQL expression may read, and their columns. */
const FIELDS: Record<string, string> = {
  uuid: 'uuid',
  event: 'event',
  timestamp: 'timestamp',
  distinct_id: 'distinct_id',
  person_id: 'person_id',
  $session_id: 'session_id',
  $group_0: 'group_0',
  $group_1: 'group_1',
  $group_2: 'group_2',
  $group_3: 'group_3',
  $group_4: 'group_4',
};

/** An event property's text: its own column when it has one, else read from the JSON. */
export function propertyText(key: string, d: Dialect): string {
  const column = Object.hasOwn(PROPERTY_COLUMNS, key) ? PROPERTY_COLUMNS[key] : undefined;
  return column ? identifier(column) : d.jsonText(key);
}

/** An event field's column, or undefined where the chain names none. */
function fieldColumn(chain: string[], d: Dialect): string | undefined {
  const [head, key, ...rest] = chain;
  if (head === 'properties' && key !== undefined && rest.length === 0) return propertyText(key, d);
  if (chain.length === 1 && head !== undefined && Object.hasOwn(FIELDS, head)) return identifier(FIELDS[head]!);
  return undefined;
}

function field(chain: string[], d: Dialect): string {
  const column = fieldColumn(chain, d);
  if (column === undefined) throw new LakeSqlUnsupported(`the field ${chain.join('.')}`);
  return column;
}

const COMPARE: Partial<Record<CompareOp, string>> = { eq: '=', notEq: '<>', lt: '<', ltEq: '<=', gt: '>', gtEq: '>=' };

/** Functions printed the same in both dialects (the name is HogQL's, case-sensitive as ClickHouse's). */
const SAME: Record<string, { sql: string; arity: [number, number] }> = {
  lower: { sql: 'lower', arity: [1, 1] },
  upper: { sql: 'upper', arity: [1, 1] },
  length: { sql: 'length', arity: [1, 1] },
  coalesce: { sql: 'coalesce', arity: [1, 16] },
  concat: { sql: 'concat', arity: [1, 16] },
};

/**
 * HogQL's toFloat: of text, the dialect's parse; of a JSON boolean property, 1 or 0 (the property
 * type rule reads `true` as a boolean, which toFloat makes a number). The JSON is read again only
 * where the text is `true`/`false` (a boolean or that string); a column's property keeps text only,
 * so its booleans cannot be told from strings.
 */
function toFloat(arg: Expr, text: string, d: Dialect): string {
  const [head, key, ...rest] = arg.kind === 'field' ? arg.chain : [];
  if (head !== 'properties' || key === undefined || rest.length || Object.hasOwn(PROPERTY_COLUMNS, key))
    return d.toFloat(text);
  const boolean = `(CASE ${d.jsonRaw(key)} WHEN 'true' THEN CAST(1 AS double) WHEN 'false' THEN CAST(0 AS double) END)`;
  return `(CASE WHEN ${text} IN ('true', 'false') THEN ${boolean} ELSE ${d.toFloat(text)} END)`;
}

function call(e: Extract<Expr, { kind: 'call' }>, d: Dialect): string {
  if (e.params?.length || e.distinct) throw new LakeSqlUnsupported(`the function ${e.name}`);
  const args = e.args.map((a) => printLakeExpr(a, d));
  const same = Object.hasOwn(SAME, e.name) ? SAME[e.name] : undefined;
  if (same && args.length >= same.arity[0] && args.length <= same.arity[1]) return `${same.sql}(${args.join(', ')})`;
  if ((e.name === 'toFloat' || e.name === 'toFloat64OrNull') && args.length === 1)
    return toFloat(e.args[0]!, args[0]!, d);
  if (e.name === 'toString' && args.length === 1) return `CAST(${args[0]} AS varchar)`;
  if (e.name === 'isNull' && args.length === 1) return `(${args[0]} IS NULL)`;
  if (e.name === 'isNotNull' && args.length === 1) return `(${args[0]} IS NOT NULL)`;
  if (e.name === 'positionCaseInsensitive' && args.length === 2) return `strpos(lower(${args[0]}), lower(${args[1]}))`;
  if (e.name === 'if' && args.length === 3) return `(CASE WHEN ${args[0]} THEN ${args[1]} ELSE ${args[2]} END)`;
  throw new LakeSqlUnsupported(`the function ${e.name}`);
}

function items(e: Expr, d: Dialect): string {
  if (e.kind !== 'tuple' && e.kind !== 'array') return `(${printLakeExpr(e, d)})`;
  if (!e.items.length) throw new LakeSqlUnsupported('an empty IN list');
  return `(${e.items.map((i) => printLakeExpr(i, d)).join(', ')})`;
}

/** The values of a list of text constants (none NULL), else undefined. */
function textList(e: Expr): string[] | undefined {
  if ((e.kind !== 'tuple' && e.kind !== 'array') || !e.items.length) return undefined;
  const texts = e.items.map((i) => (i.kind === 'constant' && typeof i.value === 'string' ? i.value : undefined));
  return texts.every((t) => t !== undefined) ? (texts as string[]) : undefined;
}

const isTimestampField = (e: Expr) => e.kind === 'field' && e.chain.length === 1 && e.chain[0] === 'timestamp';

function compare(e: Extract<Expr, { kind: 'compare' }>, d: Dialect): string {
  const isNull = (x: Expr) => x.kind === 'constant' && x.value === null;
  if ((e.op === 'eq' || e.op === 'notEq') && (isNull(e.left) || isNull(e.right))) {
    const other = isNull(e.right) ? e.left : e.right;
    return `(${printLakeExpr(other, d)} IS ${e.op === 'eq' ? '' : 'NOT '}NULL)`;
  }
  const left = printLakeExpr(e.left, d);
  const op = COMPARE[e.op];
  if (op) return `(${left} ${op} ${printLakeExpr(e.right, d)})`;
  switch (e.op) {
    case 'in': {
      const texts = textList(e.right);
      // An event column of text (not timestamp, not what a statement printer's extend made of the field) against texts.
      if (texts && e.left.kind === 'field' && !isTimestampField(e.left) && left === fieldColumn(e.left.chain, d))
        return d.inTexts(left, texts.map(stringLiteral));
      return `(${left} IN ${items(e.right, d)})`;
    }
    case 'notIn':
      return `(${left} NOT IN ${items(e.right, d)})`;
    case 'like':
      return `(${left} LIKE ${printLakeExpr(e.right, d)})`;
    case 'notLike':
      return `(NOT (${left} LIKE ${printLakeExpr(e.right, d)}))`;
    case 'ilike':
      return d.ilike(left, printLakeExpr(e.right, d));
    case 'notILike':
      return `(NOT ${d.ilike(left, printLakeExpr(e.right, d))})`;
    case 'regex':
      return d.regex(left, printLakeExpr(e.right, d));
    case 'notRegex':
      return `(NOT ${d.regex(left, printLakeExpr(e.right, d))})`;
    default:
      throw new LakeSqlUnsupported(`the operator ${printHogQL(e)}`);
  }
}

export function printLakeExpr(e: Expr, d: Dialect): string {
  const extended = d.extend?.(e);
  if (extended !== undefined) return extended;
  switch (e.kind) {
    case 'constant': {
      const v = e.value;
      if (v === null) return 'NULL';
      if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
      if (typeof v === 'string') return stringLiteral(v);
      return numberLiteral(v);
    }
    case 'field':
      return field(e.chain, d);
    case 'call':
      return call(e, d);
    case 'not':
      return `(NOT ${printLakeExpr(e.expr, d)})`;
    case 'and':
    case 'or':
      if (!e.exprs.length) return e.kind === 'and' ? 'TRUE' : 'FALSE';
      return `(${e.exprs.map((x) => printLakeExpr(x, d)).join(e.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'compare':
      return compare(e, d);
    case 'arithmetic':
      if (e.op === '%') throw new LakeSqlUnsupported('the operator %');
      // HogQL divides as floats; Trino divides integers as integers.
      if (e.op === '/') return `(CAST(${printLakeExpr(e.left, d)} AS double) / ${printLakeExpr(e.right, d)})`;
      return `(${printLakeExpr(e.left, d)} ${e.op} ${printLakeExpr(e.right, d)})`;
    case 'negate':
      // The operand in parentheses of its own: `-` next to a `-` it starts with would open a comment.
      return `(-(${printLakeExpr(e.expr, d)}))`;
    case 'between':
      return `(${printLakeExpr(e.expr, d)} ${e.negated ? 'NOT ' : ''}BETWEEN ${printLakeExpr(e.low, d)} AND ${printLakeExpr(e.high, d)})`;
    default:
      throw new LakeSqlUnsupported(`the expression ${printHogQL(e)}`);
  }
}
