import { describe, expect, it } from 'vitest';
import { RESULT_REUSE } from '#shared/lake/athena.ts';
import {
  type AthenaCall,
  type AthenaReply,
  athenaEngine,
  LAKE_RESULT_ROWS,
  LakeQueryFailed,
  LakeTooSlow,
} from '#shared/lake/engine.ts';
import { printTrendSql } from '#shared/lake/sql/trends.ts';
import { parseTrendRequest, resolveDateRange } from '#shared/trends/index.ts';
import { expectTrinoStatement } from '../../support/trino-grammar.ts';

const SETTINGS = { workgroup: 'analytics-lake', database: 'analytics_lake' };
const FAST = { baseMs: 0, capMs: 0 };

/** A mocked Athena: replies per action in order (the last one repeats), every call recorded. */
function mockAthena(replies: Record<string, (AthenaReply | Error)[]>) {
  const calls: { action: string; body: Record<string, unknown> }[] = [];
  const call: AthenaCall = async (action, body) => {
    calls.push({ action, body });
    const list = replies[action] ?? [{}];
    const reply = list.length > 1 ? list.shift()! : list[0]!;
    if (reply instanceof Error) throw reply;
    return reply;
  };
  return { call, calls };
}

const state = (State: string, StateChangeReason?: string): AthenaReply => ({
  QueryExecution: { Status: { State, ...(StateChangeReason ? { StateChangeReason } : {}) } },
});
const header = { Data: [{ VarCharValue: 'series' }, { VarCharValue: 'bucket' }, { VarCharValue: 'value' }] };
const columns = { ColumnInfo: [{ Name: 'series' }, { Name: 'bucket' }, { Name: 'value' }] };
const row = (bucket: string, value: string | undefined) => ({
  Data: [{ VarCharValue: '0' }, { VarCharValue: bucket }, value === undefined ? {} : { VarCharValue: value }],
});

describe('the Athena runner (mocked SDK calls: Athena cannot run here)', () => {
  it('starts the printed SQL in the workgroup with result reuse, polls until it succeeds, then reads every page', async () => {
    const model = parseTrendRequest({ events: [{ id: '$pageview' }], date_from: '2024-03-01', date_to: '2024-03-02' });
    const settings = { timezone: 'UTC', week_start_day: 1 as const, test_account_filters: [] };
    const range = resolveDateRange(model, settings, new Date('2024-03-16T12:00:00Z'));
    const engine = athenaEngine(SETTINGS, (() => {}) as never);
    const sql = printTrendSql({ projectId: 7, model, range, project: settings }, engine.source([]));
    const { call, calls } = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-1' }],
      GetQueryExecution: [state('QUEUED'), state('RUNNING'), state('SUCCEEDED')],
      GetQueryResults: [
        {
          ResultSet: { ResultSetMetadata: columns, Rows: [header, row('2024-03-01 00:00:00.000', '3')] },
          NextToken: 't2',
        },
        { ResultSet: { ResultSetMetadata: columns, Rows: [row('2024-03-02 00:00:00.000', undefined)] } },
      ],
    });
    const rows = await athenaEngine(SETTINGS, call, FAST).run(sql, () => {}, Infinity);
    expect(rows).toEqual([
      { series: '0', bucket: '2024-03-01 00:00:00.000', value: '3' },
      { series: '0', bucket: '2024-03-02 00:00:00.000', value: null },
    ]);
    expect(calls.map((c) => c.action)).toEqual([
      'StartQueryExecution',
      'GetQueryExecution',
      'GetQueryExecution',
      'GetQueryExecution',
      'GetQueryResults',
      'GetQueryResults',
    ]);
    expect(calls[0]!.body).toEqual({
      QueryString: sql,
      WorkGroup: 'analytics-lake',
      QueryExecutionContext: { Database: 'analytics_lake' },
      ResultReuseConfiguration: RESULT_REUSE,
    });
    // The Glue table, never files: Athena finds the days' files through partition projection and the manifests.
    expect(sql).toContain('FROM "analytics_lake"."events"');
    expectTrinoStatement(sql, { table: '"analytics_lake"."events"', projectId: 7 });
    expect(calls[4]!.body).toEqual({ QueryExecutionId: 'q-1', MaxResults: 1000 });
    expect(calls[5]!.body).toEqual({ QueryExecutionId: 'q-1', MaxResults: 1000, NextToken: 't2' });
  });

  it('a failed or cancelled query is an error naming Athena’s reason (and is not stopped again)', async () => {
    for (const final of ['FAILED', 'CANCELLED']) {
      const { call, calls } = mockAthena({
        StartQueryExecution: [{ QueryExecutionId: 'q-2' }],
        GetQueryExecution: [state('RUNNING'), state(final, 'Bytes scanned limit was exceeded')],
      });
      const run = athenaEngine(SETTINGS, call, FAST).run('SELECT 1', () => {}, Infinity);
      await expect(run).rejects.toThrow(LakeQueryFailed);
      await expect(run).rejects.toThrow(`Athena query q-2 ${final}: Bytes scanned limit was exceeded`);
      expect(calls.map((c) => c.action)).not.toContain('StopQueryExecution');
    }
  });

  it('past its deadline: stops the query and says to use /query asynchronously', async () => {
    const { call, calls } = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-3' }],
      GetQueryExecution: [state('RUNNING')],
    });
    const run = athenaEngine(SETTINGS, call, { baseMs: 5, capMs: 5 }).run('SELECT 1', () => {}, Date.now() + 50);
    await expect(run).rejects.toThrow(LakeTooSlow);
    await expect(run).rejects.toThrow(/refresh": "async"/);
    expect(calls.at(-1)).toEqual({ action: 'StopQueryExecution', body: { QueryExecutionId: 'q-3' } });
  });

  it('a checkpoint that throws (cancelled, handed to the worker) stops the query too', async () => {
    const { call, calls } = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-4' }],
      GetQueryExecution: [state('RUNNING')],
    });
    let polls = 0;
    const check = () => {
      if (++polls > 3) throw new Error('cancelled');
    };
    await expect(athenaEngine(SETTINGS, call, FAST).run('SELECT 1', check, Infinity)).rejects.toThrow('cancelled');
    expect(calls.at(-1)!.action).toBe('StopQueryExecution');
  });

  it('no execution id, an HTTP error, and too many rows are errors, not partial answers', async () => {
    await expect(
      athenaEngine(SETTINGS, mockAthena({ StartQueryExecution: [{}] }).call, FAST).run('SELECT 1', () => {}, Infinity),
    ).rejects.toThrow(LakeQueryFailed);
    const failing = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-5' }],
      GetQueryExecution: [new LakeQueryFailed('Athena GetQueryExecution: 400 InvalidRequestException')],
    });
    await expect(athenaEngine(SETTINGS, failing.call, FAST).run('SELECT 1', () => {}, Infinity)).rejects.toThrow(
      'InvalidRequestException',
    );
    const page = { ResultSet: { ResultSetMetadata: columns, Rows: Array.from({ length: 1001 }, () => row('x', '1')) } };
    const huge = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-6' }],
      GetQueryExecution: [state('SUCCEEDED')],
      GetQueryResults: [{ ...page, NextToken: 'more' }],
    });
    const run = athenaEngine(SETTINGS, huge.call, FAST).run('SELECT 1', () => {}, Infinity);
    await expect(run).rejects.toMatchObject({ status: 413 });
    // It stopped reading pages at the cap.
    expect(huge.calls.filter((c) => c.action === 'GetQueryResults').length).toBe(Math.ceil(LAKE_RESULT_ROWS / 1000));
  });
});
