/**
 * Aggregate functions. NULL arguments are skipped, as ClickHouse skips them. A group with no
 * (non-NULL) values gives: count, uniq 0; sum 0; avg, median, quantile nan (ClickHouse's results
 * for an empty non-Nullable set); min, max, any, argMin, argMax NULL (we cannot name the type's
 * default). Memory: uniq/uniqExact/count(DISTINCT) keep a Set of the distinct values seen, and
 * median/quantile the values seen, so an accumulator holds at most what its rows hold.
 * median/quantile are exact with linear interpolation (ClickHouse's quantile samples, so it is
 * approximate on large sets; on small ones it is this).
 */
import { toNum, truth } from '../convert.ts';
import { integerNotExact } from '../limits.ts';
import { compare } from '../operators.ts';
import { HogDate, HogDateTime, HogTuple, type HogValue } from '../values.ts';
import type { Accumulator, AggregateFunction, Site } from './types.ts';

const ci = { caseInsensitive: true } as const;

/** A key equal for equal values (1 and 1.0 alike; a string '1' differs from the number 1, as types differ in ClickHouse). */
export function valueKey(v: HogValue): string {
  if (v === null) return 'n';
  if (typeof v === 'number') return `#${v}`;
  if (typeof v === 'string') return `s${v}`;
  if (typeof v === 'boolean') return v ? 'b1' : 'b0';
  if (v instanceof HogDateTime) return `t${v.ms}`;
  if (v instanceof HogDate) return `d${v.days}`;
  if (v instanceof HogTuple) return `(${v.items.map(valueKey).join('\u0000')})`;
  return `[${(v as readonly HogValue[]).map(valueKey).join('\u0000')}]`;
}

/** Exact quantile with linear interpolation between closest ranks (shared/trends/math.ts does the same). */
export function quantileOf(values: number[], level: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = level * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo] as number;
  return a + ((sorted[hi] as number) - a) * (rank - lo);
}

type Maker = (params: HogValue[], site: Site) => Accumulator;

const agg = (
  name: string,
  minArgs: number,
  maxArgs: number,
  make: Maker,
  options: Partial<Pick<AggregateFunction, 'caseInsensitive' | 'minParams' | 'maxParams'>> = {},
): AggregateFunction => ({ name, minArgs, maxArgs, make, ...options });

const passes = (cond: HogValue | undefined) => truth(cond ?? null) === true;

function counter(conditional: boolean): Maker {
  return () => {
    let n = 0;
    return {
      add(args) {
        if (conditional) {
          if (!passes(args[args.length - 1])) return;
          if (args.length === 2 && args[0] === null) return;
        } else if (args.length > 0 && args[0] === null) return;
        n++;
      },
      result: () => n,
    };
  };
}

function summer(conditional: boolean): Maker {
  return (_params, site) => {
    let sum = 0;
    return {
      add(args) {
        if (conditional && !passes(args[1])) return;
        const x = toNum(args[0] ?? null);
        if (x === null) return;
        // A sum of integers stays exact (ClickHouse sums them in Int64): past 2^53 it is refused, not rounded.
        if (Number.isSafeInteger(x) && Number.isSafeInteger(sum) && !Number.isSafeInteger(sum + x))
          throw integerNotExact(`the ${site.name} of these integers`, site.attr);
        sum += x;
      },
      result: () => sum,
    };
  };
}

function averager(conditional: boolean): Maker {
  return () => {
    let sum = 0;
    let n = 0;
    return {
      add(args) {
        if (conditional && !passes(args[1])) return;
        const x = toNum(args[0] ?? null);
        if (x === null) return;
        sum += x;
        n++;
      },
      result: () => (n === 0 ? Number.NaN : sum / n),
    };
  };
}

function extreme(want: 1 | -1): Maker {
  return (_params, site) => {
    let best: HogValue = null;
    return {
      add([v]) {
        if (v === null || v === undefined) return;
        if (best === null) best = v;
        else {
          const c = compare(v, best, site.ctx.timezone);
          if (c !== null && Math.sign(c) === want) best = v;
        }
      },
      result: () => best,
    };
  };
}

function argExtreme(want: 1 | -1): Maker {
  return (_params, site) => {
    let best: HogValue = null;
    let arg: HogValue = null;
    let seen = false;
    return {
      add([a, v]) {
        if (v === null || v === undefined) return;
        if (!seen) {
          seen = true;
          best = v;
          arg = a ?? null;
          return;
        }
        const c = compare(v, best, site.ctx.timezone);
        if (c !== null && Math.sign(c) === want) {
          best = v;
          arg = a ?? null;
        }
      },
      result: () => arg,
    };
  };
}

function distinct(conditional: boolean): Maker {
  return () => {
    const seen = new Set<string>();
    return {
      add(args) {
        const values = conditional ? args.slice(0, -1) : args;
        if (conditional && !passes(args[args.length - 1])) return;
        if (values.length === 1) {
          if (values[0] === null || values[0] === undefined) return;
          seen.add(valueKey(values[0]));
        } else seen.add(values.map((v) => valueKey(v ?? null)).join('\u0001'));
      },
      result: () => seen.size,
    };
  };
}

function quantiler(fixed: number | null): Maker {
  return (params, site) => {
    const level = fixed ?? (params.length ? toNum(params[0] ?? null) : 0.5);
    if (level === null || !(level >= 0 && level <= 1)) return site.fail('the level must be a number from 0 to 1.');
    const at = level;
    const values: number[] = [];
    return {
      add([v]) {
        const x = toNum(v ?? null);
        if (x !== null && !Number.isNaN(x)) values.push(x);
      },
      result: () => quantileOf(values, at),
    };
  };
}

const anyMaker: Maker = () => {
  let value: HogValue = null;
  return {
    add([v]) {
      if (value === null && v !== undefined) value = v;
    },
    result: () => value,
  };
};

export const AGGREGATES: AggregateFunction[] = [
  agg('count', 0, 1, counter(false), ci),
  agg('countIf', 1, 2, counter(true)),
  agg('sum', 1, 1, summer(false), ci),
  agg('sumIf', 2, 2, summer(true)),
  agg('avg', 1, 1, averager(false), ci),
  agg('avgIf', 2, 2, averager(true)),
  agg('min', 1, 1, extreme(-1), ci),
  agg('max', 1, 1, extreme(1), ci),
  agg('any', 1, 1, anyMaker, ci),
  agg('argMin', 2, 2, argExtreme(-1)),
  agg('argMax', 2, 2, argExtreme(1)),
  agg('uniq', 1, Number.POSITIVE_INFINITY, distinct(false)),
  agg('uniqExact', 1, Number.POSITIVE_INFINITY, distinct(false)),
  agg('uniqIf', 2, Number.POSITIVE_INFINITY, distinct(true)),
  agg('median', 1, 1, quantiler(0.5)),
  agg('quantile', 1, 1, quantiler(null), { minParams: 1, maxParams: 1 }),
];

/** `count(DISTINCT x)` is uniqExact(x). */
export const COUNT_DISTINCT: AggregateFunction = agg('count', 1, Number.POSITIVE_INFINITY, distinct(false));
