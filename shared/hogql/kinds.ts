/**
 * The kind of value an expression gives, read from the tree alone (before any row): what a caller
 * that needs a number (a trend's `math_hogql`) checks, so `max(timestamp)` or `any(event)` is a 400
 * naming it rather than a series of zeros. `unknown` where the rows decide: a property keeps its JSON
 * type (a number or numeric text reads as a number), `arrayElement` is its array's item.
 */
import { asDateArithmetic } from './analysis.ts';
import type { Expr } from './ast.ts';
import { findAggregate, findScalar } from './functions/index.ts';

export type ValueKind = 'number' | 'boolean' | 'text' | 'date' | 'datetime' | 'array' | 'tuple' | 'null' | 'unknown';

/** ClickHouse's names of the kinds, for messages. */
export const KIND_NAMES: Record<ValueKind, string> = {
  number: 'a number',
  boolean: 'a Bool',
  text: 'a String',
  date: 'a Date',
  datetime: 'a DateTime',
  array: 'an Array',
  tuple: 'a Tuple',
  null: 'NULL',
  unknown: 'a value of the rows',
};

const FIELD_KINDS: Record<string, ValueKind> = {
  event: 'text',
  distinct_id: 'text',
  uuid: 'text',
  person_id: 'text',
  'person.id': 'text',
  $session_id: 'text',
  elements_chain: 'text',
  timestamp: 'datetime',
  created_at: 'datetime',
  'person.created_at': 'datetime',
  id: 'text',
  is_identified: 'boolean',
};

/** Functions whose kind is fixed by their name (the catalog's canonical names). */
const FIXED: Record<ValueKind, readonly string[]> = {
  number: [
    'count',
    'countIf',
    'sum',
    'sumIf',
    'avg',
    'avgIf',
    'uniq',
    'uniqExact',
    'uniqIf',
    'median',
    'quantile',
    'toInt',
    'toFloat',
    'length',
    'position',
    'JSONExtractInt',
    'JSONExtractFloat',
    'abs',
    'round',
    'floor',
    'ceil',
    'sqrt',
    'log',
    'exp',
    'pow',
    'intDiv',
    'multiply',
    'divide',
    'modulo',
    'negate',
    'toYear',
    'toMonth',
    'toDayOfMonth',
    'toDayOfWeek',
    'toHour',
    'toMinute',
    'dateDiff',
    'toUnixTimestamp',
    'indexOf',
  ],
  boolean: [
    'toBool',
    'isNull',
    'isNotNull',
    'and',
    'or',
    'not',
    'xor',
    'equals',
    'notEquals',
    'less',
    'lessOrEquals',
    'greater',
    'greaterOrEquals',
    'in',
    'notIn',
    'startsWith',
    'endsWith',
    'like',
    'ilike',
    'notLike',
    'notILike',
    'match',
    'empty',
    'notEmpty',
    'JSONExtractBool',
    'JSONHas',
    'has',
  ],
  text: [
    'toString',
    'toUUID',
    'lower',
    'upper',
    'concat',
    'substring',
    'trim',
    'trimLeft',
    'trimRight',
    'replaceAll',
    'replaceOne',
    'replaceRegexpAll',
    'replaceRegexpOne',
    'extract',
    'leftPad',
    'rightPad',
    'repeat',
    'protocol',
    'domain',
    'topLevelDomain',
    'path',
    'cutQueryString',
    'extractURLParameter',
    'JSONExtractString',
    'JSONExtractRaw',
    'formatDateTime',
  ],
  date: ['toDate', 'today', 'toStartOfWeek', 'toStartOfMonth', 'toStartOfQuarter', 'toStartOfYear'],
  datetime: ['toDateTime', 'now', 'toStartOfHour', 'toStartOfDay', 'dateTrunc', 'toTimeZone', 'fromUnixTimestamp'],
  array: ['splitByChar', 'splitByString', 'array'],
  tuple: ['tuple'],
  null: [],
  unknown: [],
};
const FIXED_KIND = new Map<string, ValueKind>(
  Object.entries(FIXED).flatMap(([kind, names]) => names.map((n) => [n, kind as ValueKind] as const)),
);

/** The arguments whose kinds the result shares (the others are conditions, units, defaults' siblings). */
function sharedArgs(name: string, args: Expr[]): Expr[] | null {
  switch (name) {
    case 'if':
      return args.slice(1);
    case 'multiIf':
      return args.filter((_, i) => i % 2 === 1 || i === args.length - 1);
    case 'coalesce':
    case 'ifNull':
    case 'greatest':
    case 'least':
      return args;
    case 'nullIf':
    case 'min':
    case 'max':
    case 'any':
    case 'argMin':
    case 'argMax':
      return args.slice(0, 1);
    case 'dateAdd':
    case 'dateSub':
      return args.slice(2, 3);
    default:
      return null;
  }
}

/** One kind for several values: theirs when they agree (NULL aside), else the rows decide. */
function joined(kinds: ValueKind[]): ValueKind {
  const known = kinds.filter((k) => k !== 'null');
  if (!known.length) return 'null';
  return known.every((k) => k === known[0]) ? (known[0] as ValueKind) : 'unknown';
}

export function kindOf(e: Expr): ValueKind {
  switch (e.kind) {
    case 'constant':
      if (e.value === null) return 'null';
      return typeof e.value === 'number' ? 'number' : typeof e.value === 'boolean' ? 'boolean' : 'text';
    case 'field':
      if (e.chain[0] === 'properties' || (e.chain[0] === 'person' && e.chain[1] === 'properties')) return 'unknown';
      return FIELD_KINDS[e.chain.join('.')] ?? 'unknown';
    case 'array':
      return 'array';
    case 'tuple':
      return 'tuple';
    case 'alias':
      return kindOf(e.expr);
    case 'not':
    case 'and':
    case 'or':
    case 'compare':
    case 'between':
      return 'boolean';
    case 'negate':
      return 'number';
    case 'arithmetic': {
      const dated = asDateArithmetic(e);
      if (dated) return kindOf(dated);
      // A DateTime plus seconds (a Date plus days) stays one; two dates give NULL (operators.ts); numbers otherwise.
      const [l, r] = [kindOf(e.left), kindOf(e.right)];
      const dateLike = (k: ValueKind) => k === 'date' || k === 'datetime';
      if (e.op === '+' || e.op === '-') {
        if (dateLike(l) && dateLike(r)) return 'null';
        if (dateLike(l)) return l;
        if (e.op === '+' && dateLike(r)) return r;
      }
      if (dateLike(l) || dateLike(r)) return 'null';
      return l === 'unknown' || r === 'unknown' ? 'unknown' : 'number';
    }
    case 'call': {
      const name = (findAggregate(e.name) ?? findScalar(e.name))?.name ?? e.name;
      if (name === 'count' && e.distinct) return 'number';
      const fixed = FIXED_KIND.get(name);
      if (fixed) return fixed;
      const shared = sharedArgs(name, e.args);
      return shared ? joined(shared.map(kindOf)) : 'unknown';
    }
  }
}
