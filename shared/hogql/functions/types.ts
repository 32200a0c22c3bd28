/** What the function table is made of, and the output caps every function keeps. */
import { ValidationError } from '#shared/errors.ts';
import type { EvalContext, HogValue } from '../values.ts';

/** Longest string any function produces (concat, pads, replacements, formatDateTime...). */
export const MAX_STRING_OUTPUT = 65_536;
/** Most items an array-producing function (splitByChar, splitByString) returns. */
export const MAX_ARRAY_OUTPUT = 10_000;

/** One call site of a function: its context, the caller's attr, and a small cache for compiled patterns. */
export class Site {
  private cache = new Map<string, unknown>();
  constructor(
    readonly name: string,
    readonly ctx: EvalContext,
    readonly attr: string,
  ) {}

  /** A value derived from `key` once (a regex, a LIKE matcher, a time zone check); a few kept per site. */
  memo<T>(key: string, make: (key: string) => T): T {
    const hit = this.cache.get(key);
    if (hit !== undefined || this.cache.has(key)) return hit as T;
    const made = make(key);
    if (this.cache.size >= 64) this.cache.clear();
    this.cache.set(key, made);
    return made;
  }

  fail(detail: string): never {
    throw new ValidationError(`${this.name}: ${detail}`, this.attr);
  }

  /** A string result, refused past the output cap. */
  text(s: string): string {
    if (s.length > MAX_STRING_OUTPUT)
      this.fail(`the result would be longer than ${MAX_STRING_OUTPUT} characters, the cap on any function's output.`);
    return s;
  }
}

export interface ScalarFunction {
  name: string;
  minArgs: number;
  maxArgs: number;
  /** SQL-style names PostHog (and ClickHouse) accept in any case. */
  caseInsensitive?: boolean;
  /** Most functions return NULL when any argument is NULL; those that look at NULLs say false. */
  nullable?: false;
  /** Arguments that are patterns or zones: checked once when constant, so a bad one fails before any row. */
  constantArgs?: number[];
  /** Depends on nothing but its arguments and the context (so constant arguments fold). */
  impl(args: HogValue[], site: Site): HogValue;
}

export interface Accumulator {
  add(args: HogValue[]): void;
  result(): HogValue;
}

export interface AggregateFunction {
  name: string;
  minArgs: number;
  maxArgs: number;
  minParams?: number;
  maxParams?: number;
  caseInsensitive?: boolean;
  /** One group's accumulator; `params` are a parametric aggregate's constants (quantile's level). */
  make(params: HogValue[], site: Site): Accumulator;
}

export const scalar = (
  name: string,
  minArgs: number,
  maxArgs: number,
  impl: ScalarFunction['impl'],
  options: Partial<Pick<ScalarFunction, 'caseInsensitive' | 'nullable' | 'constantArgs'>> = {},
): ScalarFunction => ({ name, minArgs, maxArgs, impl, ...options });
