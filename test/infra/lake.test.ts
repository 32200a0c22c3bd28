import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { workers, type Worker } from '#functions/routes.ts';
import { Lake } from '#infra/constructs/lake.ts';
import { BYTES_SCANNED_CUTOFF, GLUE_COLUMNS, lakeSessionPolicy } from '#shared/lake/athena.ts';
import { logicalId, resources } from './synth.ts';

/**
 * The construct in a stack of its own beside three functions: one whose row writes the lake, one
 * whose row neither writes nor queries it, and one whose row queries it (query_create). The whole
 * stage's grants are pinned in stack.test.ts.
 */
function build(removalPolicy: RemovalPolicy) {
  const app = new App();
  const stack = new Stack(app, 'analytics-dev');
  const functions = new Map<string, lambda.Function>();
  for (const name of ['compact_events', 'ingest_events', 'query_create'])
    functions.set(
      name,
      new lambda.Function(stack, name, {
        runtime: lambda.Runtime.NODEJS_22_X,
        handler: 'index.handler',
        code: lambda.Code.fromInline('export const handler = async () => ({})'),
      }),
    );
  const lake = new Lake(stack, 'Lake', { prefix: 'analytics-dev', removalPolicy, functions });
  return { app, stack, lake, functions };
}

const { app, stack, lake: lakeStack, functions } = build(RemovalPolicy.DESTROY);
const nag = new AwsSolutionsChecks().validateScope(app);
const template = Template.fromStack(stack);
const lake = Template.fromStack(lakeStack);

describe('the lake (infra/constructs/lake.ts)', () => {
  it('is a nested stack: one resource in the stage stack', () => {
    expect(Object.keys(resources(template, 'AWS::CloudFormation::Stack'))).toEqual([
      stack.getLogicalId(lakeStack.nestedStackResource!),
    ]);
  });

  it('passes cdk-nag (AwsSolutions) with its two reviewed acknowledgements', () => {
    // The test's stand-in functions (managed policy, runtime) are not the lake's: the stage's own functions are nag-clean.
    const standIn = /\/(compact_events|ingest_events|query_create)\/(ServiceRole\/)?Resource$/;
    const lakeFindings = nag.violations.filter((v) =>
      v.violatingResources.some((r) => !standIn.test(r.constructPath ?? '')),
    );
    // Not vacuous: the stand-ins' own findings are there, and the lake's IAM5 wildcards were acknowledged, not absent.
    expect(nag.violations.length).toBeGreaterThan(0);
    expect(lakeFindings.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`)).toEqual([]);
  });

  it('keeps the events in a private, encrypted, SSL-only bucket with lifecycle rules', () => {
    lake.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Id: 'abort-incomplete-uploads',
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          }),
          Match.objectLike({ Id: 'expire-query-results', Prefix: 'athena-results/', ExpirationInDays: 7 }),
          Match.objectLike({ Id: 'events-infrequent-access', Prefix: 'events/' }),
        ]),
      },
    });
    lake.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    // Kept with the stage's data in prod; dev may go with its stack.
    expect(Object.values(resources(lake, 'AWS::S3::Bucket'))[0]!.DeletionPolicy).toBe('Delete');
    const kept = Template.fromStack(build(RemovalPolicy.RETAIN).lake);
    expect(Object.values(resources(kept, 'AWS::S3::Bucket'))[0]!.DeletionPolicy).toBe('Retain');
  });

  it('declares a Glue table over the day pointers with partition projection (project injected, day a date range)', () => {
    lake.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: { Name: 'analytics_dev_lake' } });
    const table = Object.values(resources(lake, 'AWS::Glue::Table'))[0]!.Properties!.TableInput;
    expect(table.Name).toBe('events');
    expect(table.PartitionKeys).toEqual([
      { Name: 'project_id', Type: 'bigint' },
      { Name: 'day', Type: 'string' },
    ]);
    expect(table.Parameters).toMatchObject({
      'projection.enabled': 'true',
      'projection.project_id.type': 'injected',
      'projection.day.type': 'date',
      'projection.day.format': 'yyyy-MM-dd',
    });
    expect(JSON.stringify(table.Parameters['storage.location.template'])).toContain(
      // Athena's own placeholders, filled per partition.
      ['/manifests/events/project_id=', '{project_id}/day=', '{day}/'].join('$'),
    );
    expect(table.StorageDescriptor.InputFormat).toBe('org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat');
    expect(table.StorageDescriptor.SerdeInfo.SerializationLibrary).toBe(
      'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe',
    );
    expect(table.StorageDescriptor.Columns).toEqual(GLUE_COLUMNS.map((c) => ({ Name: c.name, Type: c.type })));
    // Names Athena accepts: lowercase letters, digits, underscores.
    for (const c of GLUE_COLUMNS) expect(c.name).toMatch(/^[a-z_][a-z0-9_]*$/);
  });

  it("runs queries in a workgroup with a bytes-scanned cutoff and encrypted results, each in its project's results folder", () => {
    lake.hasResourceProperties('AWS::Athena::WorkGroup', {
      Name: 'analytics-dev-lake',
      WorkGroupConfiguration: {
        BytesScannedCutoffPerQuery: BYTES_SCANNED_CUTOFF,
        // Each query names athena-results/project_id=<p>/ (shared/lake/engine.ts); IAM, not the workgroup, holds it there.
        EnforceWorkGroupConfiguration: false,
        PublishCloudWatchMetricsEnabled: true,
        EngineVersion: { SelectedEngineVersion: 'Athena engine version 3' },
        ResultConfiguration: Match.objectLike({ EncryptionConfiguration: { EncryptionOption: 'SSE_S3' } }),
      },
    });
    // No default location: a query that names no project folder fails instead of writing a shared prefix.
    const workgroup = Object.values(resources(lake, 'AWS::Athena::WorkGroup'))[0]!.Properties!;
    expect(workgroup.WorkGroupConfiguration.ResultConfiguration.OutputLocation).toBeUndefined();
  });

  it('grants the lake only to the workers whose row writes it: object actions on its two prefixes, and its name', () => {
    const writers = (workers as readonly Worker[]).filter((w) => w.writesLake).map((w) => w.name);
    expect(writers).toEqual(['compact_events']);
    const deployed = resources(template, 'AWS::Lambda::Function');
    for (const name of ['compact_events', 'ingest_events']) {
      const fn = functions.get(name)!;
      const env = (deployed[logicalId(stack, fn)]!.Properties!.Environment?.Variables ?? {}) as Record<string, unknown>;
      expect([name, 'LAKE_BUCKET' in env]).toEqual([name, writers.includes(name)]);
    }
    const workerRoles = ['compact_events', 'ingest_events'].map((n) => ({
      Ref: logicalId(stack, functions.get(n)!.role!),
    }));
    const workerPolicies = Object.values(resources(template, 'AWS::IAM::Policy')).filter((p) =>
      workerRoles.some((r) => JSON.stringify(p.Properties!.Roles).includes(JSON.stringify(r))),
    );
    const lakeStatements = workerPolicies.flatMap((p) =>
      (p.Properties!.PolicyDocument.Statement as { Action: string[]; Resource: unknown }[])
        .filter((st) => JSON.stringify(st.Resource).includes('Lake'))
        .map((st) => ({ roles: p.Properties!.Roles, st })),
    );
    expect(lakeStatements).toHaveLength(1);
    const [{ roles, st }] = lakeStatements as [{ roles: unknown; st: { Action: string[]; Resource: unknown[] } }];
    expect(roles).toEqual([{ Ref: logicalId(stack, functions.get('compact_events')!.role!) }]);
    expect([...st.Action].sort()).toEqual([
      's3:AbortMultipartUpload',
      's3:DeleteObject',
      's3:GetObject',
      's3:PutObject',
    ]);
    const resourcesText = JSON.stringify(st.Resource);
    expect(st.Resource).toHaveLength(2);
    expect(resourcesText).toContain('/events/*');
    expect(resourcesText).toContain('/manifests/events/*');
  });
});

describe("the lake query role: what each project's session is cut from", () => {
  const roles = resources(template, 'AWS::IAM::Role');
  const [roleId, role] = Object.entries(roles).find(([, r]) => r.Properties!.RoleName === 'analytics-dev-lake-query')!;
  const queryFn = functions.get('query_create')!;
  const queryFnRole = logicalId(stack, queryFn.role!);
  const policiesOf = (id: string) =>
    Object.values(resources(template, 'AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p.Properties!.Roles).includes(JSON.stringify({ Ref: id })),
    );
  const statementsOf = (id: string) =>
    policiesOf(id).flatMap(
      (p) =>
        p.Properties!.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown }[],
    );
  const roleArn = {
    'Fn::Join': [
      '',
      ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':role/analytics-dev-lake-query'],
    ],
  };

  it("may be assumed by the query functions' roles only (not the compactor's, not another's), for an hour at most", () => {
    expect(role.Properties!.AssumeRolePolicyDocument.Statement).toEqual([
      { Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: { 'Fn::GetAtt': [queryFnRole, 'Arn'] } } },
    ]);
    expect(role.Properties!.MaxSessionDuration).toBe(3600);
  });

  it('the query function may assume it, is told its ARN, and holds no lake S3, Athena or Glue of its own', () => {
    expect(statementsOf(queryFnRole)).toEqual([{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: roleArn }]);
    const env = resources(template, 'AWS::Lambda::Function')[logicalId(stack, queryFn)]!.Properties!.Environment
      .Variables as Record<string, unknown>;
    expect(env.LAKE_QUERY_ROLE_ARN).toEqual(roleArn);
    expect(
      Object.keys(env)
        .filter((k) => k.startsWith('LAKE_'))
        .sort(),
    ).toEqual(['LAKE_ATHENA_WORKGROUP', 'LAKE_BUCKET', 'LAKE_GLUE_DATABASE', 'LAKE_QUERY_ROLE_ARN']);
  });

  it("holds what a session may do at most: the lake's prefixes, its workgroup and table; each session's policy asks for no action it lacks", () => {
    const statements = statementsOf(roleId);
    const objects = (prefix: string) =>
      statements
        .filter((st) => JSON.stringify(st.Resource).includes(`"/${prefix}"`))
        .flatMap((st) => [st.Action].flat())
        .sort();
    expect(objects('events/*')).toEqual(['s3:GetObject']);
    expect(objects('manifests/events/*')).toEqual(['s3:GetObject']);
    expect(objects('athena-results/*')).toEqual(
      ['s3:AbortMultipartUpload', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:PutObject'].sort(),
    );
    const granted = new Set(statements.flatMap((st) => [st.Action].flat()));
    const scope = { partition: 'aws', account: '1', region: 'r', bucket: 'b', workgroup: 'w', database: 'd' };
    const asked = new Set(lakeSessionPolicy(scope, 7).Statement.flatMap((st) => st.Action));
    expect([...asked].sort()).toEqual([...granted].sort());
    // No delete, no write outside results, no other service.
    expect([...granted].filter((a) => !/^(s3|athena|glue):/.test(a))).toEqual([]);
    expect(granted.has('s3:DeleteObject')).toBe(false);
  });
});
