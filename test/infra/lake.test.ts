import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { workers, type Worker } from '#functions/routes.ts';
import { Lake } from '#infra/constructs/lake.ts';
import { BYTES_SCANNED_CUTOFF, GLUE_COLUMNS } from '#shared/lake/athena.ts';
import { logicalId, resources } from './synth.ts';

/**
 * The construct in a stack of its own beside two workers (one whose row writes the lake, one whose
 * row does not): the stage's stack is past CloudFormation's 500 resources until it is split
 * (the lead's change), and its synthesis fails before any assertion.
 */
function build(removalPolicy: RemovalPolicy) {
  const app = new App();
  const stack = new Stack(app, 'analytics-dev');
  const functions = new Map<string, lambda.Function>();
  for (const name of ['compact_events', 'ingest_events'])
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
    const standIn = /\/(compact_events|ingest_events)\/(ServiceRole\/)?Resource$/;
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

  it('runs queries in a workgroup that enforces a bytes-scanned cutoff and encrypted results', () => {
    lake.hasResourceProperties('AWS::Athena::WorkGroup', {
      Name: 'analytics-dev-lake',
      WorkGroupConfiguration: {
        BytesScannedCutoffPerQuery: BYTES_SCANNED_CUTOFF,
        EnforceWorkGroupConfiguration: true,
        PublishCloudWatchMetricsEnabled: true,
        EngineVersion: { SelectedEngineVersion: 'Athena engine version 3' },
        ResultConfiguration: Match.objectLike({ EncryptionConfiguration: { EncryptionOption: 'SSE_S3' } }),
      },
    });
  });

  it('grants the lake only to the workers whose row writes it: object actions on its two prefixes, and its name', () => {
    const writers = (workers as readonly Worker[]).filter((w) => w.writesLake).map((w) => w.name);
    expect(writers).toEqual(['compact_events']);
    const deployed = resources(template, 'AWS::Lambda::Function');
    for (const [name, fn] of functions) {
      const env = (deployed[logicalId(stack, fn)]!.Properties!.Environment?.Variables ?? {}) as Record<string, unknown>;
      expect([name, 'LAKE_BUCKET' in env]).toEqual([name, writers.includes(name)]);
    }
    const lakeStatements = Object.values(resources(template, 'AWS::IAM::Policy')).flatMap((p) =>
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
