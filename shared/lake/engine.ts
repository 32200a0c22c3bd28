/**
 * What runs the lake's SQL (shared/lake/sql/): Athena deployed (StartQueryExecution in the lake's
 * workgroup with result reuse, GetQueryExecution polled, GetQueryResults paged), DuckDB in the local
 * runtime, tests and benchmarks (over the current files of the days read). One interface, so the
 * routing (shared/domain/lake-trends.ts) is the same code on both. DuckDB is imported on first use
 * only, and kept out of the Lambda bundles (infra/build.ts): no function deployed with Athena loads it.
 */
import { config } from '../config.ts';
import { PayloadTooLarge, ServiceUnavailable } from '../errors.ts';
import { environmentCredentials, signedHeaders } from '../aws/sigv4.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';
import { LAKE_TABLE, RESULT_REUSE } from './athena.ts';
import type { LakeSource } from './sql/trends.ts';

/** One result row: every value as text (Athena's VarCharValue; DuckDB's values printed the same way), NULL as null. */
export type LakeRow = Record<string, string | null>;

export interface LakeEngine {
  name: 'athena' | 'duckdb';
  /** Where the SQL reads: Athena's table (partition projection finds the days), or these files. */
  source(files: readonly string[]): LakeSource;
  /** Runs one statement; `check` is called between polls and pages (it throws to stop: deadline, cancellation). */
  run(sql: string, check: () => void, deadline: number): Promise<LakeRow[]>;
}

/** Rows a lake answer may hold (a trend's are series x breakdown values x buckets): past it a 413, not an unbounded read. */
export const LAKE_RESULT_ROWS = 200_000;

/** Athena refused or failed the query (its bytes-scanned cutoff, a bad state): a 503 naming why, never a silent in-process retry of a trend too big for it. */
export class LakeQueryFailed extends ServiceUnavailable {
  override name = 'LakeQueryFailed';
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

/** What the runner reads of Athena's replies (AWS's JSON 1.1 protocol). */
export interface AthenaReply {
  QueryExecutionId?: string;
  QueryExecution?: { Status?: { State?: string; StateChangeReason?: string } };
  ResultSet?: {
    ResultSetMetadata?: { ColumnInfo?: { Name: string }[] };
    Rows?: { Data?: { VarCharValue?: string }[] }[];
  };
  NextToken?: string;
  __type?: string;
  message?: string;
}

/** The four Athena actions the runner calls, JSON in and out: a mock in tests. */
export type AthenaCall = (action: string, body: Record<string, unknown>) => Promise<AthenaReply>;

const RUNNING = new Set(['QUEUED', 'RUNNING']);

export function athenaEngine(
  settings: { workgroup: string; database: string },
  call: AthenaCall,
  poll: { baseMs: number; capMs: number } = { baseMs: 250, capMs: 1_000 },
): LakeEngine {
  return {
    name: 'athena',
    source: () => ({ dialect: 'athena', database: settings.database, table: LAKE_TABLE }),
    async run(sql, check, deadline) {
      check();
      const started = await call('StartQueryExecution', {
        QueryString: sql,
        WorkGroup: settings.workgroup,
        QueryExecutionContext: { Database: settings.database },
        ResultReuseConfiguration: RESULT_REUSE,
      });
      const id = String(started.QueryExecutionId ?? '');
      if (!id) throw new LakeQueryFailed('Athena StartQueryExecution returned no QueryExecutionId');
      try {
        // The one retry loop polls too: TRANSIENT while the query runs, backing off to a poll a second.
        await retryTransient(
          'Athena query',
          async () => {
            check();
            const status = (await call('GetQueryExecution', { QueryExecutionId: id })).QueryExecution?.Status ?? {};
            const state = String(status.State ?? '');
            if (RUNNING.has(state)) return TRANSIENT;
            if (state === 'SUCCEEDED') return true;
            throw new LakeQueryFailed(
              `Athena query ${id} ${state || 'unknown'}: ${status.StateChangeReason ?? ''}`.trim(),
            );
          },
          { deadline, baseMs: poll.baseMs, capMs: poll.capMs, gaveUp: () => new LakeTooSlow() },
        );
        return await athenaResults(call, id, check);
      } catch (error) {
        // Nobody reads it any more: stop paying for its scan (best effort).
        if (!(error instanceof LakeQueryFailed))
          await call('StopQueryExecution', { QueryExecutionId: id }).catch(() => {});
        throw error;
      }
    },
  };
}

/** Every page of a finished query's results; the first row of the first page is the header. */
async function athenaResults(call: AthenaCall, id: string, check: () => void): Promise<LakeRow[]> {
  const rows: LakeRow[] = [];
  let names: string[] | undefined;
  let token: string | undefined;
  let first = true;
  do {
    check();
    const page = await call('GetQueryResults', {
      QueryExecutionId: id,
      MaxResults: 1000,
      ...(token ? { NextToken: token } : {}),
    });
    const set = page.ResultSet ?? {};
    names ??= (set.ResultSetMetadata?.ColumnInfo ?? []).map((c) => c.Name);
    const data = (set.Rows ?? []).slice(first ? 1 : 0);
    first = false;
    for (const row of data) {
      const cells = row.Data ?? [];
      rows.push(Object.fromEntries(names.map((n, i) => [n, cells[i]?.VarCharValue ?? null])));
    }
    if (rows.length > LAKE_RESULT_ROWS) throw tooManyRows();
    token = typeof page.NextToken === 'string' && page.NextToken ? page.NextToken : undefined;
  } while (token);
  return rows;
}

/** Athena's JSON API signed with the function's own credentials (the SDK's client would add its schemas to the bundle for four calls). */
export function athenaHttp(region: string): AthenaCall {
  const host = `athena.${region}.amazonaws.com`;
  return async (action, body) => {
    const payload = JSON.stringify(body);
    const headers = signedHeaders({
      method: 'POST',
      url: new URL(`https://${host}/`),
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `AmazonAthena.${action}` },
      body: payload,
      service: 'athena',
      region,
      credentials: environmentCredentials(),
    });
    const res = await fetch(`https://${host}/`, {
      method: 'POST',
      headers,
      body: payload,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    const parsed = (text ? JSON.parse(text) : {}) as AthenaReply;
    if (!res.ok)
      throw new LakeQueryFailed(
        `Athena ${action}: ${res.status} ${parsed.__type ?? ''} ${parsed.message ?? ''}`.trim(),
      );
    return parsed;
  };
}

// ---------------------------------------------------------------------------------------------
// DuckDB

type DuckInstance = Awaited<ReturnType<typeof import('@duckdb/node-api')['DuckDBInstance']['create']>>;
let duck: Promise<DuckInstance> | undefined;

function duckInstance(): Promise<DuckInstance> {
  // Loaded on first use (infra/build.ts keeps the package out of every bundle).
  duck ??= import('@duckdb/node-api').then((m) =>
    // No extension is installed or loaded at run time (no network): parquet is built in.
    m.DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' }),
  );
  return duck;
}

const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export function duckdbEngine(): LakeEngine {
  return {
    name: 'duckdb',
    source: (files) => ({ dialect: 'duckdb', files: [...files] }),
    async run(sql, check, deadline) {
      check();
      const connection = await (await duckInstance()).connect();
      // The caller's deadline is the statement's timeout: DuckDB stops where it is (as Athena's query is stopped).
      const left = deadline - Date.now();
      const timer =
        Number.isFinite(left) && left < 2 ** 31
          ? setTimeout(() => connection.interrupt(), Math.max(0, left))
          : undefined;
      try {
        const rows = (await connection.runAndReadAll(sql)).getRowObjectsJson();
        if (rows.length > LAKE_RESULT_ROWS) throw tooManyRows();
        check();
        return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, text(v)])));
      } catch (error) {
        if (Date.now() < deadline) throw error;
        check();
        throw new LakeTooSlow();
      } finally {
        clearTimeout(timer);
        connection.closeSync();
      }
    },
  };
}

/** The stage's lake engine, or undefined where trends do not read the lake. */
export function lakeEngine(): LakeEngine | undefined {
  const engine = config().lakeEngine;
  if (!engine || !config().lake) return undefined;
  return engine.kind === 'athena' ? athenaEngine(engine, athenaHttp(engine.region)) : duckdbEngine();
}
