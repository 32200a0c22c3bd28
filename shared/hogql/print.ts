import type { CompareOp, Constant, Expr } from './ast.ts';

/**
 * AST -> canonical HogQL text. Parsing the output gives back the same tree (spans aside), so it is
 * what a stored or echoed expression is normalised to. It is also the seam a SQL printer for an
 * external engine follows: one function per node kind, parentheses from the precedence table, every
 * literal escaped here and nowhere else.
 */

const COMPARE_TEXT: Record<CompareOp, string> = {
  eq: '=',
  notEq: '!=',
  lt: '<',
  ltEq: '<=',
  gt: '>',
  gtEq: '>=',
  like: 'LIKE',
  ilike: 'ILIKE',
  notLike: 'NOT LIKE',
  notILike: 'NOT ILIKE',
  in: 'IN',
  notIn: 'NOT IN',
  regex: '=~',
  notRegex: '!~',
  iRegex: '=~*',
  notIRegex: '!~*',
};

/** The parser's binding powers (parser.ts), as the printer needs them. */
const PREC = {
  alias: 1,
  or: 3,
  and: 4,
  not: 5,
  between: 5.5,
  compare: 8,
  additive: 9,
  multiplicative: 10,
  unary: 11,
  atom: 13,
};

/** Names that the parser reads as keywords or literals where an operand starts. */
const WORDS = new Set([
  'and',
  'or',
  'not',
  'in',
  'like',
  'ilike',
  'between',
  'is',
  'when',
  'then',
  'else',
  'end',
  'as',
  'case',
  'null',
  'true',
  'false',
  'inf',
  'infinity',
  'nan',
  'interval',
  'distinct',
  'asc',
  'ascending',
  'desc',
  'descending',
]);

function precedence(e: Expr): number {
  switch (e.kind) {
    case 'alias':
      return PREC.alias;
    case 'or':
      return PREC.or;
    case 'and':
      return PREC.and;
    case 'not':
      return PREC.not;
    case 'compare':
      return PREC.compare;
    case 'between':
      return PREC.between;
    case 'arithmetic':
      return e.op === '+' || e.op === '-' ? PREC.additive : PREC.multiplicative;
    case 'negate':
      return PREC.unary;
    case 'constant':
      // A negative number reads as unary minus where it stands.
      return typeof e.value === 'number' && (e.value < 0 || Object.is(e.value, -0)) ? PREC.unary : PREC.atom;
    default:
      return PREC.atom;
  }
}

/** Prints `e`, in parentheses unless it binds at least as tightly as `min`. */
function operand(e: Expr, min: number): string {
  const text = printHogQL(e);
  return precedence(e) >= min ? text : `(${text})`;
}

export function printIdentifier(name: string, first = true): string {
  if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) && !(first && WORDS.has(name.toLowerCase()))) return name;
  return `\`${escapeText(name, '`')}\``;
}

/** PostHog's escapes (lexer.ts) where it has one; every other character as it is, the quote doubled in a backquoted name. */
const TEXT_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
  '\u0007': '\\a',
  '\v': '\\v',
};

function escapeText(text: string, quote: string): string {
  let out = '';
  for (const c of text) {
    if (Object.hasOwn(TEXT_ESCAPES, c)) out += TEXT_ESCAPES[c];
    else if (c === quote) out += quote === '`' ? '``' : `\\${quote}`;
    else out += c;
  }
  return out;
}

export function printConstant(value: Constant): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return `'${escapeText(value, "'")}'`;
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  if (Object.is(value, -0)) return '-0';
  // A float with an integer value past 2^53 (`1e20`) prints as a float: its digits would read as an integer literal, which is refused.
  if (Number.isInteger(value) && !Number.isSafeInteger(value)) return value.toExponential();
  return String(value);
}

function list(items: Expr[]): string {
  return items.map((i) => printHogQL(i)).join(', ');
}

export function printHogQL(e: Expr): string {
  switch (e.kind) {
    case 'constant':
      return printConstant(e.value);
    case 'array':
      return `[${list(e.items)}]`;
    case 'tuple':
      return e.items.length === 1 ? `(${list(e.items)},)` : `(${list(e.items)})`;
    case 'field':
      return e.chain.map((s, i) => printIdentifier(s, i === 0)).join('.');
    case 'call': {
      const name = printIdentifier(e.name);
      const args = `(${e.distinct ? 'DISTINCT ' : ''}${list(e.args)})`;
      return e.params ? `${name}(${list(e.params)})${args}` : `${name}${args}`;
    }
    case 'not': {
      // `NOT (` starts a call of not() (parser.ts): an operand that starts with `(` is wrapped once more.
      const text = operand(e.expr, PREC.not);
      return precedence(e.expr) >= PREC.not && text.startsWith('(') ? `NOT (${text})` : `NOT ${text}`;
    }
    case 'and':
    case 'or': {
      // A nested AND/OR keeps its parentheses: the parser flattens only one chain.
      const p = PREC[e.kind] + 1;
      return e.exprs.map((x) => operand(x, p)).join(e.kind === 'and' ? ' AND ' : ' OR ');
    }
    case 'compare':
      return `${operand(e.left, PREC.compare)} ${COMPARE_TEXT[e.op]} ${operand(e.right, PREC.compare + 1)}`;
    case 'arithmetic': {
      const p = precedence(e);
      return `${operand(e.left, p)} ${e.op} ${operand(e.right, p + 1)}`;
    }
    case 'negate':
      // `-1` is a number (parser.ts): a negated number keeps its parentheses.
      return e.expr.kind === 'constant' && typeof e.expr.value === 'number'
        ? `-(${printHogQL(e.expr)})`
        : `-${operand(e.expr, PREC.atom)}`;
    case 'between':
      return `${operand(e.expr, PREC.between)} ${e.negated ? 'NOT BETWEEN' : 'BETWEEN'} ${operand(e.low, PREC.between + 1)} AND ${operand(e.high, PREC.between + 1)}`;
    case 'alias':
      return `${operand(e.expr, PREC.alias)} AS ${printIdentifier(e.alias)}`;
  }
}
