/**
 * JSONExtract*: the first argument is JSON text, the rest a path of object keys (strings) and
 * 1-based array or object indexes (negative from the end). A missing value, invalid JSON or a
 * value of another type gives the type's default ('' / 0 / false), as ClickHouse does.
 * JSONExtractRaw gives the value's JSON re-serialised compactly (ClickHouse keeps the source spacing).
 */
import { nestedDeeperThan } from '#shared/json.ts';
import { toNum, toText } from '../convert.ts';
import type { HogValue } from '../values.ts';
import { type ScalarFunction, type Site, scalar } from './types.ts';

const MISSING = Symbol('missing');

/** Short texts repeat (the same property value on many rows): parsed once per call site. */
function parse(site: Site, text: string): unknown {
  return site.memo(`json:${text}`, () => parseUncached(text));
}

/** JSON nested deeper than the service's JSON depth cap reads as invalid (re-serialising it would exhaust the stack). */
function parseUncached(text: string): unknown {
  try {
    const value = JSON.parse(text) as unknown;
    return nestedDeeperThan(value) ? MISSING : value;
  } catch {
    return MISSING;
  }
}

export function navigate(root: unknown, path: HogValue[]): unknown {
  let v = root;
  for (const key of path) {
    if (v === MISSING || v === null || typeof v !== 'object') return MISSING;
    if (typeof key === 'string') {
      if (Array.isArray(v) || !Object.hasOwn(v, key)) return MISSING;
      v = (v as Record<string, unknown>)[key];
    } else {
      const n = toNum(key);
      if (n === null || !Number.isInteger(n) || n === 0) return MISSING;
      const items = Array.isArray(v) ? v : Object.values(v);
      const i = n > 0 ? n - 1 : items.length + n;
      if (i < 0 || i >= items.length) return MISSING;
      v = items[i];
    }
  }
  return v;
}

const extractor = (name: string, pick: (v: unknown) => HogValue): ScalarFunction =>
  scalar(name, 1, Number.POSITIVE_INFINITY, ([json, ...path], site) => {
    const text = toText(json ?? null);
    const root = text.length > 256 ? parseUncached(text) : parse(site, text);
    return pick(navigate(root, path));
  });

export const JSON_FUNCTIONS: ScalarFunction[] = [
  extractor('JSONExtractString', (v) => (typeof v === 'string' ? v : '')),
  extractor('JSONExtractInt', (v) =>
    typeof v === 'number' ? Math.trunc(v) : typeof v === 'boolean' ? (v ? 1 : 0) : 0,
  ),
  extractor('JSONExtractFloat', (v) => (typeof v === 'number' ? v : typeof v === 'boolean' ? (v ? 1 : 0) : 0)),
  extractor('JSONExtractBool', (v) => (typeof v === 'boolean' ? v : typeof v === 'number' ? v !== 0 : false)),
  extractor('JSONExtractRaw', (v) => (v === MISSING ? '' : (JSON.stringify(v) ?? ''))),
  extractor('JSONHas', (v) => v !== MISSING),
];
