import { App, CfnElement, CfnResource, Stack } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { logicalIdPath } from '#infra/constructs/logical-ids.ts';
import { resources, synthStages } from './synth.ts';

const { stack, template } = synthStages('dev').dev!;

describe('logical ids of a deployed stage', () => {
  it('keeps the ids the stack gave its table, queues, key, functions, roles, log groups, event sources, schedules, API and distribution before they moved into constructs', () => {
    // Ids of the dev stage as the single stack constructor created them (commit a8ff458). A changed id
    // replaces the resource: data loss for the table, a failed deploy for anything with a fixed name.
    const deployed: Record<string, string> = {
      TableCD117FA1: 'AWS::DynamoDB::Table',
      PersonDeletionsQueueCA564157: 'AWS::SQS::Queue',
      ExportSecretsKeyF988C200: 'AWS::KMS::Key',
      OrganizationsListLogs8EB34C42: 'AWS::Logs::LogGroup',
      OrganizationsListRoleB80A7E1F: 'AWS::IAM::Role',
      OrganizationsListRoleDefaultPolicy223EAC36: 'AWS::IAM::Policy',
      OrganizationsListFunction99484158: 'AWS::Lambda::Function',
      IngestEventsFunctionABE00D78: 'AWS::Lambda::Function',
      IngestEventsFunctionDynamoDBEventSourceanalyticsdevTableC02D131D7F601780: 'AWS::Lambda::EventSourceMapping',
      DrainPersonDeletionsFunctionSqsEventSourceanalyticsdevDrainContinuationsQueue431CB7F13C926961:
        'AWS::Lambda::EventSourceMapping',
      DrainPersonDeletionsSchedule6D746A5E: 'AWS::Events::Rule',
      HttpApiF5A9A8A7: 'AWS::ApiGatewayV2::Api',
      HttpApiDefaultStage3EEB07D6: 'AWS::ApiGatewayV2::Stage',
      ApiAccessLogsE9DF007D: 'AWS::Logs::LogGroup',
      StripTrailingSlash944AAC9C: 'AWS::CloudFront::Function',
      Distribution830FAC52: 'AWS::CloudFront::Distribution',
    };
    const all = template.toJSON().Resources as Record<string, { Type: string }>;
    for (const [id, type] of Object.entries(deployed)) expect([id, all[id]?.Type]).toEqual([id, type]);
    expect(
      Object.keys(resources(template, 'AWS::Lambda::Function')).every((id) =>
        /^[A-Z][A-Za-z0-9]*Function[0-9A-F]{8}$/.test(id),
      ),
    ).toBe(true);
  });

  it('keeps the names CloudFront derives from construct paths: the edge function and the API origin', () => {
    const fn = resources(template, 'AWS::CloudFront::Function').StripTrailingSlash944AAC9C!.Properties!;
    expect(fn.Name).toEqual({ 'Fn::Join': ['', [{ Ref: 'AWS::Region' }, 'analyticsdevStripTrailingSlashBD6EDCD3']] });
    const config = resources(template, 'AWS::CloudFront::Distribution').Distribution830FAC52!.Properties!
      .DistributionConfig;
    expect(config.Origins.map((o: { Id: string }) => o.Id)).toEqual(['analyticsdevDistributionOrigin1AC484F51']);
    expect(config.DefaultCacheBehavior.TargetOriginId).toBe('analyticsdevDistributionOrigin1AC484F51');
  });

  it("computes every logical id as CDK would for the same path with each construct's logicalIdPrefix in place of its id", () => {
    // A plain stack (CDK's own rule) with one resource at each merged path: same id as ours.
    const mirror = new Stack(new App(), stack.stackName);
    const elements = stack.node.findAll().filter((c): c is CfnElement => CfnElement.isCfnElement(c));
    expect(elements.length).toBeGreaterThan(400);
    for (const element of elements) {
      const path = logicalIdPath(stack, element);
      let scope: Construct = mirror;
      for (const id of path.slice(0, -1))
        scope = (scope.node.tryFindChild(id) as Construct | undefined) ?? new Construct(scope, id);
      const twin =
        (scope.node.tryFindChild(path.at(-1)!) as CfnElement | undefined) ??
        new CfnResource(scope, path.at(-1)!, { type: 'Test::Mirror' });
      expect([element.node.path, stack.getLogicalId(element)]).toEqual([element.node.path, mirror.getLogicalId(twin)]);
    }
  });
});
