/**
 * Every primary and index key of the single table is built here, one builder per entity.
 * docs/access-patterns.md lists the access each key serves; change that document first.
 */
export interface ItemKey {
  pk: string;
  sk: string;
}

export const keys = {
  user: (userId: string): ItemKey => ({ pk: `USER#${userId}`, sk: 'USER' }),
  userEmail: (email: string): ItemKey => ({ pk: `EMAIL#${email.toLowerCase()}`, sk: 'EMAIL' }),
  apiKey: (secureValue: string): ItemKey => ({ pk: `APIKEY#${secureValue}`, sk: 'APIKEY' }),
  /** byParent: a user's keys in creation order. */
  apiKeysOfUser: (userId: string) => ({ parent_pk: `USER#${userId}#APIKEYS` }),

  organization: (orgId: string): ItemKey => ({ pk: `ORG#${orgId}`, sk: 'ORG' }),
  organizationPartition: (orgId: string) => ({ pk: `ORG#${orgId}` }),
  slug: (slug: string): ItemKey => ({ pk: `SLUG#${slug}`, sk: 'SLUG' }),
  /** Lives in the user's partition: "my organizations" is one strongly consistent Query. */
  membership: (userId: string, orgId: string): ItemKey => ({ pk: `USER#${userId}`, sk: `ORG#${orgId}` }),
  membershipsOfUser: (userId: string) => ({ pk: `USER#${userId}`, skPrefix: 'ORG#' }),
  /** byParent: an organization's members (for delete and member lists). */
  membersOfOrganization: (orgId: string) => ({ parent_pk: `ORG#${orgId}#MEMBERS` }),

  /** Projects live in their organization's partition; the retrieve of an org reads them in the same Query. */
  project: (orgId: string, projectId: number): ItemKey => ({ pk: `ORG#${orgId}`, sk: `PROJECT#${pad(projectId)}` }),
  projectSkPrefix: 'PROJECT#',
  /** Immutable pointer from a project id to its organization. */
  projectLookup: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'LOOKUP' }),
  /** Immutable pointer from a public project token (phc_) to its project, for capture. */
  projectToken: (token: string): ItemKey => ({ pk: `TOKEN#${token}`, sk: 'TOKEN' }),

  counter: (name: string): ItemKey => ({ pk: `COUNTER#${name}`, sk: 'COUNTER' }),
  actionCounter: (projectId: number) => `action#${projectId}`,
  /** A project's actions, one partition, by id. */
  action: (projectId: number, actionId: number): ItemKey => ({
    pk: `ACTIONS#${projectId}`,
    sk: `ACTION#${pad(actionId)}`,
  }),
  actionsOfProject: (projectId: number) => ({ pk: `ACTIONS#${projectId}`, skPrefix: 'ACTION#' }),
  cohortCounter: (projectId: number) => `cohort#${projectId}`,
  /** A project's cohorts, one partition, by id (a project has at most MAX_COHORTS_PER_PROJECT: read whole). */
  cohort: (projectId: number, cohortId: number): ItemKey => ({
    pk: `COHORTS#${projectId}`,
    sk: `COHORT#${pad(cohortId)}`,
  }),
  cohortsOfProject: (projectId: number) => ({ pk: `COHORTS#${projectId}`, skPrefix: 'COHORT#' }),
  /** dueByTime entry of a behavioural cohort: due for its scheduled recalculation from `at`. */
  cohortDue: (at: string, projectId: number, cohortId: number) => ({
    due_pk: 'DUE#COHORT',
    due_sk: `${at}#${projectId}#${cohortId}`,
  }),
  cohortDuePk: 'DUE#COHORT',
  /** "Members of cohort C": one partition per cohort, by person id (#110). */
  cohortMember: (projectId: number, cohortId: number, personId: number): ItemKey => ({
    pk: `COHORT#${projectId}#${cohortId}`,
    sk: `MEMBER#${pad(personId)}`,
  }),
  cohortMembers: (projectId: number, cohortId: number) => ({
    pk: `COHORT#${projectId}#${cohortId}`,
    skPrefix: 'MEMBER#',
  }),
  /** "Cohorts of person P": in the person's partition, by cohort id (#111). */
  personCohort: (projectId: number, personId: number, cohortId: number): ItemKey => ({
    pk: `PERSON#${projectId}#${personId}`,
    sk: `COHORT#${pad(cohortId)}`,
  }),
  personCohortPrefix: 'COHORT#',
  /** eventsByInsertedHour: events ingested in one UTC hour, sharded like eventsByDay. */
  eventsByInsertedHour: (projectId: number, hour: string, shard: number) => ({
    ins_pk: `I#${projectId}#${hour}#${shard}`,
  }),

  batchExport: (orgId: string, exportId: string): ItemKey => ({ pk: `EXPORTS#${orgId}`, sk: `EXPORT#${exportId}` }),
  batchExportsOfOrganization: (orgId: string) => ({ pk: `EXPORTS#${orgId}`, skPrefix: 'EXPORT#' }),
  /** Runs, window claims and logs live in the export's own partition: deleting an export is one Query away. */
  batchExportPartition: (exportId: string) => ({ pk: `EXPORT#${exportId}` }),
  exportRun: (exportId: string, runId: string): ItemKey => ({ pk: `EXPORT#${exportId}`, sk: `RUN#${runId}` }),
  exportRunPrefix: 'RUN#',
  /** byParent entry of a run by its window: the export's runs in window order, no item of their own. */
  exportRunByWindow: (exportId: string, windowStart: string, runId: string) => ({
    parent_pk: `EXPORT#${exportId}#RUNS`,
    parent_sk: `${windowStart}#${runId}`,
  }),
  /** One scheduled run per window: the claim that makes the scheduler idempotent. */
  exportWindow: (exportId: string, windowStart: string): ItemKey => ({
    pk: `EXPORT#${exportId}`,
    sk: `WINDOW#${windowStart}`,
  }),
  exportLog: (exportId: string, timestamp: string, id: string): ItemKey => ({
    pk: `EXPORT#${exportId}`,
    sk: `LOG#${timestamp}#${id}`,
  }),
  exportLogPrefix: 'LOG#',
  /** A backfill by its window range (`<start_at>#<end_at>`): the same range twice finds the same item. */
  exportBackfill: (exportId: string, range: string): ItemKey => ({ pk: `EXPORT#${exportId}`, sk: `BACKFILL#${range}` }),
  exportBackfillPrefix: 'BACKFILL#',
  /**
   * byParent entry of a backfill while it may be in flight: a project's backfills in flight without
   * reading every backfill of every export. Set at creation; removed when a count finds it settled.
   */
  backfillInFlight: (teamId: number, createdAt: string, backfillId: string) => ({
    parent_pk: `PROJECT#${teamId}#BACKFILLS_IN_FLIGHT`,
    parent_sk: `${createdAt}#${backfillId}`,
  }),
  /** The export's count of backfill runs not yet settled, which the pending cap is checked against. */
  exportBackfillLedger: (exportId: string): ItemKey => ({ pk: `EXPORT#${exportId}`, sk: 'BACKFILLS' }),
  /** dueByTime entry of a backfill with windows not yet turned into runs (oldest request first). */
  backfillDue: (at: string, exportId: string, backfillId: string) => ({
    due_pk: 'DUE#BACKFILL',
    due_sk: `${at}#${exportId}#${backfillId}`,
  }),
  /** dueByTime entries: an export whose next window closes at `at`, or a run to execute at `at` (one partition per organization). */
  exportDue: (at: string, exportId: string) => ({ due_pk: 'DUE#EXPORT', due_sk: `${at}#${exportId}` }),
  runDue: (orgId: string, at: string, runId: string) => ({ due_pk: `DUE#RUN#${orgId}`, due_sk: `${at}#${runId}` }),
  /** An organization that may have runs due from `at`: one entry however many runs it queued, so the scheduler can take turns. */
  /** dueByTime entry of a queued run while its export is paused: out of the organization's queue, so never looked at until unpaused. */
  runParked: (exportId: string, windowStart: string, runId: string) => ({
    due_pk: `PARKED#RUN#${exportId}`,
    due_sk: `${windowStart}#${runId}`,
  }),
  /** An unpaused export whose parked runs the scheduler puts back in the queue, a page a tick. */
  exportUnpark: (exportId: string): ItemKey => ({ pk: `EXPORT#${exportId}`, sk: 'UNPARK' }),
  exportUnparkDue: (at: string, exportId: string) => ({ due_pk: 'DUE#UNPARK', due_sk: `${at}#${exportId}` }),
  runQueue: (orgId: string): ItemKey => ({ pk: `RUNQUEUE#${orgId}`, sk: 'RUNQUEUE' }),
  runQueuePkPrefix: 'RUNQUEUE#',
  runQueueDue: (at: string, orgId: string) => ({ due_pk: 'DUE#RUNQUEUE', due_sk: `${at}#${orgId}` }),

  /** A computed trend, by project and a hash of everything it depends on; short TTL. */
  trendCache: (projectId: number, hash: string): ItemKey => ({ pk: `TRENDCACHE#${projectId}#${hash}`, sk: 'CACHE' }),
  trendCachePkPrefix: 'TRENDCACHE#',
  /**
   * Where the page at `offset` of one ActorsQuery walk starts (per caller and query, short TTL), so a
   * walk by offsets resumes from a position, not a count. Under the cache prefix: the query function
   * may write only there.
   */
  actorsWalkPosition: (projectId: number, walk: string, offset: number): ItemKey => ({
    pk: `TRENDCACHE#${projectId}#ACTORSWALK#${walk}`,
    sk: `OFFSET#${pad(offset)}`,
  }),
  /** A query API answer, by project and its `cache_key` (shared/domain/query/cache-key.ts); chunks beside it (storedChunk). */
  queryCache: (projectId: number, cacheKey: string): ItemKey => ({
    pk: `QUERYCACHE#${projectId}#${cacheKey}`,
    sk: 'CACHE',
  }),
  queryCachePkPrefix: 'QUERYCACHE#',
  /** An async query's status (PostHog's QueryStatus), by project and query id; its result is stored beside it (queryResult). */
  queryStatus: (projectId: number, queryId: string): ItemKey => ({ pk: `QUERY#${projectId}#${queryId}`, sk: 'STATUS' }),
  queryResult: (projectId: number, queryId: string): ItemKey => ({ pk: `QUERY#${projectId}#${queryId}`, sk: 'RESULT' }),
  queryPkPrefix: 'QUERY#',
  /**
   * The background run in flight for one question of a project (its `cache_key`), so a repeated
   * request joins it; free once released or expired. Under QUERY#: the query functions may write it.
   */
  queryRunning: (projectId: number, cacheKey: string): ItemKey => ({
    pk: `QUERY#${projectId}#RUNNING#${cacheKey}`,
    sk: 'RUNNING',
  }),
  /** One of a project's background-run slots (shared/domain/query/async.ts caps them); free once released or expired. */
  querySlot: (projectId: number, slot: number): ItemKey => ({ pk: `QUERY#${projectId}#SLOT#${slot}`, sk: 'SLOT' }),
  /** Chunk n (>= 1) of a value stored across items (shared/db/result-store.ts); chunk 0 is the item at `head` itself. */
  storedChunk: (head: ItemKey, n: number): ItemKey => ({ pk: head.pk, sk: `${head.sk}#${String(n).padStart(4, '0')}` }),
  /** The earliest event time of a project (for `date_from: all`), lowered by the ingest worker. */
  firstEvent: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'FIRSTEVENT' }),
  /** The generation of a project's cached answers: part of every cache key, bumped when data is deleted or redefined. */
  answersGeneration: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'ANSWERS' }),
  /** The version of a project's distinct id -> person map: bumped by merges and person deletions (the lake's person ids go stale). */
  personsVersion: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'PERSONSVERSION' }),
  /** Person ids are integers counted per project (a global counter would be one hot item). */
  personCounter: (projectId: number) => `person#${projectId}`,

  person: (projectId: number, personId: number): ItemKey => ({ pk: `PERSON#${projectId}#${personId}`, sk: 'PERSON' }),
  /** The person id in a person item's `pk` (what a keys-only index read returns). */
  personIdOfKey: (pk: string): number => Number(pk.slice(pk.lastIndexOf('#') + 1)),
  personPartition: (projectId: number, personId: number) => ({ pk: `PERSON#${projectId}#${personId}` }),
  /** byParent: a project's persons by creation time (lists are newest first). */
  personsOfProject: (projectId: number, createdAt: string, personId: number) => ({
    parent_pk: `PROJECT#${projectId}#PERSONS`,
    parent_sk: `${createdAt}#${pad(personId)}`,
  }),
  /** distinct_id -> person, claimed with attribute_not_exists so two persons never share one. */
  /** personsByEmail: persons of a project by lower-cased e-mail. */
  personsByEmail: (projectId: number, emailLower: string) => ({ email_pk: `${projectId}#${emailLower}` }),
  /** personsByUuid: a project's person by its lower-cased uuid. */
  personsByUuid: (projectId: number, uuid: string) => ({ uuid_pk: `${projectId}#${uuid.toLowerCase()}` }),
  /** Exact number of persons in a project, kept in the same transactions that create and remove persons. */
  personCount: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'PERSONCOUNT' }),
  /** An API change to a person (activity log), in the person's partition, newest last. */
  personActivity: (projectId: number, personId: number, createdAt: string, id: string): ItemKey => ({
    pk: `PERSON#${projectId}#${personId}`,
    sk: `ACTIVITY#${createdAt}#${id}`,
  }),
  personActivityPrefix: 'ACTIVITY#',
  distinctId: (projectId: number, distinctId: string): ItemKey => ({
    pk: `DISTINCT#${projectId}#${distinctId}`,
    sk: 'DISTINCT',
  }),
  /** A recorded property change, in the person's partition, in time order. */
  personChange: (projectId: number, personId: number, timestamp: string, changeId: string): ItemKey => ({
    pk: `PERSON#${projectId}#${personId}`,
    sk: `CHANGE#${timestamp}#${changeId}`,
  }),
  personChangePrefix: 'CHANGE#',

  /**
   * A project's group types (at most 5, index 0-4 in order of first use) in one item: capture reads it to
   * write `$group_N` on events, and a type's index never changes once assigned.
   */
  groupTypes: (projectId: number): ItemKey => ({ pk: `PROJECT#${projectId}`, sk: 'GROUPTYPES' }),
  /** A group, by project, type index and key (one GetItem for `find` and for ingest's upsert). */
  group: (projectId: number, typeIndex: number, groupKey: string): ItemKey => ({
    pk: `GROUP#${projectId}#${typeIndex}#${groupKey}`,
    sk: 'GROUP',
  }),
  /** byParent: the groups of one type of a project by creation time (lists are newest first, as PostHog's). */
  groupsOfType: (projectId: number, typeIndex: number, createdAt: string, groupKey: string) => ({
    parent_pk: `PROJECT#${projectId}#GROUPS#${typeIndex}`,
    parent_sk: `${createdAt}#${groupKey}`,
  }),
  /** A recorded group property change (`$group_set`), in the group's partition, in time order. */
  groupChange: (
    projectId: number,
    typeIndex: number,
    groupKey: string,
    timestamp: string,
    changeId: string,
  ): ItemKey => ({
    pk: `GROUP#${projectId}#${typeIndex}#${groupKey}`,
    sk: `CHANGE#${timestamp}#${changeId}`,
  }),
  groupChangePrefix: 'CHANGE#',
  /** The sort keys of the changes (a person's or a group's) at `from`..`to`, ISO instants, both inclusive. */
  changeRange: (from?: string, to?: string): readonly [string, string] => [
    `CHANGE#${from ?? ''}`,
    `CHANGE#${to ?? '\uffff'}#\uffff`,
  ],
  /** How many groups of a type hold a property key (`groups/property_definitions`), one partition per project. */
  groupPropertyCount: (projectId: number, typeIndex: number, key: string): ItemKey => ({
    pk: `PROJECT#${projectId}#GROUPPROPS`,
    sk: `${typeIndex}#${key}`,
  }),
  groupPropertyCounts: (projectId: number) => ({ pk: `PROJECT#${projectId}#GROUPPROPS` }),
  /**
   * Property keys seen by ingestion (`property_definitions`), one partition per project: `E#<key>` an event
   * property, `N#<len>:<event>#<key>` a key seen on that event name, `P#<key>` a person property.
   */
  propertyDefinitions: (projectId: number) => ({ pk: `PROJECT#${projectId}#PROPDEFS` }),
  eventPropertyDefinition: (projectId: number, key: string): ItemKey => ({
    pk: `PROJECT#${projectId}#PROPDEFS`,
    sk: `E#${key}`,
  }),
  eventPropertyDefinitionPrefix: 'E#',
  eventNamePropertyDefinition: (projectId: number, event: string, key: string): ItemKey => ({
    pk: `PROJECT#${projectId}#PROPDEFS`,
    sk: `N#${eventNameKey(event)}#${key}`,
  }),
  eventNamePropertyDefinitionPrefix: (event: string) => `N#${eventNameKey(event)}#`,
  personPropertyDefinition: (projectId: number, key: string): ItemKey => ({
    pk: `PROJECT#${projectId}#PROPDEFS`,
    sk: `P#${key}`,
  }),
  personPropertyDefinitionPrefix: 'P#',

  /** Raw event, keyed by its uuid so a resend is found by one GetItem (dedupe). */
  event: (projectId: number, uuid: string): ItemKey => ({ pk: `EVENT#${projectId}#${uuid}`, sk: 'EVENT' }),
  eventPkPrefix: 'EVENT#',
  /** Where the ingest worker counted the event (its rollup bucket): the truth that makes counting idempotent. */
  eventCounted: (projectId: number, uuid: string): ItemKey => ({ pk: `EVENT#${projectId}#${uuid}`, sk: 'COUNTED' }),
  /** eventsByDay: `<len>:<name>` keeps one name from being a prefix of another (`view` vs `view2`). */
  eventsByDay: (projectId: number, day: string, shard: number) => ({ day_pk: `E#${projectId}#${day}#${shard}` }),
  eventsByDaySk: (event: string, timestamp: string, uuid: string) => `${eventNameKey(event)}#${timestamp}#${uuid}`,
  /** eventsByDistinctId (keys only): every event of one distinct id, for deferred person deletion. */
  eventsOfDistinctId: (projectId: number, distinctId: string) => ({ did_pk: `${projectId}#${distinctId}` }),
  eventsByDayPrefix: (event: string) => `${eventNameKey(event)}#`,

  /**
   * One fixed rate-limit window of one subject (a key's stored `sha256$<hex>` hash, never the raw key,
   * or `project:<id>` for capture) and class: an atomic `ADD` counter with a TTL just after the window.
   * `start` is the window's UTC start, `YYYY-MM-DDTHH:MM` (minute) or `YYYY-MM-DDTHH` (hour).
   */
  rateLimitWindow: (subject: string, cls: string, window: 'minute' | 'hour', start: string): ItemKey => ({
    pk: `RATE#${subject}#${cls}#${window}#${start}`,
    sk: 'RATE',
  }),
  /** Every rate-limit item's partition key starts with this (IAM: the one write read-only API functions may do). */
  rateLimitPkPrefix: 'RATE#',

  /**
   * One UTC day of a project's events in compact form, one partition: per event name the segments the
   * compactor builds, plus the day's compaction marker. A trend reads one day of one name with one
   * Query (`begins_with` the name) or BatchGetItem (chunk keys).
   */
  eventDayPartition: (projectId: number, day: string) => ({ pk: `EVDAY#${projectId}#${day}` }),
  eventDayPrefix: (event: string) => `${eventNameKey(event)}#`,
  /**
   * The day counters of a project's UTC month, one partition: per (event name, day) the count and
   * fingerprint sum the ingest worker keeps, and the id of the day's newest segment build. Sorted by
   * name then day, so one Query reads a name's counters over a range of days.
   */
  dayCountPartition: (projectId: number, month: string) => ({ pk: `EVCOUNT#${projectId}#${month}` }),
  dayCount: (projectId: number, day: string, event: string): ItemKey => ({
    pk: `EVCOUNT#${projectId}#${day.slice(0, 7)}`,
    sk: `${eventNameKey(event)}#${day}`,
  }),
  /** Where a day counter lived before counters moved to month partitions (read only by the migration). */
  legacyDayCount: { pkPrefix: 'EVDAY#', skSuffix: '#COUNT' },
  /** Sort-key bounds of one name's counters from day `from` to day `to` (inclusive) of one month partition. */
  dayCountRange: (event: string, from: string, to: string) => ({
    from: `${eventNameKey(event)}#${from}`,
    to: `${eventNameKey(event)}#${to}`,
  }),
  /** One chunk of a (day, name) segment; readers use chunks only when all carry chunk 0's build id. */
  daySegment: (projectId: number, day: string, event: string, chunk: number): ItemKey => ({
    pk: `EVDAY#${projectId}#${day}`,
    sk: `${eventNameKey(event)}#SEG#${String(chunk).padStart(4, '0')}`,
  }),
  /** Set by the ingest worker when a day's events change; the compactor removes it once the day is compacted. */
  compactionMarker: (projectId: number, day: string): ItemKey => ({ pk: `EVDAY#${projectId}#${day}`, sk: 'COMPACT' }),
  /** dueByTime entry of a compaction marker: the day may be compacted from `at` on. */
  compactionDue: (at: string, projectId: number, day: string) => ({
    due_pk: 'DUE#COMPACT',
    due_sk: `${at}#${projectId}#${day}`,
  }),

  /**
   * What the lake must not serve until the days named are rewritten (a person deleted, a person's
   * property removed, a person's events deleted): one partition per project, a lake query reads it all.
   */
  lakeHidePartition: (projectId: number) => ({ pk: `LAKEHIDE#${projectId}` }),
  lakeHide: (projectId: number, id: string): ItemKey => ({ pk: `LAKEHIDE#${projectId}`, sk: id }),
  /** dueByTime entry of a hide whose days are not yet known: the compactor finds them from `at` on. */
  lakeHideDue: (at: string, projectId: number, id: string) => ({
    due_pk: 'DUE#LAKEHIDE',
    due_sk: `${at}#${projectId}#${id}`,
  }),

  /** Hourly count of one event name (or of all events: `event` null) in a project, one partition per month. */
  rollup: (projectId: number, event: string | null, hour: string): ItemKey => ({
    pk: `ROLLUP#${projectId}#${event === null ? '*' : eventNameKey(event)}#${hour.slice(0, 7)}`,
    sk: hour,
  }),
} as const;

function eventNameKey(event: string): string {
  return `${event.length}:${event}`;
}

/** Zero-padded so integer ids sort numerically inside a partition. */
function pad(n: number): string {
  return String(n).padStart(12, '0');
}
