/**
 * AWS's published on-demand prices, us-east-1, that turn measured units per event into dollars per
 * million events (docs/benchmarks.md, "Write amplification"). Free tiers are left out: at millions of
 * events they are noise. Change the figures here when AWS changes them, and the `source` line with them.
 */
export const AWS_PRICES = {
  source:
    'AWS on-demand list prices, us-east-1, as published 2025-01-31 (DynamoDB after the 2024-11-01 on-demand cut); free tiers ignored',
  /** DynamoDB on-demand, per million write / read request units. */
  dynamodbWritePerMillion: 0.625,
  dynamodbReadPerMillion: 0.125,
  /** DynamoDB Standard table class, per GB-month (item sizes + 100 bytes of overhead per item and per index entry). */
  dynamodbStoragePerGbMonth: 0.25,
  /** SQS standard queue, per million requests (each 64 KB chunk of a request is one). */
  sqsPerMillionRequests: 0.4,
  /** S3 Standard: PUT, COPY, POST, LIST per 1,000; GET per 1,000; storage per GB-month. */
  s3PutPerThousand: 0.005,
  s3GetPerThousand: 0.0004,
  s3StoragePerGbMonth: 0.023,
  /** Lambda on arm64 (the stack's functions): per GB-second, per million invocations. */
  lambdaPerGbSecond: 0.0000133334,
  lambdaPerMillionRequests: 0.2,
  /** The stack's function memory (infra/stages.ts lambdaMemoryMb). */
  lambdaMemoryGb: 1,
  posthogCloudPerMillion: '$50 ($0.00005 per event after the free tier, PostHog Cloud product analytics)',
} as const;

const GB = 1024 ** 3;

export interface UnitsPerEvent {
  /** Capture + ingest worker. */
  wcu: number;
  rcu: number;
  /** One compaction pass (segments and the lake file), per event compacted. */
  compactionWcu: number;
  compactionRcu: number;
  /** Messages sent; each costs a send, a receive and a delete request (Lambda's event source, unbatched: a ceiling). */
  sqsMessages: number;
  s3ClassA: number;
  s3ClassB: number;
  /** Bytes the table grew by per event (DynamoDB Local's TableSizeBytes), kept 30 days. */
  storageBytes: number;
  /** Bytes the lake holds per event after compaction, kept 30 days. */
  lakeBytes: number;
  /** Node CPU time per event of the handlers (capture + worker), an estimate of billed duration. */
  lambdaCpuMs: number;
  /** Function invocations per event (one per POST /batch, one per stream batch). */
  lambdaInvocations: number;
}

/** Dollars per million events, by what they pay for. */
export function dollarsPerMillion(u: UnitsPerEvent) {
  const p = AWS_PRICES;
  const M = 1e6;
  const parts = {
    dynamodbWrites: (u.wcu + u.compactionWcu) * p.dynamodbWritePerMillion,
    dynamodbReads: (u.rcu + u.compactionRcu) * p.dynamodbReadPerMillion,
    dynamodbStorage30d: ((u.storageBytes * M) / GB) * p.dynamodbStoragePerGbMonth,
    sqs: u.sqsMessages * 3 * p.sqsPerMillionRequests,
    s3Requests: ((u.s3ClassA * M) / 1000) * p.s3PutPerThousand + ((u.s3ClassB * M) / 1000) * p.s3GetPerThousand,
    s3Storage30d: ((u.lakeBytes * M) / GB) * p.s3StoragePerGbMonth,
    lambda:
      (u.lambdaCpuMs / 1000) * M * p.lambdaMemoryGb * p.lambdaPerGbSecond +
      u.lambdaInvocations * p.lambdaPerMillionRequests,
  };
  return { ...parts, total: Object.values(parts).reduce((a, b) => a + b, 0) };
}
