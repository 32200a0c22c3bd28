import { readFileSync } from 'node:fs';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { routePaths, routes, workers, type Route, type Worker } from '#functions/routes.ts';
import { FALLBACK_FUNCTION } from '#infra/build.ts';
import { WorkerFunction } from '#infra/constructs/service-function.ts';
import { StatefulResources } from '#infra/constructs/stateful.ts';
import { stageSettings } from '#infra/stages.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { bracedPath } from '#shared/http/path-template.ts';
import { logicalId, resources, synthStages } from './synth.ts';

const dev = synthStages('dev').dev!;
const { stack, template } = dev;

const WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];
const tableId = logicalId(stack, stack.table);

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
/** Every statement of the inline policies attached to a role. */
const statementsOf = (roleId: string): Statement[] =>
  Object.values(resources(template, 'AWS::IAM::Policy'))
    .filter((p) =>
      (p.Properties!.Roles as unknown[]).some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId })),
    )
    .flatMap((p) => p.Properties!.PolicyDocument.Statement as Statement[]);

/** Table grants as CDK writes them: read or read/write on the table and its indexes (plus stream record reads on the table ARN, which match no stream). */
const TABLE_READ = [
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:GetItem',
  'dynamodb:Scan',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DescribeTable',
];
const tableGrants = (access: 'read' | 'write' | 'none') =>
  access === 'none' ? [] : [`table:${access}`, 'table:records'];
/** Every function may write its own log group and send traces. */
const BASE = ['logs:own-log-group', 'xray'];
const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x));
const json = (x: unknown) => JSON.stringify(x);
const arnOf = (construct: Parameters<typeof logicalId>[1], attribute = 'Arn') =>
  json({ 'Fn::GetAtt': [logicalId(stack, construct), attribute] });
const queueArns = new Map<string, string>([
  [arnOf(stack.ingestFailures), 'ingest_failures'],
  ...[...stack.queues].map(([name, { queue }]) => [arnOf(queue), name] as [string, string]),
]);
const SQS_SEND = ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'];
const SQS_CONSUME = [
  'sqs:ReceiveMessage',
  'sqs:ChangeMessageVisibility',
  'sqs:GetQueueUrl',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
];
const EXPORT_CONTEXT = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['organization_id', 'batch_export_id'] },
  Null: { 'kms:EncryptionContextKeys': 'false' },
};

/** Names what one policy statement of `fn`'s role grants, or says it is unexpected. */
function permissionOf(st: Statement, ownLogGroup: string): string {
  const actions = [st.Action].flat();
  const resource = json(st.Resource);
  const table = json([
    { 'Fn::GetAtt': [tableId, 'Arn'] },
    { 'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, '/index/*']] },
  ]);
  const onItems = (...prefixes: string[]) =>
    resource === arnOf(stack.table) &&
    json(st.Condition) === json({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': prefixes } });
  const allow = st.Effect === 'Allow';
  const withoutCondition = st.Condition === undefined;
  if (
    allow &&
    withoutCondition &&
    sameSet(actions, ['logs:CreateLogStream', 'logs:PutLogEvents']) &&
    resource === json({ 'Fn::GetAtt': [ownLogGroup, 'Arn'] })
  )
    return 'logs:own-log-group';
  if (
    allow &&
    withoutCondition &&
    sameSet(actions, ['xray:PutTraceSegments', 'xray:PutTelemetryRecords']) &&
    resource === '"*"'
  )
    return 'xray';
  if (allow && withoutCondition && resource === table && sameSet(actions, TABLE_READ)) return 'table:read';
  if (allow && withoutCondition && resource === table && sameSet(actions, [...TABLE_READ, ...WRITE_ACTIONS]))
    return 'table:write';
  if (
    allow &&
    withoutCondition &&
    resource === table &&
    sameSet(actions, ['dynamodb:GetRecords', 'dynamodb:GetShardIterator'])
  )
    return 'table:records';
  if (allow && sameSet(actions, ['dynamodb:PutItem']) && onItems('TRENDCACHE#*')) return 'table:put-trend-cache';
  if (allow && sameSet(actions, ['dynamodb:UpdateItem']) && onItems('RATE#*')) return 'table:count-rate-limits';
  if (allow && sameSet(actions, ['dynamodb:PutItem']) && onItems('QUERY#*', 'QUERYCACHE#*'))
    return 'table:put-query-items';
  if (allow && sameSet(actions, ['dynamodb:UpdateItem']) && onItems('QUERY#*')) return 'table:update-query-status';
  if (allow && withoutCondition && sameSet(actions, ['dynamodb:ListStreams']) && resource === '"*"')
    return 'stream:list';
  if (
    allow &&
    withoutCondition &&
    sameSet(actions, ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator']) &&
    resource === arnOf(stack.table, 'StreamArn')
  )
    return 'stream:read';
  if (allow && withoutCondition && queueArns.has(resource) && sameSet(actions, SQS_SEND))
    return `sqs:send:${queueArns.get(resource)}`;
  if (allow && withoutCondition && queueArns.has(resource) && sameSet(actions, SQS_CONSUME))
    return `sqs:consume:${queueArns.get(resource)}`;
  const onKey = resource === arnOf(stack.exportSecretsKey) && json(st.Condition) === json(EXPORT_CONTEXT);
  if (allow && onKey && sameSet(actions, ['kms:GenerateDataKey'])) return 'kms:seal-export-secrets';
  if (allow && onKey && sameSet(actions, ['kms:Decrypt'])) return 'kms:open-export-secrets';
  if (allow && withoutCondition && sameSet(actions, ['sts:AssumeRole']) && resource === '"arn:*:iam::*:role/*"')
    return 'sts:assume-customer-roles';
  const resources = [st.Resource].flat().map(json);
  if (
    allow &&
    withoutCondition &&
    sameSet(actions, ['s3:PutObject', 's3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload']) &&
    resources.length === 2 &&
    resources[0]!.includes('/events/*') &&
    resources[1]!.includes('/manifests/events/*')
  )
    return 'lake:write';
  if (allow && withoutCondition && sameSet(actions, ['sts:AssumeRole']) && resource === LAKE_QUERY_ROLE_ARN)
    return 'lake:assume-query-role';
  const ownAccountRoles = json({
    'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':role/*']],
  });
  if (st.Effect === 'Deny' && withoutCondition && sameSet(actions, ['sts:AssumeRole']) && resource === ownAccountRoles)
    return 'sts:deny-own-account-roles';
  return `unexpected: ${json(st)}`;
}

/**
 * A row's `queriesLake` (infra/constructs/lake.ts grantQuery): the lake query role to assume (built
 * from its name, not read across stacks), nothing of Athena, Glue or S3 of its own.
 */
const LAKE_QUERY = ['lake:assume-query-role'];
const LAKE_READERS = [
  ...(routes as readonly Route[]).filter((r) => r.queriesLake).map((r) => r.operationId),
  ...(workers as readonly Worker[]).filter((w) => w.queriesLake).map((w) => w.name),
].sort();
const LAKE_QUERY_ROLE_ARN = json({
  'Fn::Join': [
    '',
    ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':role/analytics-dev-lake-query'],
  ],
});

/**
 * The lake query role's five statements (what any session may do at most): Athena in the lake's
 * workgroup, its Glue table, the bucket's listing, its day pointers and files read only, and
 * Athena's results under their own prefix.
 */

function lakeQueryPermission(actions: string[], resources: string[]): string | undefined {
  const athena = [
    'athena:StartQueryExecution',
    'athena:GetQueryExecution',
    'athena:GetQueryResults',
    'athena:StopQueryExecution',
  ];
  if (sameSet(actions, athena) && resources.length === 1 && resources[0]!.includes(':workgroup/analytics-dev-lake"'))
    return 'lake:athena';
  const glue = ['glue:GetDatabase', 'glue:GetTable', 'glue:GetPartition', 'glue:GetPartitions'];
  if (
    sameSet(actions, glue) &&
    resources.length === 3 &&
    resources[0]!.includes(':catalog"') &&
    resources[1]!.includes(':database/analytics_dev_lake"') &&
    resources[2]!.includes(':table/analytics_dev_lake/events"')
  )
    return 'lake:glue';
  const lakeBucket = (r: string) => /Lake/.test(r) && !r.includes('/');
  if (
    sameSet(actions, ['s3:GetBucketLocation', 's3:ListBucket']) &&
    resources.length === 1 &&
    lakeBucket(resources[0]!)
  )
    return 'lake:list';
  if (
    sameSet(actions, ['s3:GetObject']) &&
    resources.length === 2 &&
    resources[0]!.includes('/events/*') &&
    resources[1]!.includes('/manifests/events/*')
  )
    return 'lake:read';
  if (
    sameSet(actions, ['s3:PutObject', 's3:GetObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts']) &&
    resources.length === 1 &&
    resources[0]!.includes('/athena-results/*')
  )
    return 'lake:results';
  return undefined;
}

/** The grants of a row's `writesQueries`. */
const queryGrants = (w: 'status' | 'results' | undefined) =>
  w === 'results'
    ? ['table:put-query-items', 'table:update-query-status']
    : w === 'status'
      ? ['table:update-query-status']
      : [];

/** What the function's role grants, one name per statement, sorted. */
function permissionsOf(name: string): string[] {
  const fn = stack.functions.get(name)!;
  const ownLogGroup = resources(template, 'AWS::Lambda::Function')[logicalId(stack, fn)]!.Properties!.LoggingConfig
    .LogGroup.Ref as string;
  return statementsOf(logicalId(stack, fn.role!))
    .map((st) => permissionOf(st, ownLogGroup))
    .sort();
}

/** Route key as API Gateway spells it: `GET /api/organizations/{id}`. */
const routeKey = (r: { method: string; path: string }) => `${r.method} ${bracedPath(r.path)}`;

describe('functions', () => {
  it('deploys one nodejs22.x arm64 function per route and worker plus the fallback', () => {
    const functions = Object.values(resources(template, 'AWS::Lambda::Function'));
    expect(functions).toHaveLength(routes.length + workers.length + 1);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
      });
    }
    expect([...stack.functions.keys()].sort()).toEqual(
      [FALLBACK_FUNCTION, ...routes.map((r) => r.operationId), ...workers.map((w) => w.name)].sort(),
    );
  });

  it('tells every function its table, service name and stage', () => {
    for (const fn of Object.values(resources(template, 'AWS::Lambda::Function'))) {
      expect(fn.Properties?.Environment.Variables).toMatchObject({
        TABLE_NAME: { Ref: tableId },
        // Per stage: the `service` dimension of the custom metrics, so stages in one account never mix.
        POWERTOOLS_SERVICE_NAME: 'analytics-dev',
        ANALYTICS_STAGE: 'dev',
      });
    }
  });

  it('names every function analytics-<stage>-<operation> and traces it with X-Ray', () => {
    for (const [name, fn] of stack.functions) {
      const props = resources(template, 'AWS::Lambda::Function')[logicalId(stack, fn)]!.Properties!;
      expect(props.FunctionName).toBe(`analytics-dev-${name}`);
      expect(props.TracingConfig).toEqual({ Mode: 'Active' });
    }
  });

  it('keeps secrets out of function configuration: no credential-like variables, only references and plain settings', () => {
    for (const fn of Object.values(resources(template, 'AWS::Lambda::Function'))) {
      for (const [key, value] of Object.entries(fn.Properties?.Environment.Variables as Record<string, unknown>)) {
        expect(key).not.toMatch(/SECRET|PASSWORD|ACCESS_KEY|TOKEN|CREDENTIAL|PRIVATE/i);
        if (typeof value === 'string') expect(value).not.toMatch(/AKIA[0-9A-Z]{16}|phx_/);
      }
    }
  });

  it('sends each function its own log group with the stage retention', () => {
    const logGroups = resources(template, 'AWS::Logs::LogGroup');
    const used = Object.values(resources(template, 'AWS::Lambda::Function')).map(
      (fn) => fn.Properties?.LoggingConfig?.LogGroup?.Ref as string,
    );
    expect(new Set(used).size).toBe(used.length);
    for (const id of used) {
      expect(logGroups[id], `log group ${id}`).toMatchObject({
        Properties: { RetentionInDays: stageSettings('dev').logRetention },
        DeletionPolicy: 'Delete',
      });
    }
  });
});

describe('least privilege', () => {
  it("grants each route's function exactly what its row declares, and nothing more", () => {
    for (const r of routes as readonly Route[]) {
      const keyAuthenticated = r.auth === undefined || r.auth === 'personal_api_key';
      const declared = [
        ...tableGrants(r.access),
        ...(r.writesCache ? ['table:put-trend-cache'] : []),
        ...queryGrants(r.writesQueries),
        // Per-key rate limits (shared/db/rate-limits.ts) count every key-authenticated request: write routes already can.
        ...(keyAuthenticated && r.access !== 'write' ? ['table:count-rate-limits'] : []),
        ...(r.sealsSecrets ? ['kms:seal-export-secrets'] : []),
        ...(r.assumesDestinationRoles ? ['sts:assume-customer-roles', 'sts:deny-own-account-roles'] : []),
        ...(r.sends ?? []).map((q) => `sqs:send:${q}`),
        ...(r.queriesLake ? LAKE_QUERY : []),
      ];
      expect([r.operationId, permissionsOf(r.operationId)]).toEqual([r.operationId, [...BASE, ...declared].sort()]);
    }
    expect(permissionsOf(FALLBACK_FUNCTION)).toEqual([...BASE].sort());
  });

  it("grants each worker's function exactly what its row declares (access, queues, trigger, destinations), and nothing more", () => {
    for (const w of workers as readonly Worker[]) {
      const declared = [
        ...tableGrants(w.access),
        ...(w.consumes ?? []).map((q) => `sqs:consume:${q}`),
        // A continuation queue is written by the worker and triggers it.
        ...(w.continuesVia ? [`sqs:send:${w.continuesVia}`, `sqs:consume:${w.continuesVia}`] : []),
        ...('stream' in w.trigger ? ['stream:list', 'stream:read', 'sqs:send:ingest_failures'] : []),
        ...('queue' in w.trigger ? [`sqs:consume:${w.trigger.queue}`] : []),
        ...(w.sends ?? []).map((q) => `sqs:send:${q}`),
        ...(w.writesCache ? ['table:put-trend-cache'] : []),
        ...queryGrants(w.writesQueries),
        ...(w.writesDestinations
          ? ['sts:assume-customer-roles', 'sts:deny-own-account-roles', 'kms:open-export-secrets']
          : []),
        ...(w.writesLake ? ['lake:write'] : []),
        ...(w.queriesLake ? LAKE_QUERY : []),
      ];
      expect([w.name, permissionsOf(w.name)]).toEqual([w.name, [...BASE, ...declared].sort()]);
    }
  });

  it('gives a worker whose row declares read access no table write permission', () => {
    const s = new Stack(new App(), 'analytics-dev');
    const stage = stageSettings('dev');
    const reader: Worker = {
      ...workers.find((w) => w.name === 'compact_events')!,
      name: 'read_only_worker',
      access: 'read',
    };
    const { fn } = new WorkerFunction(s, reader, {
      stage,
      stateful: new StatefulResources(s, stage),
      code: () => lambda.Code.fromInline('export const handler = async () => ({})'),
    });
    const statements = Object.values(Template.fromStack(s).findResources('AWS::IAM::Policy'))
      .filter(
        (p) =>
          JSON.stringify(p.Properties.Roles) ===
          JSON.stringify([{ Ref: s.getLogicalId(fn.role!.node.defaultChild as CfnElement) }]),
      )
      .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
    expect(statements.flatMap((st) => [st.Action].flat()).filter((a) => WRITE_ACTIONS.includes(a))).toEqual([]);
    expect(statements.flatMap((st) => [st.Action].flat())).toContain('dynamodb:Query');
  });

  it('lets a read-only operation with a result cache put only cache items (and query items, for the query API)', () => {
    const caching = (routes as readonly Route[]).filter((x) => x.writesCache);
    expect(caching.map((r) => r.operationId).sort()).toEqual([
      'insights_trend',
      'insights_trend_retrieve',
      'query_create',
    ]);
    for (const r of caching) {
      const puts = statementsOf(logicalId(stack, stack.functions.get(r.operationId)!.role!)).filter((st) =>
        [st.Action].flat().includes('dynamodb:PutItem'),
      );
      expect(puts.map((st) => [st.Action, st.Condition])).toEqual([
        ['dynamodb:PutItem', { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TRENDCACHE#*'] } }],
        ...(r.writesQueries === 'results'
          ? [
              [
                'dynamodb:PutItem',
                { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['QUERY#*', 'QUERYCACHE#*'] } },
              ],
            ]
          : []),
      ]);
    }
  });

  it('lets the query worker read the table, consume its queue and write only caches and query items (and query the lake); cancel only update a status', () => {
    expect(permissionsOf('run_queries')).toEqual(
      [
        ...BASE,
        ...tableGrants('read'),
        'sqs:consume:query_runs',
        'table:put-trend-cache',
        'table:put-query-items',
        'table:update-query-status',
        ...LAKE_QUERY,
      ].sort(),
    );
    expect(permissionsOf('query_destroy')).toEqual(
      [...BASE, ...tableGrants('read'), 'table:count-rate-limits', 'table:update-query-status'].sort(),
    );
    expect(permissionsOf('query_retrieve')).toEqual(
      [...BASE, ...tableGrants('read'), 'table:count-rate-limits'].sort(),
    );
    expect(permissionsOf('query_create')).toContain('sqs:send:query_runs');
  });

  it('isolates the query worker: reserved concurrency, a maximum on its queue trigger, one message per invocation', () => {
    const worker = stack.functions.get('run_queries')!;
    const fn = resources(template, 'AWS::Lambda::Function')[logicalId(stack, worker)]!.Properties!;
    expect(fn.ReservedConcurrentExecutions).toBe(10);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack, stack.queues.get('query_runs')!.queue), 'Arn'] },
      FunctionName: { Ref: logicalId(stack, worker) },
      BatchSize: 1,
      ScalingConfig: { MaximumConcurrency: 10 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // The capture batch worker too: a flood of large batches waits in its queue.
    const staging = stack.functions.get('store_capture_batches')!;
    expect(
      resources(template, 'AWS::Lambda::Function')[logicalId(stack, staging)]!.Properties!.ReservedConcurrentExecutions,
    ).toBe(5);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack, staging) },
      ScalingConfig: { MaximumConcurrency: 5 },
    });
    // The API functions keep the rest of the account's concurrency: none of them reserves any.
    for (const r of routes)
      expect(
        resources(template, 'AWS::Lambda::Function')[logicalId(stack, stack.functions.get(r.operationId)!)]!.Properties!
          .ReservedConcurrentExecutions,
        r.operationId,
      ).toBeUndefined();
  });

  it('lets each function write only its own log group, with no managed policy (no AWSLambdaBasicExecutionRole)', () => {
    const logGroups = resources(template, 'AWS::Logs::LogGroup');
    for (const [name, fn] of stack.functions) {
      const roleId = logicalId(stack, fn.role!);
      expect(resources(template, 'AWS::IAM::Role')[roleId]!.Properties!.ManagedPolicyArns ?? [], name).toEqual([]);
      const own = resources(template, 'AWS::Lambda::Function')[logicalId(stack, fn)]!.Properties!.LoggingConfig.LogGroup
        .Ref as string;
      expect(logGroups[own]!.Properties!.LogGroupName).toBe(`/aws/lambda/analytics-dev-${name}`);
      const logStatements = statementsOf(roleId).filter((st) => [st.Action].flat().some((a) => a.startsWith('logs:')));
      expect(logStatements, name).toEqual([
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [own, 'Arn'] },
        },
      ]);
    }
  });

  it("uses wildcard resources only for X-Ray, the stream listing and customers' export roles", () => {
    const allowed: Record<string, (action: string) => boolean> = {
      '*': (a) => a.startsWith('xray:') || a === 'dynamodb:ListStreams',
      'arn:*:iam::*:role/*': (a) => a === 'sts:AssumeRole',
    };
    for (const [name, fn] of stack.functions) {
      for (const st of statementsOf(logicalId(stack, fn.role!))) {
        for (const resource of [st.Resource].flat()) {
          if (typeof resource !== 'string' || !resource.includes('*')) continue;
          expect([name, resource, [st.Action].flat().every((a) => allowed[resource]?.(a) ?? false)]).toEqual([
            name,
            resource,
            true,
          ]);
        }
      }
    }
  });
});

describe('batch export destinations and their secrets', () => {
  const keyArn = () => ({ 'Fn::GetAtt': [logicalId(stack, stack.exportSecretsKey), 'Arn'] });
  const allStatements = () =>
    [...stack.functions].flatMap(([name, fn]) => statementsOf(logicalId(stack, fn.role!)).map((st) => ({ name, st })));
  const withAction = (prefix: string) =>
    allStatements().filter(({ st }) => [st.Action].flat().some((a) => a.startsWith(prefix)));

  it("lets no function use S3 with its own identity but the compactor, in the lake's day folders (the lake's query functions reach it only through their project's session)", () => {
    const lakeWriters = (workers as readonly Worker[]).filter((w) => w.writesLake).map((w) => w.name);
    expect(lakeWriters).toEqual(['compact_events']);
    expect(LAKE_READERS).toEqual(['insights_trend', 'insights_trend_retrieve', 'query_create', 'run_queries']);
    // No broad lake read left on the query functions: no S3, Athena or Glue action at all.
    for (const prefix of ['s3:', 'athena:', 'glue:'])
      expect(withAction(prefix).filter(({ name }) => LAKE_READERS.includes(name))).toEqual([]);
    const s3 = withAction('s3:');
    expect(s3.map(({ name }) => name)).toEqual(lakeWriters);
    const st = s3[0]!.st as unknown as { Action: string[]; Resource: unknown[] };
    expect([st.Action].flat().sort()).toEqual(
      ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'].sort(),
    );
    // The lake bucket's day files and day pointers, nothing else of it and no other bucket.
    expect(st.Resource.map((r) => JSON.stringify(r).match(/"\/([a-z/]*\*)"/)?.[1])).toEqual([
      'events/*',
      'manifests/events/*',
    ]);
  });

  it("lets only the exporter and the destination check assume roles, any role but those of its own account; the lake's query functions its query role only", () => {
    const assume = withAction('sts:');
    const own = {
      'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':role/*']],
    };
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(
      assume.sort(byName).map(({ name, st }) => [name, st.Effect, st.Action, st.Condition, json(st.Resource)]),
    ).toEqual(
      [
        ...['batch_exports_test', 'run_batch_exports'].flatMap((name) => [
          [name, 'Allow', 'sts:AssumeRole', undefined, json('arn:*:iam::*:role/*')],
          [name, 'Deny', 'sts:AssumeRole', undefined, json(own)],
        ]),
        ...LAKE_READERS.map((name) => [name, 'Allow', 'sts:AssumeRole', undefined, LAKE_QUERY_ROLE_ARN]),
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
  });

  it('lets only the exporter decrypt export secrets, and only batch export create/update generate data keys', () => {
    const uses = withAction('kms:').map(({ name, st }) => [name, st.Effect, st.Action, st.Resource]);
    expect(uses.sort()).toEqual(
      [
        ['batch_exports_create', 'Allow', 'kms:GenerateDataKey', keyArn()],
        ['batch_exports_partial_update', 'Allow', 'kms:GenerateDataKey', keyArn()],
        ['run_batch_exports', 'Allow', 'kms:Decrypt', keyArn()],
      ].sort(),
    );
    for (const { st } of withAction('kms:')) {
      expect(st.Condition).toEqual({
        'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['organization_id', 'batch_export_id'] },
        Null: { 'kms:EncryptionContextKeys': 'false' },
      });
    }
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
  });

  it('tells exactly those functions the KMS key, and no function that loopback export endpoints are allowed', () => {
    const told = [...stack.functions].filter(([, fn]) => {
      const vars = resources(template, 'AWS::Lambda::Function')[logicalId(stack, fn)]!.Properties!.Environment
        .Variables as Record<string, unknown>;
      expect(Object.keys(vars)).not.toContain('ALLOW_LOOPBACK_EXPORT_ENDPOINTS');
      if (vars.EXPORT_SEALING_KMS_KEY_ID !== undefined) expect(vars.EXPORT_SEALING_KMS_KEY_ID).toEqual(keyArn());
      return vars.EXPORT_SEALING_KMS_KEY_ID !== undefined;
    });
    expect(told.map(([name]) => name).sort()).toEqual([
      'batch_exports_create',
      'batch_exports_partial_update',
      'run_batch_exports',
    ]);
  });
});

describe("the lake query role (each project's lake queries run as a session of it)", () => {
  const [roleId, role] = Object.entries(resources(template, 'AWS::IAM::Role')).find(
    ([, r]) => r.Properties!.RoleName === 'analytics-dev-lake-query',
  )!;

  it("trusts only the query functions' roles, for sessions of an hour at most", () => {
    const trust = role.Properties!.AssumeRolePolicyDocument.Statement as (Statement & { Principal: unknown })[];
    for (const st of trust)
      expect([st.Effect, st.Action, st.Condition]).toEqual(['Allow', 'sts:AssumeRole', undefined]);
    const roleArnOf = (name: string) => ({
      'Fn::GetAtt': [logicalId(stack, stack.functions.get(name)!.role!), 'Arn'],
    });
    expect(trust.map((st) => json(st.Principal)).sort()).toEqual(
      LAKE_READERS.map((n) => json({ AWS: roleArnOf(n) })).sort(),
    );
    expect(role.Properties!.MaxSessionDuration).toBe(3600);
  });

  it('may run queries in the lake workgroup, read its Glue table, its day pointers and files, and write results: the five statements', () => {
    const granted = statementsOf(roleId)
      .map((st) => {
        const resources = [st.Resource].flat().map(json);
        const name = lakeQueryPermission([st.Action].flat(), resources);
        return st.Effect === 'Allow' && st.Condition === undefined && name ? name : `unexpected: ${json(st)}`;
      })
      .sort();
    expect(granted).toEqual(['lake:athena', 'lake:glue', 'lake:list', 'lake:read', 'lake:results']);
    // The role is the only principal holding them.
    const holders = Object.values(resources(template, 'AWS::IAM::Policy')).filter((p) =>
      (p.Properties!.PolicyDocument.Statement as Statement[]).some((st) =>
        [st.Action].flat().some((a) => a.startsWith('athena:') || a.startsWith('glue:')),
      ),
    );
    expect(holders.map((p) => p.Properties!.Roles)).toEqual([[{ Ref: roleId }]]);
  });
});

describe('HTTP API', () => {
  const stageProps = () => Object.values(resources(template, 'AWS::ApiGatewayV2::Stage'));

  it('throttles the $default stage with the stage settings (the outer guard)', () => {
    const { throttle } = stageSettings('dev');
    expect(stageProps()).toHaveLength(1);
    expect(stageProps()[0]!.Properties).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      ApiId: { Ref: logicalId(stack, stack.api) },
      DefaultRouteSettings: { ThrottlingRateLimit: throttle.rateLimit, ThrottlingBurstLimit: throttle.burstLimit },
    });
  });

  it('writes JSON access logs with the request id and status, and no headers (no API keys in logs)', () => {
    const settings = stageProps()[0]!.Properties!.AccessLogSettings;
    expect(settings.DestinationArn).toEqual({ 'Fn::GetAtt': [logicalId(stack, stack.apiAccessLogs), 'Arn'] });
    const format = JSON.parse(settings.Format) as Record<string, string>;
    expect(format).toMatchObject({
      request_id: '$context.requestId',
      status: '$context.status',
      route: '$context.routeKey',
    });
    expect(settings.Format).not.toMatch(/header|authorization|querystring/i);
  });

  it('leaves CORS off unless the stage lists origins', () => {
    for (const api of Object.values(resources(template, 'AWS::ApiGatewayV2::Api')))
      expect(api.Properties?.CorsConfiguration).toBeUndefined();
  });

  const routeResources = Object.values(resources(template, 'AWS::ApiGatewayV2::Route'));
  const integrations = resources(template, 'AWS::ApiGatewayV2::Integration');
  /** Logical id of the function behind a route key. */
  const functionBehind = (key: string) => {
    const route = routeResources.find((r) => r.Properties?.RouteKey === key);
    const integrationId = route?.Properties?.Target['Fn::Join'][1][1].Ref as string;
    return integrations[integrationId]?.Properties?.IntegrationUri['Fn::GetAtt'][0] as string | undefined;
  };

  const apiId = logicalId(stack, stack.api);
  /** This API's execute-api ARN with `resource` after its id, as `invokePermissions` reads a SourceArn. */
  const apiArn = (resource: string) => JSON.stringify({ api: apiId, resource });
  /** The SourceArns of the invoke permissions API Gateway holds on a function. */
  const invokePermissions = (functionId: string) =>
    Object.values(resources(template, 'AWS::Lambda::Permission'))
      .filter((p) => p.Properties?.FunctionName?.['Fn::GetAtt']?.[0] === functionId)
      .map((p) => {
        expect(p.Properties?.Principal).toBe('apigateway.amazonaws.com');
        const parts = p.Properties?.SourceArn['Fn::Join'][1] as any[];
        const api = parts.find((x) => x?.Ref?.startsWith('HttpApi'))?.Ref;
        return JSON.stringify({ api, resource: String(parts.at(-1)).replace(/^\//, '') });
      });

  it('routes every route-table row (and alias path) to its own function, with :param as {param}', () => {
    expect(routeKey(routes.find((r) => r.operationId === 'organizations_retrieve')!)).toBe(
      'GET /api/organizations/{id}',
    );
    expect(functionBehind('POST /i/v0/e')).toBe(logicalId(stack, stack.functions.get('capture')!));
    for (const r of routePaths) {
      expect(functionBehind(routeKey(r)), routeKey(r)).toBe(logicalId(stack, stack.functions.get(r.operationId)!));
    }
  });

  it('routes each /api/projects path to the function of its /api/environments route, and lets API Gateway invoke it there', () => {
    const environmentLevel = (routes as readonly Route[]).filter((r) => r.path.startsWith('/api/environments/'));
    expect(environmentLevel.length).toBeGreaterThanOrEqual(19);
    expect(functionBehind('GET /api/projects/{project_id}/persons')).toBe(
      logicalId(stack, stack.functions.get('persons_list')!),
    );
    for (const r of environmentLevel) {
      const original = `${r.method} ${bracedPath(r.path)}`;
      const alias = original.replace('/api/environments/', '/api/projects/');
      expect(functionBehind(alias), alias).toBe(functionBehind(original));
      expect(functionBehind(alias), alias).toBe(logicalId(stack, stack.functions.get(r.operationId)!));
      expect(invokePermissions(functionBehind(alias)!), alias).toEqual([apiArn('*/*/*')]);
    }
  });

  it('lets API Gateway invoke a one-path function from its route only, and a several-path function from this API', () => {
    for (const r of routes as readonly Route[]) {
      const paths = routePaths.filter((p) => p.operationId === r.operationId);
      const expected = paths.length === 1 ? [apiArn(`*/*${bracedPath(r.path)}`)] : [apiArn('*/*/*')];
      expect(invokePermissions(logicalId(stack, stack.functions.get(r.operationId)!)), r.operationId).toEqual(expected);
    }
  });

  it("keeps the API's routes well under the HTTP API quota of 300", () => {
    // 61 route paths + $default when the project-level aliases were added (docs/query-api.md, Paths);
    // 114 with cohorts, groups and the exports' and persons' current operations.
    expect(routeResources.length).toBeLessThanOrEqual(200);
  });

  it('sends every unmatched request to the fallback function', () => {
    expect(functionBehind('$default')).toBe(logicalId(stack, stack.functions.get(FALLBACK_FUNCTION)!));
    expect(routeResources).toHaveLength(routePaths.length + 1);
  });
});

describe('table', () => {
  it('matches TABLE_SCHEMA: keys, GSIs with their projections, TTL, and a stream with both images', () => {
    const gsis = Object.values(TABLE_SCHEMA.indexes).map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: index.projection },
    }));
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: gsis,
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true },
    });
  });
});

describe('CloudFront in front of the API', () => {
  const edgeId = logicalId(stack, stack.node.findChild('PublicApi').node.findChild('StripTrailingSlash'));

  it('runs the trailing-slash function from infra/edge on every viewer request', () => {
    template.hasResourceProperties('AWS::CloudFront::Function', {
      // The same file edge-function.test.ts evaluates.
      FunctionCode: readFileSync(new URL('../../infra/edge/strip-trailing-slash.js', import.meta.url), 'utf8'),
      FunctionConfig: Match.objectLike({ Runtime: 'cloudfront-js-2.0' }),
    });
    template.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultCacheBehavior: Match.objectLike({
          FunctionAssociations: [
            { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [edgeId, 'FunctionARN'] } },
          ],
        }),
      }),
    });
  });

  it('passes every method through uncached, HTTPS only, to the HTTP API without the viewer Host', () => {
    template.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultCacheBehavior: Match.objectLike({
          AllowedMethods: Match.arrayWith(['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE']),
          CachePolicyId: cloudfront.CachePolicy.CACHING_DISABLED.cachePolicyId,
          OriginRequestPolicyId: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER.originRequestPolicyId,
          ViewerProtocolPolicy: 'redirect-to-https',
        }),
        Origins: [
          Match.objectLike({
            DomainName: {
              'Fn::Join': [
                '',
                [
                  { Ref: logicalId(stack, stack.api) },
                  '.execute-api.',
                  { Ref: 'AWS::Region' },
                  '.',
                  { Ref: 'AWS::URLSuffix' },
                ],
              ],
            },
            CustomOriginConfig: Match.objectLike({ OriginProtocolPolicy: 'https-only' }),
          }),
        ],
      }),
    });
  });

  it("caches and compresses posthog-js's scripts (/static/*) from the same API origin, GET/HEAD only, query and headers out of the key", () => {
    const config = Object.values(resources(template, 'AWS::CloudFront::Distribution'))[0]!.Properties!
      .DistributionConfig;
    const behaviors = config.CacheBehaviors as Record<string, unknown>[];
    // posthog-js's scripts and the console's versioned bundle (/console/*), cached alike.
    expect(behaviors.map((b) => b.PathPattern)).toEqual(['/static/*', '/console/*']);
    for (const b of behaviors) expect(b).toMatchObject({ ...behaviors[0], PathPattern: b.PathPattern });
    const consoleRoutes = routePaths.filter((r) => r.path.startsWith('/console/'));
    expect(consoleRoutes.map((r) => [r.operationId, r.method, r.access])).toEqual([['console_asset', 'GET', 'none']]);
    expect(behaviors[0]).toMatchObject({
      PathPattern: '/static/*',
      TargetOriginId: config.DefaultCacheBehavior.TargetOriginId,
      CachePolicyId: cloudfront.CachePolicy.CACHING_OPTIMIZED.cachePolicyId,
      Compress: true,
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS'],
      ViewerProtocolPolicy: 'redirect-to-https',
    });
    expect(behaviors[0]!.OriginRequestPolicyId).toBeUndefined();
    // The path the cached behaviour serves is an API route of a function that reads no table.
    const staticRoutes = routePaths.filter((r) => r.path.startsWith('/static/'));
    expect(staticRoutes.map((r) => r.operationId).sort()).toEqual(['sdk_static', 'sdk_static_versioned']);
    for (const r of staticRoutes) expect([r.operationId, r.method, r.access]).toEqual([r.operationId, 'GET', 'none']);
  });

  it('publishes the CloudFront URL as the API base URL, and the table name', () => {
    const distributionId = logicalId(stack, stack.distribution);
    template.hasOutput('ApiBaseUrl', {
      Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }]] },
    });
    template.hasOutput('TableName', { Value: { Ref: tableId } });
  });

  it('talks to the origin over TLS 1.2 only, and serves HTTP/2 and HTTP/3', () => {
    const config = Object.values(resources(template, 'AWS::CloudFront::Distribution'))[0]!.Properties!
      .DistributionConfig;
    expect(config.Origins[0].CustomOriginConfig).toMatchObject({
      OriginProtocolPolicy: 'https-only',
      OriginSSLProtocols: ['TLSv1.2'],
    });
    expect(config.HttpVersion).toBe('http2and3');
  });

  it('publishes where alarms go and where the dashboard is', () => {
    // The topic is in the monitoring nested stack: its ARN comes out as that stack's output.
    const nestedId = stack.getLogicalId(stack.monitoringStack.nestedStackResource!);
    const [output] = Object.entries(
      dev.monitoring.findOutputs('*', { Value: { Ref: logicalId(stack.monitoringStack, stack.monitoring.topic) } }),
    );
    expect(output).toBeDefined();
    template.hasOutput('AlarmTopicArn', { Value: { 'Fn::GetAtt': [nestedId, `Outputs.${output![0]}`] } });
    template.hasOutput('DashboardUrl', { Value: Match.objectLike({}) });
  });
});
