/** Pure person-property rules from PostHog's ingestion (posthog-semantics §7.5). */

export interface PersonUpdates {
  set: Record<string, unknown>;
  setOnce: Record<string, unknown>;
  unset: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `$set`/`$set_once`/`$unset` of an event (capture already merged root-level ones into properties). */
export function personUpdatesOf(properties: Record<string, unknown>): PersonUpdates {
  const unset = properties.$unset;
  return {
    set: isObject(properties.$set) ? properties.$set : {},
    setOnce: isObject(properties.$set_once) ? properties.$set_once : {},
    unset: Array.isArray(unset)
      ? unset.map(String)
      : isObject(unset)
        ? Object.keys(unset)
        : typeof unset === 'string'
          ? [unset]
          : [],
  };
}

export function hasUpdates(u: PersonUpdates): boolean {
  return Object.keys(u.set).length > 0 || Object.keys(u.setOnce).length > 0 || u.unset.length > 0;
}

/** `$set_once` only fills absent keys, `$set` overwrites, then `$unset` removes. Returns the keys that changed. */
export function applyPersonUpdates(
  current: Record<string, unknown>,
  u: PersonUpdates,
): { properties: Record<string, unknown>; changed: string[] } {
  const next: Record<string, unknown> = { ...current };
  // Property names are data: `__proto__`, `constructor`, `toString`... are stored like any other key,
  // never inherited from Object.prototype nor turned into a prototype by assignment.
  const put = (k: string, v: unknown) =>
    Object.defineProperty(next, k, { value: v, enumerable: true, writable: true, configurable: true });
  const own = (o: Record<string, unknown>, k: string) => (Object.hasOwn(o, k) ? o[k] : undefined);
  for (const [k, v] of Object.entries(u.setOnce)) if (!Object.hasOwn(next, k)) put(k, v);
  for (const [k, v] of Object.entries(u.set)) put(k, v);
  for (const k of u.unset) delete next[k];
  const keys = new Set([...Object.keys(current), ...Object.keys(next)]);
  const changed = [...keys].filter(
    (k) =>
      Object.hasOwn(current, k) !== Object.hasOwn(next, k) ||
      JSON.stringify(own(current, k)) !== JSON.stringify(own(next, k)),
  );
  return { properties: next, changed };
}

/** Merged properties: the target (identified user) wins on conflicts, nothing of the source is lost otherwise. */
export function mergeProperties(
  target: Record<string, unknown>,
  source: Record<string, unknown>,
): Record<string, unknown> {
  return { ...source, ...target };
}

const ILLEGAL_DISTINCT_IDS = new Set([
  'anonymous',
  'guest',
  'distinctid',
  'distinct_id',
  'id',
  'not_authenticated',
  'email',
  'undefined',
  'true',
  'false',
  'null',
  '0',
  'nan',
  'none',
  '[object object]',
  '""',
  "''",
  '',
]);

/** Ids PostHog never merges on, because clients send them by mistake for many different users. */
export function isIllegalDistinctId(id: string): boolean {
  return ILLEGAL_DISTINCT_IDS.has(id.trim().toLowerCase());
}
