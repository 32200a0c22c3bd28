import { readFileSync } from 'node:fs';
import { Match } from 'aws-cdk-lib/assertions';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import { describe, expect, it } from 'vitest';
import { routePaths, routes, workers, type Route } from '#functions/routes.ts';
import { FALLBACK_FUNCTION } from '#infra/build.ts';
import { stageSettings } from '#infra/stages.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { logicalId, resources, roleActions, synthStages } from './synth.ts';

const dev = synthStages('dev').dev!;
const { stack, template } = dev;

const WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];
const tableId = logicalId(stack, stack.table);

/** Route key as API Gateway spells it: `GET /api/organizations/{id}`. */
const routeKey = (r: { method: string; path: string }) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`;

describe('functions', () => {
  it('deploys one nodejs22.x arm64 function per route and worker plus the fallback', () => {
    const functions = Object.values(resources(template, 'AWS::Lambda::Function'));
    expect(functions).toHaveLength(routes.length + workers.length + 1);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler' });
    }
    expect([...stack.functions.keys()].sort()).toEqual([FALLBACK_FUNCTION, ...routes.map((r) => r.operationId), ...workers.map((w) => w.name)].sort());
  });

  it('tells every function its table, service name and stage', () => {
    for (const fn of Object.values(resources(template, 'AWS::Lambda::Function'))) {
      expect(fn.Properties?.Environment.Variables).toMatchObject({
        TABLE_NAME: { Ref: tableId },
        POWERTOOLS_SERVICE_NAME: 'analytics',
        ANALYTICS_STAGE: 'dev',
      });
    }
  });

  it('sends each function its own log group with the stage retention', () => {
    const logGroups = resources(template, 'AWS::Logs::LogGroup');
    const used = Object.values(resources(template, 'AWS::Lambda::Function')).map((fn) => fn.Properties?.LoggingConfig?.LogGroup?.Ref as string);
    expect(new Set(used).size).toBe(used.length);
    for (const id of used) {
      expect(logGroups[id], `log group ${id}`).toMatchObject({ Properties: { RetentionInDays: stageSettings('dev').logRetention }, DeletionPolicy: 'Delete' });
    }
  });
});

describe('least privilege', () => {
  it('gives read-only operations no table write permission', () => {
    const readOnly = (routes as readonly Route[]).filter((x) => x.access === 'read' && !x.writesCache);
    expect(readOnly.length).toBeGreaterThan(0);
    for (const r of readOnly) {
      const actions = roleActions(dev, r.operationId);
      expect(actions, r.operationId).toContain('dynamodb:Query');
      for (const write of WRITE_ACTIONS) expect(actions, r.operationId).not.toContain(write);
    }
  });

  it('lets a read-only operation with a result cache put only cache items', () => {
    const caching = (routes as readonly Route[]).filter((x) => x.writesCache);
    expect(caching.map((r) => r.operationId).sort()).toEqual(['insights_trend', 'insights_trend_retrieve']);
    for (const r of caching) {
      const role = logicalId(stack, stack.functions.get(r.operationId)!.role!);
      const statements = Object.values(resources(template, 'AWS::IAM::Policy'))
        .filter((p) => JSON.stringify(p.Properties!.Roles) === JSON.stringify([{ Ref: role }]))
        .flatMap((p) => p.Properties!.PolicyDocument.Statement as { Action: string | string[]; Condition?: unknown }[]);
      const writes = statements.filter((st) => [st.Action].flat().some((a) => WRITE_ACTIONS.includes(a)));
      expect(writes).toHaveLength(1);
      expect(writes[0]).toMatchObject({
        Action: 'dynamodb:PutItem',
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TRENDCACHE#*'] } },
      });
    }
  });

  it('lets writing operations write to the table', () => {
    const writing = routes.filter((x) => x.access === 'write');
    expect(writing.length).toBeGreaterThan(0);
    for (const r of writing) {
      expect(roleActions(dev, r.operationId), r.operationId).toEqual(expect.arrayContaining(WRITE_ACTIONS));
    }
  });

  it('gives the fallback and table-less operations (the schema) no DynamoDB permission at all', () => {
    const tableless = [FALLBACK_FUNCTION, ...(routes as readonly Route[]).filter((r) => r.access === 'none').map((r) => r.operationId)];
    expect(tableless).toContain('schema');
    for (const name of tableless) {
      expect(roleActions(dev, name).filter((a) => a.startsWith('dynamodb:'))).toEqual([]);
      const role = logicalId(stack, stack.functions.get(name)!.role!);
      expect(JSON.stringify(resources(template, 'AWS::IAM::Role')[role]?.Properties?.ManagedPolicyArns)).not.toMatch(/DynamoDB/i);
    }
  });
});

describe('HTTP API', () => {
  const routeResources = Object.values(resources(template, 'AWS::ApiGatewayV2::Route'));
  const integrations = resources(template, 'AWS::ApiGatewayV2::Integration');
  /** Logical id of the function behind a route key. */
  const functionBehind = (key: string) => {
    const route = routeResources.find((r) => r.Properties?.RouteKey === key);
    const integrationId = route?.Properties?.Target['Fn::Join'][1][1].Ref as string;
    return integrations[integrationId]?.Properties?.IntegrationUri['Fn::GetAtt'][0] as string | undefined;
  };

  it('routes every route-table row (and alias path) to its own function, with :param as {param}', () => {
    expect(routeKey(routes.find((r) => r.operationId === 'organizations_retrieve')!)).toBe('GET /api/organizations/{id}');
    expect(functionBehind('POST /i/v0/e')).toBe(logicalId(stack, stack.functions.get('capture')!));
    for (const r of routePaths) {
      expect(functionBehind(routeKey(r)), routeKey(r)).toBe(logicalId(stack, stack.functions.get(r.operationId)!));
    }
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
  const edgeId = logicalId(stack, stack.node.findChild('StripTrailingSlash'));

  it('runs the trailing-slash function from infra/edge on every viewer request', () => {
    template.hasResourceProperties('AWS::CloudFront::Function', {
      // The same file edge-function.test.ts evaluates.
      FunctionCode: readFileSync(new URL('../../infra/edge/strip-trailing-slash.js', import.meta.url), 'utf8'),
      FunctionConfig: Match.objectLike({ Runtime: 'cloudfront-js-2.0' }),
    });
    template.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultCacheBehavior: Match.objectLike({
          FunctionAssociations: [{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [edgeId, 'FunctionARN'] } }],
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
              'Fn::Join': ['', [{ Ref: logicalId(stack, stack.api) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }]],
            },
            CustomOriginConfig: Match.objectLike({ OriginProtocolPolicy: 'https-only' }),
          }),
        ],
      }),
    });
  });

  it('publishes the CloudFront URL as the API base URL, and the table name', () => {
    const distributionId = logicalId(stack, stack.distribution);
    template.hasOutput('ApiBaseUrl', { Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }]] } });
    template.hasOutput('TableName', { Value: { Ref: tableId } });
  });
});
