/**
 * How deep a request's JSON may nest. PostHog's capture parses with serde_json, whose recursion limit
 * is 128; deeper values are refused here on every route too, before anything recursive (valibot,
 * JSON.stringify, property merging) could exhaust the stack on them.
 */
export const MAX_JSON_DEPTH = 128;

/** Whether a parsed JSON value nests arrays/objects more than `max` levels. Iterative, so any depth is safe to check. */
export function nestedDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = value !== null && typeof value === 'object' ? [[value, 1]] : [];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as object)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}
