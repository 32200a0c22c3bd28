/**
 * The single table's physical shape, shared by CDK (infra/stacks) and the local runtime so the two
 * cannot drift. Pure constants: no SDK import. Access patterns are listed in docs/access-patterns.md.
 */
export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'expires_at',
  indexes: {
    /** Children of a parent in creation order: an org's members, a user's API keys (and later runs, logs, persons). */
    byParent: { name: 'byParent', partitionKey: 'parent_pk', sortKey: 'parent_sk' },
  },
} as const;

export type IndexName = (typeof TABLE_SCHEMA.indexes)[keyof typeof TABLE_SCHEMA.indexes]['name'];
