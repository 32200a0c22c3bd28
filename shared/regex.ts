/**
 * Users' regexes under RE2's rules, as ClickHouse's match() reads them (inline flags like `(?i)`; no
 * backreferences or lookarounds), run by re2js (a port of RE2) so matching takes time linear in the
 * text whatever the pattern. re2js is loaded by dynamic import(), once per container, before the
 * first handler of a function that can compile a regex runs (shared/preload.ts): its ~60 ms load
 * stays out of module init. What is ours: the caps and the 400s; HogQL's `=~*` reaches here as `(?i)`
 * (shared/hogql/evaluate.ts), PostHog's own translation.
 */
import type { RE2JS } from 're2js';
import { ValidationError } from './errors.ts';
import { loadedBeforeHandling } from './preload.ts';

export type Regex = RE2JS;

let engine: typeof RE2JS | undefined;

/** Loads re2js (idempotent). The pipelines call it through shared/preload.ts; unit tests' setup calls it. */
export async function loadRegexEngine(): Promise<void> {
  engine ??= (await import('re2js')).RE2JS;
}

/** Longest regex pattern accepted. */
export const MAX_REGEX_LENGTH = 1_000;
/**
 * Largest compiled regex, in RE2 instructions. Matching costs up to (instructions x text length) when
 * the engine falls back from its DFA, and counted repetition multiplies a short pattern's size
 * (`(\w){999}` is 3,000): twice the length cap admits any pattern without such expansion.
 */
export const MAX_REGEX_PROGRAM = 2_000;

/** A user's pattern, compiled; refused patterns are a 400 on `attr`. re2js is loaded before handlers run wherever this is bundled. */
export const compileRegex = /* @__PURE__ */ loadedBeforeHandling(loadRegexEngine, compileWithEngine);

function compileWithEngine(pattern: string, attr: string | null): Regex {
  if (!engine) throw new Error('compileRegex before loadRegexEngine(): the pipeline preloads it (shared/preload.ts)');
  if (pattern.length > MAX_REGEX_LENGTH)
    throw new ValidationError(
      `Invalid regular expression: patterns are limited to ${MAX_REGEX_LENGTH} characters.`,
      attr,
    );
  let regex: RE2JS;
  try {
    regex = engine.compile(pattern);
  } catch (error) {
    throw new ValidationError(
      `Invalid regular expression: ${(error as Error).message} (RE2 syntax: no backreferences or lookarounds).`,
      attr,
    );
  }
  const size = (regex.re2Input.prog as { numInst(): number }).numInst();
  if (size > MAX_REGEX_PROGRAM)
    throw new ValidationError(
      `Invalid regular expression: too complex (compiles to ${size} RE2 instructions, the limit is ${MAX_REGEX_PROGRAM}; counted repetition like {n} multiplies a pattern's size).`,
      attr,
    );
  return regex;
}
