/**
 * The lake's Athena settings, shared by CDK (infra/constructs/lake.ts) and the query runner that
 * comes with routing: one definition of the names and caps.
 */
import { EVENTS_PREFIX, MANIFESTS_PREFIX } from './layout.ts';
import { LAKE_COLUMNS } from './rows.ts';

export { EVENTS_PREFIX, MANIFESTS_PREFIX };

/** Glue database (per stage: `<prefix>_lake`, underscores as Glue names want) and table. */
export const lakeDatabaseName = (resourcePrefix: string) => `${resourcePrefix.replace(/[^a-z0-9]/g, '_')}_lake`;
export const LAKE_TABLE = 'events';

/** Athena's results (query outputs) live beside the lake, under their own prefix and lifecycle. */
export const RESULTS_PREFIX = 'athena-results/';

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
