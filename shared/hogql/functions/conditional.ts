/**
 * Conditionals, NULL tests and the function forms of the operators. `if`, `multiIf`, `coalesce`,
 * `and`, `or` are evaluated lazily by evaluate.ts (a branch not taken is not computed, so it
 * cannot fail); the plain implementations here are used when all arguments are constants.
 */
import { truth } from '../convert.ts';
import {
  and3,
  compare,
  divide,
  equals,
  inList,
  minus,
  modulo,
  multiply,
  negate,
  not3,
  or3,
  orderTest,
  plus,
} from '../operators.ts';
import type { HogValue } from '../values.ts';
import { type ScalarFunction, scalar } from './types.ts';

const ci = { caseInsensitive: true } as const;
const nulls = { nullable: false } as const;

export function multiIf(args: HogValue[]): HogValue {
  for (let i = 0; i + 1 < args.length; i += 2) if (truth(args[i] ?? null) === true) return args[i + 1] ?? null;
  return args[args.length - 1] ?? null;
}

const ordered =
  (op: 'lt' | 'ltEq' | 'gt' | 'gtEq' | 'notEq') =>
  ([a, b]: HogValue[], site: { ctx: { timezone: string } }) => {
    const c = compare(a ?? null, b ?? null, site.ctx.timezone);
    return c === null ? null : orderTest(op)(c);
  };

export const CONDITIONAL: ScalarFunction[] = [
  scalar('if', 3, 3, ([c, a, b]) => (truth(c ?? null) === true ? (a ?? null) : (b ?? null)), { ...ci, ...nulls }),
  scalar('multiIf', 3, Number.POSITIVE_INFINITY, multiIf, nulls),
  scalar('coalesce', 1, Number.POSITIVE_INFINITY, (args) => args.find((v) => v !== null) ?? null, { ...ci, ...nulls }),
  scalar('ifNull', 2, 2, ([a, b]) => (a === null || a === undefined ? (b ?? null) : a), { ...ci, ...nulls }),
  scalar(
    'nullIf',
    2,
    2,
    ([a, b], site) => (a === null || a === undefined ? null : equals(a, b ?? null, site.ctx.timezone) ? null : a),
    { ...ci, ...nulls },
  ),
  scalar('isNull', 1, 1, ([a]) => a === null, { ...ci, ...nulls }),
  scalar('isNotNull', 1, 1, ([a]) => a !== null, { ...ci, ...nulls }),
  scalar('and', 2, Number.POSITIVE_INFINITY, and3, nulls),
  scalar('or', 2, Number.POSITIVE_INFINITY, or3, nulls),
  scalar('not', 1, 1, ([a]) => not3(a ?? null), nulls),
  scalar('xor', 2, Number.POSITIVE_INFINITY, (args) => {
    let acc = false;
    for (const v of args) {
      const t = truth(v);
      if (t === null) return null;
      acc = acc !== t;
    }
    return acc;
  }),
  scalar('equals', 2, 2, ([a, b], site) => equals(a ?? null, b ?? null, site.ctx.timezone)),
  scalar('notEquals', 2, 2, ordered('notEq')),
  scalar('less', 2, 2, ordered('lt')),
  scalar('lessOrEquals', 2, 2, ordered('ltEq')),
  scalar('greater', 2, 2, ordered('gt')),
  scalar('greaterOrEquals', 2, 2, ordered('gtEq')),
  scalar('in', 2, 2, ([a, b], site) => inList(a ?? null, b ?? null, site.ctx.timezone), nulls),
  scalar('notIn', 2, 2, ([a, b], site) => a !== null && !inList(a ?? null, b ?? null, site.ctx.timezone), nulls),
  scalar('plus', 2, 2, ([a, b], site) => plus(a ?? null, b ?? null, site.attr)),
  scalar('minus', 2, 2, ([a, b], site) => minus(a ?? null, b ?? null, site.attr)),
  scalar('multiply', 2, 2, ([a, b], site) => multiply(a ?? null, b ?? null, site.attr)),
  scalar('divide', 2, 2, ([a, b]) => divide(a ?? null, b ?? null)),
  scalar('modulo', 2, 2, ([a, b], site) => modulo(a ?? null, b ?? null, site.attr)),
  scalar('negate', 1, 1, ([a]) => negate(a ?? null)),
];
