/**
 * The lake's Athena settings, shared by CDK (infra/constructs/lake.ts) and the query runner that
 * comes with routing: one definition of the names and caps.
 */
import { EVENTS_PREFIX, MANIFESTS_PREFIX, projectPrefixes } from './layout.ts';
import { LAKE_COLUMNS } from './rows.ts';

export { EVENTS_PREFIX, MANIFESTS_PREFIX };

/** Glue database (per stage: `<prefix>_lake`, underscores as Glue names want) and table. */
export const lakeDatabaseName = (resourcePrefix: string) => `${resourcePrefix.replace(/[^a-z0-9]/g, '_')}_lake`;
export const LAKE_TABLE = 'events';

/** Athena's results (query outputs) live beside the lake, under their own prefix and lifecycle: one folder per project. */
export const RESULTS_PREFIX = 'athena-results/';

export const projectResultsPrefix = (projectId: number) =>
  `${RESULTS_PREFIX}${projectPrefixes(projectId).events.slice(EVENTS_PREFIX.length)}`;

/** What a lake query does in Athena (start, poll, read, stop) and in Glue (the table's definition): the lake query role's actions, each session's too. */
export const ATHENA_QUERY_ACTIONS = [
  'athena:StartQueryExecution',
  'athena:GetQueryExecution',
  'athena:GetQueryResults',
  'athena:StopQueryExecution',
];
export const GLUE_READ_ACTIONS = ['glue:GetDatabase', 'glue:GetTable', 'glue:GetPartition', 'glue:GetPartitions'];
/** Athena writes a query's results (and reads them back for GetQueryResults) with the caller's identity. */
export const RESULT_OBJECT_ACTIONS = [
  's3:PutObject',
  's3:GetObject',
  's3:AbortMultipartUpload',
  's3:ListMultipartUploadParts',
];

/** Where a stage's lake queries run: the names CDK gave (the role's ARN gives the partition and account). */
export interface LakeQueryScope {
  partition: string;
  account: string;
  region: string;
  bucket: string;
  workgroup: string;
  database: string;
}

/**
 * The inline session policy of one project's lake queries (STS AssumeRole's `Policy`): the session
 * may do only what both this and the lake query role allow, so even SQL that names every project
 * (a printed `UNION` over the whole table) reads only this project's day pointers and files, and
 * writes and reads results only under this project's results folder. Athena and Glue are named as
 * the role names them (one workgroup, one table): the project is in the S3 prefixes.
 */
export function lakeSessionPolicy(scope: LakeQueryScope, projectId: number) {
  const { events, manifests } = projectPrefixes(projectId);
  const results = projectResultsPrefix(projectId);
  const bucket = `arn:${scope.partition}:s3:::${scope.bucket}`;
  const glue = (resource: string) => `arn:${scope.partition}:glue:${scope.region}:${scope.account}:${resource}`;
  return {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: ['s3:GetObject'], Resource: [`${bucket}/${events}*`, `${bucket}/${manifests}*`] },
      { Effect: 'Allow', Action: RESULT_OBJECT_ACTIONS, Resource: [`${bucket}/${results}*`] },
      {
        Effect: 'Allow',
        Action: ['s3:ListBucket'],
        Resource: [bucket],
        Condition: { StringLike: { 's3:prefix': [`${events}*`, `${manifests}*`, `${results}*`] } },
      },
      { Effect: 'Allow', Action: ['s3:GetBucketLocation'], Resource: [bucket] },
      {
        Effect: 'Allow',
        Action: ATHENA_QUERY_ACTIONS,
        Resource: [`arn:${scope.partition}:athena:${scope.region}:${scope.account}:workgroup/${scope.workgroup}`],
      },
      {
        Effect: 'Allow',
        Action: GLUE_READ_ACTIONS,
        Resource: [glue('catalog'), glue(`database/${scope.database}`), glue(`table/${scope.database}/${LAKE_TABLE}`)],
      },
    ],
  };
}

/** A query that would scan more than this is cancelled by Athena (the workgroup's cutoff): 10 GB, ~$0.05. */
export const BYTES_SCANNED_CUTOFF = 10 * 1024 ** 3;

/**
 * Result reuse is asked per query (StartQueryExecution's ResultReuseConfiguration), not set on a
 * workgroup: the runner sends this. A closed day's files change only when the compactor rewrites them.
 */
export const RESULT_REUSE = { ResultReuseByAgeConfiguration: { Enabled: true, MaxAgeInMinutes: 60 } } as const;

/** The table's columns as Glue types (partition columns apart). */
export const GLUE_COLUMNS = LAKE_COLUMNS.map((c) => ({
  name: c.name,
  type: c.type === 'TIMESTAMP' ? 'timestamp' : 'string',
}));
