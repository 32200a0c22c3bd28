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
    byParent: { name: 'byParent', partitionKey: 'parent_pk', sortKey: 'parent_sk', projection: 'ALL' },
    /** Raw events of a project per UTC day (sharded), sorted by event name then time: what trends read. */
    eventsByDay: { name: 'eventsByDay', partitionKey: 'day_pk', sortKey: 'day_sk', projection: 'ALL' },
    /** Keys of a distinct id's events: what deferred person deletion needs, and nothing more. */
    eventsByDistinctId: {
      name: 'eventsByDistinctId',
      partitionKey: 'did_pk',
      sortKey: 'did_sk',
      projection: 'KEYS_ONLY',
    },
    /** Events of a project by ingestion hour (sharded): what batch exports read, since they export by ingestion time. */
    eventsByInsertedHour: {
      name: 'eventsByInsertedHour',
      partitionKey: 'ins_pk',
      sortKey: 'ins_sk',
      projection: 'ALL',
    },
    /** Sparse: what the export scheduler must act on by a time (exports whose next window closed, runs waiting to run). */
    dueByTime: { name: 'dueByTime', partitionKey: 'due_pk', sortKey: 'due_sk', projection: 'KEYS_ONLY' },
    /** Persons of a project by lower-cased e-mail (sparse: only persons with one). */
    personsByEmail: { name: 'personsByEmail', partitionKey: 'email_pk', sortKey: 'parent_sk', projection: 'ALL' },
    /** A person of a project by uuid (PostHog's person id, what its clients send): keys only, the person is read by key. */
    personsByUuid: { name: 'personsByUuid', partitionKey: 'uuid_pk', sortKey: 'parent_sk', projection: 'KEYS_ONLY' },
  },
  /** Shards per (project, day) in eventsByDay: keeps a busy project's day under one partition's write limit. */
  eventDayShards: 4,
} as const;

export type IndexName = (typeof TABLE_SCHEMA.indexes)[keyof typeof TABLE_SCHEMA.indexes]['name'];
