import * as v from 'valibot';

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

/** A queued message's body as its schema says; `malformed(reason)` is thrown for one that can never be processed. */
export function parseQueuedMessage<S extends v.GenericSchema>(
  body: string,
  schema: S,
  malformed: (reason: string) => Error,
): v.InferOutput<S> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw malformed('not JSON');
  }
  const result = v.safeParse(schema, json);
  if (!result.success) throw malformed(result.issues[0].message);
  return result.output;
}
