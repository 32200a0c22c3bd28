import {
  AthenaClient,
  GetQueryExecutionCommand,
  type GetQueryExecutionCommandOutput,
  GetQueryResultsCommand,
  type GetQueryResultsCommandOutput,
  InvalidRequestException,
  StartQueryExecutionCommand,
  type StartQueryExecutionCommandOutput,
  StopQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import { AssumeRoleCommand, type AssumeRoleCommandInput, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { lakeSessionPolicy, RESULT_REUSE } from '#shared/lake/athena.ts';
import {
  type AthenaSettings,
  athenaEngine,
  LAKE_RESULT_ROWS,
  LakeAccessDenied,
  LakeQueryFailed,
  LakeTooSlow,
  lakeQueryScope,
  projectAthenaClients,
} from '#shared/lake/engine.ts';
import { printTrendSql } from '#shared/lake/sql/trends.ts';
import { parseTrendRequest, resolveDateRange } from '#shared/trends/index.ts';
import { expectTrinoStatement } from '../../support/trino-grammar.ts';

const SETTINGS: AthenaSettings = {
  workgroup: 'analytics-lake',
  database: 'analytics_lake',
  bucket: 'analytics-lake-bucket',
  region: 'eu-west-1',
  queryRole: 'arn:aws:iam::123456789012:role/analytics-dev-LakeQueryRole',
};
const FAST = { baseMs: 0, capMs: 0 };
const HOUR = 3_600_000;

type Reply =
  | Partial<StartQueryExecutionCommandOutput>
  | Partial<GetQueryExecutionCommandOutput>
  | Partial<GetQueryResultsCommandOutput>
  | Error;

const sts = mockClient(STSClient);
const athena = mockClient(AthenaClient);
/** Each AssumeRole's input, and the session's keys: named after the session, so a client's keys say whose session it holds. */
let assumed: AssumeRoleCommandInput[];
beforeEach(() => {
  sts.reset();
  athena.reset();
  assumed = [];
  sts.on(AssumeRoleCommand).callsFake(issue);
});

async function issue(input: AssumeRoleCommandInput) {
  assumed.push(input);
  const n = assumed.length;
  return {
    Credentials: {
      AccessKeyId: `ASIA-${input.RoleSessionName}-${n}`,
      SecretAccessKey: `secret-${n}`,
      SessionToken: `token-${input.RoleSessionName}-${n}`,
      Expiration: new Date(Date.now() + HOUR),
    },
  };
}

/**
 * A mocked Athena (aws-sdk-client-mock): replies per action in order (the last one repeats), every
 * call recorded with its input and the access key of the client that sent it.
 */
function mockAthena(replies: Record<string, Reply[]>) {
  const calls: { action: string; body: Record<string, unknown>; key: string }[] = [];
  const commands = {
    StartQueryExecution: StartQueryExecutionCommand,
    GetQueryExecution: GetQueryExecutionCommand,
    GetQueryResults: GetQueryResultsCommand,
    StopQueryExecution: StopQueryExecutionCommand,
  };
  for (const [action, command] of Object.entries(commands))
    athena.on(command as typeof StartQueryExecutionCommand).callsFake(async (input, getClient) => {
      const { accessKeyId } = await (getClient().config.credentials as () => Promise<{ accessKeyId: string }>)();
      calls.push({ action, body: input, key: accessKeyId });
      const list = replies[action] ?? [{}];
      const reply = list.length > 1 ? list.shift()! : list[0]!;
      if (reply instanceof Error) throw reply;
      return reply;
    });
  return { calls };
}

const state = (State: string, StateChangeReason?: string): Partial<GetQueryExecutionCommandOutput> => ({
  QueryExecution: { Status: { State: State as 'RUNNING', ...(StateChangeReason ? { StateChangeReason } : {}) } },
});
const header = { Data: [{ VarCharValue: 'series' }, { VarCharValue: 'bucket' }, { VarCharValue: 'value' }] };
const columns = {
  ColumnInfo: [
    { Name: 'series', Type: 'varchar' },
    { Name: 'bucket', Type: 'varchar' },
    { Name: 'value', Type: 'varchar' },
  ],
};
const row = (bucket: string, value: string | undefined) => ({
  Data: [{ VarCharValue: '0' }, { VarCharValue: bucket }, value === undefined ? {} : { VarCharValue: value }],
});

describe('the Athena runner (mocked SDK calls: Athena cannot run here)', () => {
  it('starts the printed SQL in the workgroup with result reuse, polls until it succeeds, then reads every page', async () => {
    const model = parseTrendRequest({ events: [{ id: '$pageview' }], date_from: '2024-03-01', date_to: '2024-03-02' });
    const settings = { timezone: 'UTC', week_start_day: 1 as const, test_account_filters: [] };
    const range = resolveDateRange(model, settings, new Date('2024-03-16T12:00:00Z'));
    const engine = athenaEngine(SETTINGS, FAST);
    const sql = printTrendSql({ projectId: 7, model, range, project: settings }, engine.source([]));
    const { calls } = mockAthena({
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
    const rows = await engine.run(7, sql, () => {}, Infinity);
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
      // The project's own results folder: its session may write nowhere else.
      ResultConfiguration: {
        OutputLocation: 's3://analytics-lake-bucket/athena-results/project_id=7/',
        EncryptionConfiguration: { EncryptionOption: 'SSE_S3' },
      },
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
      athena.reset();
      const { calls } = mockAthena({
        StartQueryExecution: [{ QueryExecutionId: 'q-2' }],
        GetQueryExecution: [state('RUNNING'), state(final, 'Bytes scanned limit was exceeded')],
      });
      const run = athenaEngine(SETTINGS, FAST).run(7, 'SELECT 1', () => {}, Infinity);
      await expect(run).rejects.toThrow(LakeQueryFailed);
      await expect(run).rejects.toThrow(`Athena query q-2 ${final}: Bytes scanned limit was exceeded`);
      expect(calls.map((c) => c.action)).not.toContain('StopQueryExecution');
    }
  });

  it('past its deadline: stops the query and says to use /query asynchronously', async () => {
    const { calls } = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-3' }],
      GetQueryExecution: [state('RUNNING')],
    });
    const run = athenaEngine(SETTINGS, { baseMs: 5, capMs: 5 }).run(7, 'SELECT 1', () => {}, Date.now() + 50);
    await expect(run).rejects.toThrow(LakeTooSlow);
    await expect(run).rejects.toThrow(/refresh": "async"/);
    expect(calls.at(-1)).toMatchObject({ action: 'StopQueryExecution', body: { QueryExecutionId: 'q-3' } });
  });

  it('a checkpoint that throws (cancelled, handed to the worker) stops the query too', async () => {
    const { calls } = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-4' }],
      GetQueryExecution: [state('RUNNING')],
    });
    let polls = 0;
    const check = () => {
      if (++polls > 3) throw new Error('cancelled');
    };
    await expect(athenaEngine(SETTINGS, FAST).run(7, 'SELECT 1', check, Infinity)).rejects.toThrow('cancelled');
    expect(calls.at(-1)!.action).toBe('StopQueryExecution');
  });

  it('no execution id, an AWS error, and too many rows are errors, not partial answers', async () => {
    mockAthena({ StartQueryExecution: [{}] });
    await expect(athenaEngine(SETTINGS, FAST).run(7, 'SELECT 1', () => {}, Infinity)).rejects.toThrow(LakeQueryFailed);
    athena.reset();
    mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-5' }],
      GetQueryExecution: [new InvalidRequestException({ message: 'bad id', $metadata: { httpStatusCode: 400 } })],
    });
    const failing = athenaEngine(SETTINGS, FAST).run(7, 'SELECT 1', () => {}, Infinity);
    await expect(failing).rejects.toThrow(LakeQueryFailed);
    await expect(failing).rejects.toThrow('Athena GetQueryExecution: 400 InvalidRequestException: bad id');
    athena.reset();
    const page = { ResultSet: { ResultSetMetadata: columns, Rows: Array.from({ length: 1001 }, () => row('x', '1')) } };
    const huge = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-6' }],
      GetQueryExecution: [state('SUCCEEDED')],
      GetQueryResults: [{ ...page, NextToken: 'more' }],
    });
    const run = athenaEngine(SETTINGS, FAST).run(7, 'SELECT 1', () => {}, Infinity);
    await expect(run).rejects.toMatchObject({ status: 413 });
    // It stopped reading pages at the cap.
    expect(huge.calls.filter((c) => c.action === 'GetQueryResults').length).toBe(Math.ceil(LAKE_RESULT_ROWS / 1000));
  });
});

describe("each project's queries run with a session that reaches that project's objects only (the second wall)", () => {
  const succeeding = () =>
    mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q' }],
      GetQueryExecution: [state('SUCCEEDED')],
      GetQueryResults: [{ ResultSet: { ResultSetMetadata: columns, Rows: [header] } }],
    });

  it("every StartQueryExecution is sent by a client holding its project's session, whose policy names only that project", async () => {
    const { calls } = succeeding();
    const engine = athenaEngine(SETTINGS, FAST);
    for (const project of [7, 8, 7, 70, 8]) await engine.run(project, `SELECT ${project}`, () => {}, Infinity);
    const starts = calls.filter((c) => c.action === 'StartQueryExecution');
    expect(starts).toHaveLength(5);
    for (const start of starts) {
      const project = Number(String(start.body.QueryString).slice('SELECT '.length));
      // The keys STS issued to the session named after this project (one session each: cached).
      expect(start.key).toMatch(new RegExp(`^ASIA-lake-project-${project}-\\d+$`));
      const session = assumed[Number(start.key.split('-').at(-1)) - 1]!;
      expect(session.RoleSessionName).toBe(`lake-project-${project}`);
      expect((start.body.ResultConfiguration as { OutputLocation: string }).OutputLocation).toBe(
        `s3://analytics-lake-bucket/athena-results/project_id=${project}/`,
      );
    }
    // Every Athena call of a query, not only the start, goes through its project's client.
    for (const c of calls) expect(c.key).toMatch(/^ASIA-lake-project-(7|8|70)-\d$/);
    expect(assumed.map((a) => a.RoleSessionName)).toEqual(['lake-project-7', 'lake-project-8', 'lake-project-70']);

    for (const [i, project] of [7, 8, 70].entries()) {
      const input = assumed[i]!;
      expect(input).toMatchObject({ RoleArn: SETTINGS.queryRole, DurationSeconds: 3600 });
      const policy = JSON.parse(input.Policy!) as { Statement: Statement[] };
      expect(policy).toEqual(lakeSessionPolicy(lakeQueryScope(SETTINGS), project));
      // Every S3 object it may touch is under one of this project's three prefixes, and it may list nothing else.
      const bucket = 'arn:aws:s3:::analytics-lake-bucket';
      const objects = policy.Statement.filter((s) => s.Action.some((a) => a.startsWith('s3:')))
        .flatMap((s) => s.Resource)
        .filter((r) => r !== bucket);
      expect(objects.sort()).toEqual(
        [
          `${bucket}/athena-results/project_id=${project}/*`,
          `${bucket}/events/project_id=${project}/*`,
          `${bucket}/manifests/events/project_id=${project}/*`,
        ].sort(),
      );
      const list = policy.Statement.find((s) => s.Action.includes('s3:ListBucket'))!;
      expect(list.Resource).toEqual([bucket]);
      expect(list.Condition).toEqual({
        StringLike: {
          's3:prefix': [
            `events/project_id=${project}/*`,
            `manifests/events/project_id=${project}/*`,
            `athena-results/project_id=${project}/*`,
          ],
        },
      });
      // No other project's number anywhere, and no wildcard but the trailing one of the project's folders.
      expect([...input.Policy!.matchAll(/project_id=(\d+)/g)].map((m) => Number(m[1]))).toEqual(Array(6).fill(project));
      expect(input.Policy!.replaceAll(`project_id=${project}/*`, '')).not.toContain('*');
      // Athena and Glue: the lake's workgroup and table only.
      expect(policy.Statement.filter((s) => !s.Action.some((a) => a.startsWith('s3:'))).map((s) => s.Resource)).toEqual(
        [
          ['arn:aws:athena:eu-west-1:123456789012:workgroup/analytics-lake'],
          [
            'arn:aws:glue:eu-west-1:123456789012:catalog',
            'arn:aws:glue:eu-west-1:123456789012:database/analytics_lake',
            'arn:aws:glue:eu-west-1:123456789012:table/analytics_lake/events',
          ],
        ],
      );
    }
  });

  it('keeps a session per project until shortly before it expires, then assumes the role again', async () => {
    let now = Date.now();
    const clients = projectAthenaClients(SETTINGS, () => now);
    const first = await clients(7);
    expect(await clients(7)).toBe(first);
    expect(assumed).toHaveLength(1);
    // 44 minutes on: still more than a Lambda's 15 minutes left on the hour.
    now += 44 * 60_000;
    expect(await clients(7)).toBe(first);
    expect(assumed).toHaveLength(1);
    now += 2 * 60_000;
    const renewed = await clients(7);
    expect(renewed).not.toBe(first);
    expect(assumed).toHaveLength(2);
    expect(((await renewed.config.credentials()) as { accessKeyId: string }).accessKeyId).toBe('ASIA-lake-project-7-2');
  });

  it('a failed AssumeRole is a 503 naming it, and is not cached', async () => {
    sts
      .on(AssumeRoleCommand)
      .rejectsOnce(Object.assign(new Error('not authorized'), { name: 'AccessDenied' }))
      .callsFake(issue);
    const clients = projectAthenaClients(SETTINGS);
    const refused = clients(7);
    await expect(refused).rejects.toThrow(LakeQueryFailed);
    await expect(refused).rejects.toThrow('Could not open the lake session of project 7: AccessDenied: not authorized');
    await expect(clients(7)).resolves.toBeInstanceOf(AthenaClient);
  });

  it('refuses a project id the lake cannot name before asking STS', async () => {
    const clients = projectAthenaClients(SETTINGS);
    for (const bad of [-1, 1.5, Number.NaN]) expect(() => clients(bad)).toThrow(/bad project id/);
    expect(assumed).toHaveLength(0);
  });

  it("a query Athena refuses for access (another project's objects) is a 403, not a 503", async () => {
    // What a printed UNION over the whole table would meet deployed: S3 refuses the session the other project's pointers.
    const { calls } = mockAthena({
      StartQueryExecution: [{ QueryExecutionId: 'q-9' }],
      GetQueryExecution: [
        state(
          'FAILED',
          'Permission denied on S3 path: s3://analytics-lake-bucket/manifests/events/project_id=8/day=2024-03-01/manifest',
        ),
      ],
    });
    const run = athenaEngine(SETTINGS, FAST).run(7, 'SELECT 1', () => {}, Infinity);
    await expect(run).rejects.toThrow(LakeAccessDenied);
    await expect(run).rejects.toMatchObject({ status: 403 });
    expect(calls.map((c) => c.action)).not.toContain('StopQueryExecution');
  });

  it('fits STS’s 2,048 characters for a session policy with the longest names a stage gets', () => {
    // S3's longest bucket name; the workgroup and database are `<prefix>-lake` and `<prefix>_lake`, and a
    // prefix leaves room for `-<operation>` in a 64-character function name.
    const prefix = 'p'.repeat(40);
    const scope = {
      ...lakeQueryScope(SETTINGS),
      partition: 'aws-us-gov',
      bucket: 'b'.repeat(63),
      workgroup: `${prefix}-lake`,
      database: `${prefix}_lake`,
    };
    expect(JSON.stringify(lakeSessionPolicy(scope, Number.MAX_SAFE_INTEGER)).length).toBeLessThanOrEqual(2048);
  });

  it('reads the partition and account from the role ARN, and refuses anything else', () => {
    expect(lakeQueryScope(SETTINGS)).toMatchObject({ partition: 'aws', account: '123456789012' });
    expect(() => lakeQueryScope({ ...SETTINGS, queryRole: 'arn:aws:iam::123456789012:user/x' })).toThrow(/role ARN/);
  });
});

interface Statement {
  Action: string[];
  Resource: string[];
  Condition?: unknown;
}
