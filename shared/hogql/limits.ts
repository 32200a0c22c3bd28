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
