/**
 * Array functions, 1-based as ClickHouse's. A property holding a JSON array (read as its text)
 * is read as that array.
 */
import { asArray, toNum } from '../convert.ts';
import { sameValue } from '../operators.ts';
import { HogTuple, type HogValue } from '../values.ts';
import { type ScalarFunction, scalar } from './types.ts';

/** The default ClickHouse gives out of range: '' for strings, 0 for numbers; NULL when the items' type is mixed or nullable. */
function defaultOf(items: readonly HogValue[]): HogValue {
  if (items.length === 0) return null;
  if (items.every((v) => typeof v === 'string')) return '';
  if (items.every((v) => typeof v === 'number')) return 0;
  return null;
}

export function arrayElement(container: HogValue, index: HogValue): HogValue {
  const items = asArray(container);
  const n = toNum(index);
  if (items === null || n === null || !Number.isInteger(n)) return null;
  const i = n > 0 ? n - 1 : items.length + n;
  if (n === 0 || i < 0 || i >= items.length) return container instanceof HogTuple ? null : defaultOf(items);
  return items[i] ?? null;
}

export const ARRAYS: ScalarFunction[] = [
  scalar(
    'has',
    2,
    2,
    ([a, x], site) => {
      const items = asArray(a ?? null);
      if (items === null) return null;
      return items.some((v) => sameValue(v, x ?? null, site.ctx.timezone));
    },
    { nullable: false },
  ),
  scalar(
    'indexOf',
    2,
    2,
    ([a, x], site) => {
      const items = asArray(a ?? null);
      if (items === null) return null;
      return items.findIndex((v) => sameValue(v, x ?? null, site.ctx.timezone)) + 1;
    },
    { nullable: false },
  ),
  scalar('arrayElement', 2, 2, ([a, i]) => arrayElement(a ?? null, i ?? null)),
  scalar('array', 0, Number.POSITIVE_INFINITY, (args) => args, { nullable: false }),
  scalar('tuple', 1, Number.POSITIVE_INFINITY, (args) => new HogTuple(args), { nullable: false }),
];
