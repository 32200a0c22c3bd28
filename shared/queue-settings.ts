/** The service's SQS queues, shared by CDK and the local runtime so both build them alike. */
export type QueueName =
  | 'person_deletions'
  | 'drain_continuations'
  | 'person_bulk_deletes'
  | 'query_runs'
  | 'capture_batches'
  | 'cohort_calculations';

export interface QueueSettings {
  /** Environment variable through which functions get the queue's URL. */
  urlEnv: string;
  retentionDays: number;
  /** Longer than the consumer's timeout, so a message in hand is not handed out twice. */
  visibilityTimeoutSeconds: number;
  /** Receives before the message moves to the queue's DLQ. */
  maxReceiveCount: number;
}

export const QUEUES: Record<QueueName, QueueSettings> = {
  // Deletion requests wait up to a week for Sunday's drain: keep them for SQS's maximum, 14 days.
  person_deletions: {
    urlEnv: 'PERSON_DELETION_QUEUE_URL',
    retentionDays: 14,
    visibilityTimeoutSeconds: 960,
    maxReceiveCount: 5,
  },
  // "Carry on draining" notes a drain leaves itself when its backlog outlasts one invocation.
  drain_continuations: {
    urlEnv: 'DRAIN_CONTINUATION_QUEUE_URL',
    retentionDays: 1,
    visibilityTimeoutSeconds: 960,
    maxReceiveCount: 3,
  },
  // Persons a bulk delete could not remove within its request: its worker (300 s, so a table call's worst
  // case of 53 s stays under a quarter of it) deletes them within seconds. Visibility 6x the worker's timeout,
  // as AWS advises for queue-triggered functions.
  person_bulk_deletes: {
    urlEnv: 'PERSON_BULK_DELETE_QUEUE_URL',
    retentionDays: 14,
    visibilityTimeoutSeconds: 1_800,
    maxReceiveCount: 5,
  },
  // Queries run in the background (refresh async / force_async, or a blocking query past the API's budget):
  // the run_queries worker (900 s) picks each up within seconds. A query's status lives an hour (shared/domain/query/),
  // so a message older than that has no one waiting for it. Visibility 6x the worker's timeout, as above.
  query_runs: {
    urlEnv: 'QUERY_RUN_QUEUE_URL',
    retentionDays: 1,
    visibilityTimeoutSeconds: 5_400,
    maxReceiveCount: 3,
  },
  // Captured events a request staged instead of storing them itself (a batch too large to store within the
  // API's budget): the only copy of events a client was told were accepted, so kept for SQS's maximum, and
  // retried 5 times before the DLQ. The store_capture_batches worker (300 s) stores each within seconds;
  // visibility 6x its timeout, as above.
  capture_batches: {
    urlEnv: 'CAPTURE_BATCH_QUEUE_URL',
    retentionDays: 14,
    visibilityTimeoutSeconds: 1_800,
    maxReceiveCount: 5,
  },
  // Cohort recalculations (create, change, the daily schedule): the calculate_cohorts worker (900 s) takes one
  // page after another and queues the rest of a large cohort again before its time is up. A lost message
  // leaves the cohort is_calculating until the next change or schedule; visibility 6x its timeout, as above.
  cohort_calculations: {
    urlEnv: 'COHORT_CALCULATION_QUEUE_URL',
    retentionDays: 4,
    visibilityTimeoutSeconds: 5_400,
    maxReceiveCount: 5,
  },
};
