import { TABLE_SCHEMA } from './table-schema.ts';

const KEY_ATTRIBUTES = new Set<string>([
  TABLE_SCHEMA.partitionKey,
  TABLE_SCHEMA.sortKey,
  TABLE_SCHEMA.ttlAttribute,
  'entity',
  'expires_at',
  ...Object.values(TABLE_SCHEMA.indexes).flatMap((i) => [i.partitionKey, i.sortKey]),
]);

/** A stored item without its table/index key attributes: the record the domain works with. */
export function record<T>(item: Record<string, unknown> | undefined): T | undefined {
  if (!item) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) if (!KEY_ATTRIBUTES.has(k)) out[k] = v;
  return out as T;
}
