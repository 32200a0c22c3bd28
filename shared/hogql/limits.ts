import { ValidationError } from '#shared/errors.ts';

/**
 * Caps on one HogQL expression. A tenant's text reaches the parser, the checker, the evaluator and
 * (later) a SQL printer, all of which walk the tree recursively: the caps keep each of those walks
 * small and make parsing linear in the text, so hostile input costs at most a bounded amount of work.
 * Every cap breaks with a 400 that names it.
 */
export const LIMITS = {
  /** Characters of expression text (PostHog's own editors stay far below). */
  maxLength: 10_000,
  /** Nesting of the tree (and of the parser's recursion, which is checked before it recurses). */
  maxDepth: 64,
  /** Nodes of the tree. */
  maxNodes: 2_000,
  /** Characters of one string literal (a regex has its own, smaller cap in compileRegex). */
  maxStringLength: 2_000,
  /** Arguments of one function call. */
  maxArgs: 100,
  /** Items of one array or tuple literal (`x IN (...)` lists). */
  maxItems: 1_000,
} as const;

export type Limits = { readonly [K in keyof typeof LIMITS]: number };

const fmt = (n: number): string => n.toLocaleString('en-US');

export function checkLength(text: string, limits: Limits, attr: string): void {
  if (text.length > limits.maxLength) {
    throw new ValidationError(
      `HogQL expression is too long: ${fmt(text.length)} characters (the limit is ${fmt(limits.maxLength)}).`,
      attr,
    );
  }
}

export function depthExceeded(limits: Limits, attr: string): ValidationError {
  return new ValidationError(`HogQL expression nests too deeply (the limit is ${limits.maxDepth} levels).`, attr);
}

export function nodesExceeded(limits: Limits, attr: string): ValidationError {
  return new ValidationError(`HogQL expression has too many nodes (the limit is ${fmt(limits.maxNodes)}).`, attr);
}

export function stringTooLong(limits: Limits, attr: string): ValidationError {
  return new ValidationError(
    `HogQL string literal is too long (the limit is ${fmt(limits.maxStringLength)} characters).`,
    attr,
  );
}

export function tooManyArgs(name: string, limits: Limits, attr: string): ValidationError {
  return new ValidationError(`Function "${name}" has too many arguments (the limit is ${limits.maxArgs}).`, attr);
}

export function tooManyItems(what: 'Array' | 'Tuple', limits: Limits, attr: string): ValidationError {
  return new ValidationError(`${what} has too many items (the limit is ${fmt(limits.maxItems)}).`, attr);
}

/**
 * The largest integer a HogQL value carries exactly: values are JS numbers (doubles), whose integers
 * are exact only up to 2^53 - 1. A literal or an integer result beyond it is refused, never rounded.
 */
export const MAX_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;

export function integerNotExact(what: string, attr: string, hint = ''): ValidationError {
  return new ValidationError(
    `HogQL: ${what} is beyond ±(2^53 - 1) = ±${fmt(MAX_EXACT_INTEGER)}, the largest integer carried exactly; it would be rounded.${hint}`,
    attr,
  );
}

/**
 * The most of each unit one interval (`INTERVAL n unit`, dateAdd, dateSub) may move, either way: 400
 * years, the span of the dates HogQL represents (1900-01-01 to 2299-12-31, DateTime64's range). Past
 * it no date can land in range, so the interval is a 400 naming this cap, never a NULL.
 */
export const MAX_INTERVAL: Readonly<Record<string, number>> = {
  second: 12_622_780_800,
  minute: 210_379_680,
  hour: 3_506_328,
  day: 146_097,
  week: 20_871,
  month: 4_800,
  quarter: 1_600,
  year: 400,
};

/** `n` of `unit` (second ... year) within MAX_INTERVAL, else a 400 naming the cap. */
export function checkInterval(n: number, unit: string, attr: string): void {
  const max = MAX_INTERVAL[unit];
  if (max === undefined || Math.abs(n) <= max) return;
  throw new ValidationError(
    `HogQL: an interval of ${String(n).slice(0, 40)} ${unit}s is out of range: at most ${fmt(max)} ${unit}s either way (400 years, the span of the dates HogQL represents, 1900-01-01 to 2299-12-31).`,
    attr,
  );
}
