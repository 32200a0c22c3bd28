/**
 * The HogQL function table: every supported function with its arity and implementation. Names are
 * case-sensitive as in ClickHouse, except the SQL-style ones PostHog and ClickHouse accept in any
 * case (count, sum, avg, min, max, if, coalesce, lower, round, now, dateDiff...), marked
 * `caseInsensitive`. The catalog's shape is the one hogql-core's check.ts declares.
 */
import { AGGREGATES, COUNT_DISTINCT } from './aggregates.ts';
import { ARRAYS } from './arrays.ts';
import { CONDITIONAL } from './conditional.ts';
import { CONVERSION } from './conversion.ts';
import { DATES } from './dates.ts';
import { JSON_FUNCTIONS } from './json.ts';
import { MATH } from './math.ts';
import { STRINGS } from './strings.ts';
import type { FunctionCatalog, FunctionSignature } from '../check.ts';
import type { AggregateFunction, ScalarFunction } from './types.ts';
import { URLS } from './url.ts';

export type { Accumulator, AggregateFunction, ScalarFunction } from './types.ts';
export { MAX_ARRAY_OUTPUT, MAX_STRING_OUTPUT, Site } from './types.ts';
export { COUNT_DISTINCT };

export const SCALAR_FUNCTIONS: readonly ScalarFunction[] = [
  ...CONVERSION,
  ...CONDITIONAL,
  ...STRINGS,
  ...URLS,
  ...JSON_FUNCTIONS,
  ...MATH,
  ...DATES,
  ...ARRAYS,
];
export const AGGREGATE_FUNCTIONS: readonly AggregateFunction[] = AGGREGATES;

function table<T extends { name: string; caseInsensitive?: boolean }>(items: readonly T[]) {
  const exact = new Map<string, T>();
  const folded = new Map<string, T>();
  for (const f of items) {
    if (exact.has(f.name)) throw new Error(`Function ${f.name} is listed twice.`);
    exact.set(f.name, f);
    if (f.caseInsensitive) folded.set(f.name.toLowerCase(), f);
  }
  return (name: string): T | undefined => exact.get(name) ?? folded.get(name.toLowerCase());
}

export const findScalar = table(SCALAR_FUNCTIONS);
export const findAggregate = table(AGGREGATE_FUNCTIONS);

const signature = (f: ScalarFunction | AggregateFunction | undefined): FunctionSignature | undefined =>
  f && {
    name: f.name,
    minArgs: f.minArgs,
    maxArgs: f.maxArgs,
    ...('minParams' in f && f.minParams !== undefined ? { minParams: f.minParams, maxParams: f.maxParams } : {}),
  };

const NAMES = [...SCALAR_FUNCTIONS, ...AGGREGATE_FUNCTIONS].map((f) => f.name).sort();

export const CATALOG: FunctionCatalog = {
  scalar: (name) => signature(findScalar(name)),
  aggregate: (name) => signature(findAggregate(name)),
  names: () => [...NAMES],
};
