/**
 * What runs the lake's SQL (shared/lake/sql/): Athena deployed (StartQueryExecution in the lake's
 * workgroup with result reuse, GetQueryExecution polled, GetQueryResults paged), DuckDB in the local
 * runtime, tests and benchmarks (over the current files of the days read). One interface, so the
 * routing (shared/domain/lake-trends.ts) is the same code on both. DuckDB is imported on first use
 * only, and kept out of the Lambda bundles (infra/build.ts): no function deployed with Athena loads it.
 *
 * The second wall (docs/reliability.md, "two walls"): each query runs for one project, and the engine
 * itself can reach nothing else whatever the SQL says. Athena runs with a session that can read only
 * that project's objects (lakeSessionPolicy); DuckDB in a sandbox that can read only that project's
 * folder, with its configuration locked and one SELECT per call.
 */
import type { AthenaClient } from '@aws-sdk/client-athena';
import type { STSClient } from '@aws-sdk/client-sts';
import { clientOptions, traced } from '../aws/options.ts';
import { AWS_CLIENTS, config } from '../config.ts';
import { PayloadTooLarge, PermissionDenied, ServiceUnavailable } from '../errors.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { LAKE_TABLE, type LakeQueryScope, lakeSessionPolicy, projectResultsPrefix, RESULT_REUSE } from './athena.ts';
import { projectPrefixes } from './layout.ts';
import type { LakeSource } from './sql/trends.ts';

/** One result row: every value as text (Athena's VarCharValue; DuckDB's values printed the same way), NULL as null. */
export type LakeRow = Record<string, string | null>;

export interface LakeEngine {
  name: 'athena' | 'duckdb';
  /** Where the SQL reads: Athena's table (partition projection finds the days), or these files. */
  source(files: readonly string[]): LakeSource;
  /**
   * Runs one statement for one project, with what can reach that project's data only; `check` is
   * called between polls and pages (it throws to stop: deadline, cancellation).
   */
  run(projectId: number, sql: string, check: () => void, deadline: number): Promise<LakeRow[]>;
}

/** Rows a lake answer may hold (a trend's are series x breakdown values x buckets): past it a 413, not an unbounded read. */
export const LAKE_RESULT_ROWS = 200_000;

/** Athena refused or failed the query (its bytes-scanned cutoff, a bad state): a 503 naming why, never a silent in-process retry of a trend too big for it. */
export class LakeQueryFailed extends ServiceUnavailable {
  override name = 'LakeQueryFailed';
}

/**
 * The engine refused to reach outside the project's data (another project's files, a local file, a
 * setting, a second statement): a 403. Only SQL that escaped its printer gets here.
 */
export class LakeAccessDenied extends PermissionDenied {
  override name = 'LakeAccessDenied';
  constructor(why: string) {
    super(`The lake engine refused this query: it reads only this project's events, in one SELECT. ${why}`.trim());
  }
}

/** The slow path did not finish in its caller's time (the legacy endpoint's budget): the answer says to use /query. */
export class LakeTooSlow extends ServiceUnavailable {
  constructor() {
    super(
      'This trend is answered by the lake engine and did not finish in time here; ask POST /api/environments/:project_id/query/ with this TrendsQuery and "refresh": "async", then poll its query_status.',
    );
  }
}

const tooManyRows = () =>
  new PayloadTooLarge(`The lake's answer has more than ${LAKE_RESULT_ROWS} rows; narrow the range or the breakdown.`);

// ---------------------------------------------------------------------------------------------
// Athena

/** The stage's Athena names (shared/config.ts, set by infra/constructs/lake.ts). */
export interface AthenaSettings {
  workgroup: string;
  database: string;
  bucket: string;
  region: string;
  /** The lake query role each project's session assumes. */
  queryRole: string;
}

/** One project's Athena client, signed with that project's scoped session. */
export type ProjectAthena = (projectId: number) => Promise<AthenaClient>;

/** Sessions last an hour (AWS's cap for a role assumed by a role). */
const SESSION_SECONDS = 3_600;
/** A session is renewed this long before it expires: more than a Lambda runs, so a query never outlives its credentials. */
const RENEW_BEFORE_MS = 16 * 60_000;
/** Projects whose clients a container keeps (the least recently used go first). */
const CACHED_PROJECTS = 256;

/** The partition and account of the lake query role's ARN: the ARNs of the session policy. */
export function lakeQueryScope(settings: AthenaSettings): LakeQueryScope {
  const arn = /^arn:([a-z-]+):iam::(\d{12}):role\/[\w+=,.@/-]+$/.exec(settings.queryRole);
  if (!arn) throw new Error(`lake: the query role is not a role ARN: ${settings.queryRole}`);
  const [, partition = '', account = ''] = arn;
  const { bucket, region, workgroup, database } = settings;
  return { partition, account, region, bucket, workgroup, database };
}

/**
 * Per project, an Athena client whose credentials are an STS session of the lake query role with
 * lakeSessionPolicy(project) inline: what the SQL can reach is decided by IAM, not by the printer.
 * Sessions are cached per project in the container until shortly before they expire.
 */
export function projectAthenaClients(settings: AthenaSettings, now: () => number = Date.now): ProjectAthena {
  const scope = lakeQueryScope(settings);
  let sts: STSClient | undefined;
  const cache = new Map<number, { client: Promise<AthenaClient>; renewAt: number }>();

  async function open(projectId: number, entry: { renewAt: number }): Promise<AthenaClient> {
    const { STSClient, AssumeRoleCommand } = await import('@aws-sdk/client-sts');
    sts ??= traced(new STSClient({ region: settings.region, ...clientOptions(AWS_CLIENTS.sts) }));
    const session = await sts
      .send(
        new AssumeRoleCommand({
          RoleArn: settings.queryRole,
          // CloudTrail names the project of every call the session makes.
          RoleSessionName: `lake-project-${projectId}`,
          DurationSeconds: SESSION_SECONDS,
          Policy: JSON.stringify(lakeSessionPolicy(scope, projectId)),
        }),
      )
      .catch((error: unknown) => {
        throw new LakeQueryFailed(`Could not open the lake session of project ${projectId}: ${awsFailure(error)}`);
      });
    const c = session.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration)
      throw new LakeQueryFailed(`STS AssumeRole returned no credentials for project ${projectId}`);
    entry.renewAt = c.Expiration.getTime() - RENEW_BEFORE_MS;
    const { AthenaClient } = await import('@aws-sdk/client-athena');
    return traced(
      new AthenaClient({
        region: settings.region,
        credentials: {
          accessKeyId: c.AccessKeyId,
          secretAccessKey: c.SecretAccessKey,
          sessionToken: c.SessionToken,
          expiration: c.Expiration,
        },
        ...clientOptions(AWS_CLIENTS.athena),
      }),
    );
  }

  return (projectId) => {
    projectPrefixes(projectId); // a project id the lake can name, or no session at all
    const hit = cache.get(projectId);
    cache.delete(projectId);
    if (hit && now() < hit.renewAt) {
      cache.set(projectId, hit);
      return hit.client;
    }
    // Infinity until the session is open: concurrent queries of the project share one AssumeRole.
    const entry = { renewAt: Number.POSITIVE_INFINITY } as { client: Promise<AthenaClient>; renewAt: number };
    entry.client = open(projectId, entry);
    entry.client.catch(() => {
      if (cache.get(projectId) === entry) cache.delete(projectId);
    });
    cache.set(projectId, entry);
    for (const oldest of cache.keys()) {
      if (cache.size <= CACHED_PROJECTS) break;
      cache.delete(oldest);
    }
    return entry.client;
  };
}

const awsFailure = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return `${status ?? ''} ${error.name}: ${error.message}`.trim();
};

/** An SDK call that failed after the SDK's own retries: a 503 naming the action and AWS's error. */
const failed =
  (action: string) =>
  (error: unknown): never => {
    throw new LakeQueryFailed(`Athena ${action}: ${awsFailure(error)}`);
  };

const RUNNING = new Set(['QUEUED', 'RUNNING']);
/** How Athena words a read or write its session was not allowed (S3 and Glue through Athena). */
const ACCESS_DENIED = /Access Denied|AccessDenied|Permission denied on S3 path|is not authorized to perform/i;

export function athenaEngine(
  settings: AthenaSettings,
  poll: { baseMs: number; capMs: number } = { baseMs: 250, capMs: 1_000 },
  clients: ProjectAthena = projectAthenaClients(settings),
): LakeEngine {
  const outputOf = (projectId: number) => `s3://${settings.bucket}/${projectResultsPrefix(projectId)}`;
  return {
    name: 'athena',
    source: () => ({ dialect: 'athena', database: settings.database, table: LAKE_TABLE }),
    async run(projectId, sql, check, deadline) {
      check();
      const client = await clients(projectId);
      const athena = await import('@aws-sdk/client-athena');
      const started = await client
        .send(
          new athena.StartQueryExecutionCommand({
            QueryString: sql,
            WorkGroup: settings.workgroup,
            QueryExecutionContext: { Database: settings.database },
            // The project's own results folder: the only place its session may write (and read results back).
            ResultConfiguration: {
              OutputLocation: outputOf(projectId),
              EncryptionConfiguration: { EncryptionOption: 'SSE_S3' },
            },
            ResultReuseConfiguration: RESULT_REUSE,
          }),
        )
        .catch(failed('StartQueryExecution'));
      const id = String(started.QueryExecutionId ?? '');
      if (!id) throw new LakeQueryFailed('Athena StartQueryExecution returned no QueryExecutionId');
      let ended = false;
      try {
        // The one retry loop polls too: TRANSIENT while the query runs, backing off to a poll a second.
        await retryTransient(
          'Athena query',
          async () => {
            check();
            const reply = await client
              .send(new athena.GetQueryExecutionCommand({ QueryExecutionId: id }))
              .catch(failed('GetQueryExecution'));
            const status = reply.QueryExecution?.Status ?? {};
            const state = String(status.State ?? '');
            if (RUNNING.has(state)) return TRANSIENT;
            ended = true;
            if (state === 'SUCCEEDED') return true;
            const reason = `Athena query ${id} ${state || 'unknown'}: ${status.StateChangeReason ?? ''}`.trim();
            throw ACCESS_DENIED.test(status.StateChangeReason ?? '')
              ? new LakeAccessDenied(reason)
              : new LakeQueryFailed(reason);
          },
          { deadline, baseMs: poll.baseMs, capMs: poll.capMs, gaveUp: () => new LakeTooSlow() },
        );
        return await athenaResults(
          (token) =>
            client
              .send(new athena.GetQueryResultsCommand({ QueryExecutionId: id, MaxResults: 1000, NextToken: token }))
              .catch(failed('GetQueryResults')),
          check,
        );
      } catch (error) {
        // Nobody reads it any more: stop paying for its scan (best effort).
        if (!ended && !(error instanceof LakeQueryFailed))
          await client.send(new athena.StopQueryExecutionCommand({ QueryExecutionId: id })).catch(() => {});
        throw error;
      }
    },
  };
}

/** What the runner reads of a GetQueryResults page. */
interface ResultsPage {
  ResultSet?: {
    ResultSetMetadata?: { ColumnInfo?: { Name?: string }[] };
    Rows?: { Data?: { VarCharValue?: string }[] }[];
  };
  NextToken?: string;
}

/** Every page of a finished query's results; the first row of the first page is the header. */
async function athenaResults(
  page: (token: string | undefined) => Promise<ResultsPage>,
  check: () => void,
): Promise<LakeRow[]> {
  const rows: LakeRow[] = [];
  let names: string[] | undefined;
  let token: string | undefined;
  let first = true;
  do {
    check();
    const reply = await page(token);
    const set = reply.ResultSet ?? {};
    names ??= (set.ResultSetMetadata?.ColumnInfo ?? []).map((c) => String(c.Name));
    const data = (set.Rows ?? []).slice(first ? 1 : 0);
    first = false;
    for (const row of data) {
      const cells = row.Data ?? [];
      rows.push(Object.fromEntries(names.map((n, i) => [n, cells[i]?.VarCharValue ?? null])));
    }
    if (rows.length > LAKE_RESULT_ROWS) throw tooManyRows();
    token = typeof reply.NextToken === 'string' && reply.NextToken ? reply.NextToken : undefined;
  } while (token);
  return rows;
}

// ---------------------------------------------------------------------------------------------
// DuckDB

type Duck = typeof import('@duckdb/node-api');
type DuckInstance = Awaited<ReturnType<Duck['DuckDBInstance']['create']>>;

/** Each sandbox's caps: a runaway query fails ("Out of Memory") instead of taking the machine; nothing spills to disk. */
export const DUCKDB_MEMORY_LIMIT = '1GB';
export const DUCKDB_THREADS = 2;
/** Sandboxes kept open (one per project queried lately; ~2 ms a query on an open one, ~18 ms to open: docs/benchmarks.md). */
const DUCKDB_SANDBOXES = 16;

// Loaded on first use (infra/build.ts keeps the package out of every bundle).
let duck: Promise<Duck> | undefined;
const duckdb = () => {
  duck ??= import('@duckdb/node-api');
  return duck;
};

/**
 * A DuckDB instance that can read only `<lake>/events/project_id=<p>/` (DuckDB's own file-access
 * check: every other path, the network, extensions and ATTACH are refused), whose settings no
 * statement can change, with a memory and thread cap and no temporary files.
 */
export async function openDuckdbSandbox(lakeDir: string, projectId: number): Promise<DuckInstance> {
  const { DuckDBInstance } = await duckdb();
  const own = `${lakeDir.replace(/\/+$/, '')}/${projectPrefixes(projectId).events}`;
  const instance = await DuckDBInstance.create(':memory:', {
    // No extension is installed or loaded at run time (no network): parquet is built in.
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    memory_limit: DUCKDB_MEMORY_LIMIT,
    threads: String(DUCKDB_THREADS),
    // No spilling: the temporary folder would be one more place a statement could write.
    temp_directory: '',
  });
  const connection = await instance.connect();
  try {
    // In this order: the list can change only while external access is on, and nothing after the lock.
    await connection.run(`SET allowed_directories = ['${own.replaceAll("'", "''")}']`);
    await connection.run('SET enable_external_access = false');
    await connection.run('SET lock_configuration = true');
  } finally {
    connection.closeSync();
  }
  return instance;
}

/** DuckDB's refusals that mean the statement tried to leave the sandbox. */
const DUCKDB_REFUSED = /^Permission Error|the configuration has been locked|Cannot prepare multiple statements/;

interface Sandbox {
  instance: Promise<DuckInstance>;
  running: number;
  evicted: boolean;
}

export function duckdbEngine(lakeDir: string): LakeEngine {
  const sandboxes = new Map<number, Sandbox>();
  const sandboxOf = (projectId: number): Sandbox => {
    let sandbox = sandboxes.get(projectId);
    sandboxes.delete(projectId);
    if (!sandbox) {
      const opened: Sandbox = { instance: openDuckdbSandbox(lakeDir, projectId), running: 0, evicted: false };
      opened.instance.catch(() => {
        if (sandboxes.get(projectId) === opened) sandboxes.delete(projectId);
      });
      sandbox = opened;
    }
    sandboxes.set(projectId, sandbox);
    for (const [oldest, old] of sandboxes) {
      if (sandboxes.size <= DUCKDB_SANDBOXES) break;
      sandboxes.delete(oldest);
      old.evicted = true;
      if (!old.running) closeSandbox(old);
    }
    return sandbox;
  };
  return {
    name: 'duckdb',
    source: (files) => ({ dialect: 'duckdb', files: [...files] }),
    async run(projectId, sql, check, deadline) {
      check();
      const sandbox = sandboxOf(projectId);
      sandbox.running++;
      try {
        const { StatementType } = await duckdb();
        const connection = await (await sandbox.instance).connect();
        // The caller's deadline is the statement's timeout: DuckDB stops where it is (as Athena's query is stopped).
        const left = deadline - Date.now();
        const timer =
          Number.isFinite(left) && left < 2 ** 31
            ? setTimeout(() => connection.interrupt(), Math.max(0, left))
            : undefined;
        try {
          // DuckDB's parser splits the text: more than one statement is refused by prepare() itself.
          const statement = await connection.prepare(sql);
          // A statement DuckDB would run inside the sandbox (COPY into the project's own folder, CREATE, SET
          // before it reaches the lock): refused before it runs. Only a query reads; nothing else is asked of the lake.
          if (statement.statementType !== StatementType.SELECT)
            throw new LakeAccessDenied('DuckDB parsed something other than one SELECT.');
          const rows = (await statement.runAndReadAll()).getRowObjectsJson();
          if (rows.length > LAKE_RESULT_ROWS) throw tooManyRows();
          check();
          return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, text(v)])));
        } catch (error) {
          throw duckdbError(error, check, deadline);
        } finally {
          clearTimeout(timer);
          connection.closeSync();
        }
      } finally {
        sandbox.running--;
        if (sandbox.evicted && !sandbox.running) closeSandbox(sandbox);
      }
    },
  };
}

function closeSandbox(sandbox: Sandbox): void {
  sandbox.instance.then((instance) => instance.closeSync()).catch(() => {});
}

const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function duckdbError(error: unknown, check: () => void, deadline: number): unknown {
  if (Date.now() >= deadline && !(error instanceof LakeAccessDenied)) {
    check();
    return new LakeTooSlow();
  }
  const message = error instanceof Error ? error.message : String(error);
  const first = (message.split('\n')[0] ?? '').replace(/"\/[^"]*"/g, '"<path>"').slice(0, 300);
  if (DUCKDB_REFUSED.test(message)) return new LakeAccessDenied(`DuckDB: ${first}`);
  if (/^Out of Memory Error/.test(message))
    return new LakeQueryFailed(
      `The lake engine's memory limit (${DUCKDB_MEMORY_LIMIT}) was reached: narrow the range, the breakdown or the columns read.`,
    );
  return error;
}

// ---------------------------------------------------------------------------------------------

/** The stage's engine, one per container (its sessions and sandboxes cached), re-made when the configuration object changes (tests). */
let current: { settings: unknown; engine: LakeEngine } | undefined;

/** The stage's lake engine, or undefined where trends do not read the lake. */
export function lakeEngine(): LakeEngine | undefined {
  const { lakeEngine: settings, lake } = config();
  if (!settings || !lake) return undefined;
  if (current?.settings === settings) return current.engine;
  const engine =
    settings.kind === 'athena' ? athenaEngine(settings) : 'dir' in lake ? duckdbEngine(lake.dir) : undefined;
  if (!engine) return undefined;
  current = { settings, engine };
  return engine;
}
