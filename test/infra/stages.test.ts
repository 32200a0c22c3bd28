import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { routes, workers } from '#functions/routes.ts';
import { FALLBACK_FUNCTION } from '#infra/build.ts';
import { functionNameOf } from '#infra/constructs/service-function.ts';
import { stageSettings } from '#infra/stages.ts';
import { logicalId, resources, synthStages } from './synth.ts';

const CERT = 'arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-0000-4000-8000-000000000001';
const EXTERNAL_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:oncall';

// dev and prod side by side in one app, as they would share an account, plus a stage with every
// optional setting (custom domain with hosted zone, alarm e-mail and topic, CORS).
const { dev, prod, full } = synthStages('dev', 'prod', {
  name: 'full',
  overrides: {
    customDomain: {
      domainName: 'analytics.example.com',
      certificateArn: CERT,
      hostedZone: { hostedZoneId: 'Z0123456789ABC', zoneName: 'example.com' },
    },
    alarmEmail: 'oncall@example.com',
    alarmTopicArn: EXTERNAL_TOPIC,
    corsOrigins: ['https://app.example.com'],
  },
});

const table = (s: typeof dev) => Object.values(resources(s!.template, 'AWS::DynamoDB::Table'))[0]!;

/** Every explicit physical name in a template: the names two stages in one account must not share. */
const NAME_PROPERTIES: Record<string, string> = {
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::ApiGatewayV2::Api': 'Name',
  'AWS::CloudWatch::Alarm': 'AlarmName',
  'AWS::CloudWatch::Dashboard': 'DashboardName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::Events::Rule': 'Name',
};
function physicalNames(s: typeof dev): { type: string; name: unknown }[] {
  return Object.entries(NAME_PROPERTIES).flatMap(([type, prop]) =>
    [s!.template, s!.monitoring].flatMap((template) =>
      Object.values(resources(template, type)).map((r) => ({ type, name: r.Properties?.[prop] })),
    ),
  );
}

describe('stages', () => {
  it("keeps each template well under CloudFormation's 500 resources per stack, with every optional setting too", () => {
    // One template held everything until it neared the limit: monitoring became a nested stack at 487-490
    // resources, and at 630 the API operations moved into one nested stack per feature (ApiFeatureStack).
    // Measured then: 103-107 in the stage's stack, 7-133 per feature stack, 178-179 in monitoring.
    // The tripwire is 300 per stack, well below the hard limit, so a feature that grows past it is split.
    const count = (template: Template) => Object.keys(template.toJSON().Resources).length;
    for (const [name, stage] of Object.entries({ dev, prod, full })) {
      for (const [stack, template] of Object.entries(stage!.templates))
        expect(count(template), `${name} ${stack}`).toBeLessThan(300);
      expect(count(stage!.monitoring), `${name} monitoring`).toBeLessThan(300);
      expect(count(stage!.monitoring), `${name} monitoring`).toBeGreaterThan(100);
      // Every operation's function is in a feature stack, none in the stage's own.
      const own = count(stage!.templates[stage!.stack.node.id]!);
      expect(own, `${name} stage stack`).toBeLessThan(150);
    }
  });

  it('keeps prod data: retained table with PITR and deletion protection', () => {
    expect(table(prod)).toMatchObject({
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      },
    });
  });

  it('lets dev be destroyed: deleted table without deletion protection', () => {
    expect(table(dev)).toMatchObject({ DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
    expect(table(dev).Properties?.DeletionProtectionEnabled).not.toBe(true);
  });

  it('applies the stage log retention and memory to every function', () => {
    for (const [s, name] of [
      [dev, 'dev'],
      [prod, 'prod'],
    ] as const) {
      const settings = stageSettings(name);
      const logGroups = Object.values(resources(s!.template, 'AWS::Logs::LogGroup'));
      expect(logGroups.length).toBeGreaterThan(0);
      for (const lg of logGroups) expect(lg.Properties?.RetentionInDays).toBe(settings.logRetention);
      for (const fn of Object.values(resources(s!.template, 'AWS::Lambda::Function'))) {
        expect(fn.Properties?.MemorySize).toBe(settings.lambdaMemoryMb);
        expect(fn.Properties?.Environment.Variables.ANALYTICS_STAGE).toBe(name);
      }
    }
    expect(stageSettings('prod').logRetention).toBeGreaterThan(stageSettings('dev').logRetention);
  });

  it('gives account-unique names per stage so two stages coexist in one account', () => {
    const names = (s: typeof dev, type: string) =>
      Object.values(resources(s!.template, type)).map((r) => JSON.stringify(r.Properties?.Name));
    expect(names(dev, 'AWS::ApiGatewayV2::Api')).not.toEqual(names(prod, 'AWS::ApiGatewayV2::Api'));
    expect(names(dev, 'AWS::CloudFront::Function')).not.toEqual(names(prod, 'AWS::CloudFront::Function'));
  });

  it('names the table, queues, functions, log groups, API, rules, topic, alarms and dashboard with the stage, with no collision between stages', () => {
    const devNames = physicalNames(dev);
    const prodNames = physicalNames(prod);
    for (const [s, stage] of [
      [devNames, 'dev'],
      [prodNames, 'prod'],
    ] as const) {
      for (const { type, name } of s) {
        expect([type, typeof name]).toEqual([type, 'string']);
        expect(name as string).toMatch(new RegExp(`(^|/)analytics-${stage}($|[-/])`));
      }
      // Unique within each resource type (the table, the API and the dashboard may all be `analytics-<stage>`).
      expect(new Set(s.map((n) => `${n.type} ${n.name}`)).size).toBe(s.length);
      for (const type of Object.keys(NAME_PROPERTIES))
        expect([type, s.some((n) => n.type === type)]).toEqual([type, true]);
    }
    const prodSet = new Set(prodNames.map((n) => `${n.type} ${n.name}`));
    expect(devNames.filter((n) => prodSet.has(`${n.type} ${n.name}`))).toEqual([]);
  });

  it('keeps every function name within 64 characters, even for the longest stage name', () => {
    const longestStage = { name: 'a'.repeat(20) };
    expect(() => stageSettings(longestStage.name)).not.toThrow();
    expect(() => stageSettings('a'.repeat(21))).toThrow(/stage must match/);
    const names = [FALLBACK_FUNCTION, ...routes.map((r) => r.operationId), ...workers.map((w) => w.name)];
    for (const name of names) {
      expect(functionNameOf(longestStage, name).length, name).toBeLessThanOrEqual(64);
      expect(functionNameOf(longestStage, name)).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    // Shortened names stay distinct, and keep their start; names that fit are left alone.
    expect(new Set(names.map((n) => functionNameOf(longestStage, n))).size).toBe(names.length);
    const long = functionNameOf(longestStage, 'cohorts_add_persons_to_static_cohort');
    expect(long).toMatch(/^analytics-a{20}-cohorts_add_persons_to_[a-z_]+-[0-9a-f]{6}$/);
    expect(long).toHaveLength(64);
    expect(functionNameOf({ name: 'dev' }, 'cohorts_add_persons_to_static_cohort')).toBe(
      'analytics-dev-cohorts_add_persons_to_static_cohort',
    );
  });

  it('gives unknown stage names the non-prod defaults', () => {
    const { name, ...rest } = stageSettings('feature-x');
    const { name: _dev, ...devRest } = stageSettings('dev');
    expect(name).toBe('feature-x');
    expect(rest).toEqual(devRest);
  });

  it('makes prod stricter: lower alarm thresholds, more throttling headroom, CloudFront logs kept', () => {
    const p = stageSettings('prod');
    const d = stageSettings('dev');
    expect(p.alarms.apiServerErrorRatePercent).toBeLessThan(d.alarms.apiServerErrorRatePercent);
    expect(p.alarms.apiLatencyP99Ms).toBeLessThan(d.alarms.apiLatencyP99Ms);
    expect(p.alarms.ingestIteratorAgeMs).toBeLessThan(d.alarms.ingestIteratorAgeMs);
    expect(p.alarms.functionErrors).toBeLessThanOrEqual(d.alarms.functionErrors);
    expect(p.throttle.rateLimit).toBeGreaterThan(d.throttle.rateLimit);
    expect(p.cloudFrontAccessLogs).toBe(true);
    expect(d.cloudFrontAccessLogs).toBe(false);
  });

  it('rejects stage names that cannot be part of a stack name', () => {
    expect(() => stageSettings('Prod_1')).toThrow(/stage must match/);
    expect(() => stageSettings('')).toThrow(/stage must match/);
  });

  it('rejects a certificate outside us-east-1, a malformed e-mail or topic ARN, and CORS origins with paths', () => {
    const domain = (certificateArn: string) => ({ customDomain: { domainName: 'a.example.com', certificateArn } });
    expect(() => stageSettings('dev', domain(CERT.replace('us-east-1', 'eu-west-1')))).toThrow(/us-east-1/);
    expect(() => stageSettings('dev', { alarmEmail: 'not-an-address' })).toThrow(/alarmEmail/);
    expect(() => stageSettings('dev', { alarmTopicArn: 'oncall' })).toThrow(/alarmTopicArn/);
    expect(() => stageSettings('dev', { corsOrigins: ['https://app.example.com/path'] })).toThrow(/corsOrigins/);
    expect(() => stageSettings('dev', { corsOrigins: ['*', 'http://localhost:3000'] })).not.toThrow();
  });
});

describe('per-stage API settings', () => {
  it('throttles each stage with its own limits', () => {
    for (const [s, name] of [
      [dev, 'dev'],
      [prod, 'prod'],
    ] as const) {
      const { throttle } = stageSettings(name);
      const apiStage = Object.values(resources(s!.template, 'AWS::ApiGatewayV2::Stage'))[0]!;
      expect(apiStage.Properties!.DefaultRouteSettings).toEqual({
        ThrottlingRateLimit: throttle.rateLimit,
        ThrottlingBurstLimit: throttle.burstLimit,
      });
    }
  });

  it('configures CORS on the HTTP API only for a stage that lists origins, without credentials', () => {
    for (const s of [dev, prod])
      expect(
        Object.values(resources(s!.template, 'AWS::ApiGatewayV2::Api'))[0]!.Properties!.CorsConfiguration,
      ).toBeUndefined();
    expect(
      Object.values(resources(full!.template, 'AWS::ApiGatewayV2::Api'))[0]!.Properties!.CorsConfiguration,
    ).toEqual({
      AllowOrigins: ['https://app.example.com'],
      AllowMethods: ['*'],
      AllowHeaders: ['authorization', 'content-type'],
      AllowCredentials: false,
      MaxAge: 3600,
    });
  });

  it('serves a custom domain from CloudFront with its us-east-1 certificate, TLS 1.2 minimum and alias records', () => {
    const config = Object.values(resources(full!.template, 'AWS::CloudFront::Distribution'))[0]!.Properties!
      .DistributionConfig;
    expect(config.Aliases).toEqual(['analytics.example.com']);
    expect(config.ViewerCertificate).toEqual({
      AcmCertificateArn: CERT,
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
    const records = Object.values(resources(full!.template, 'AWS::Route53::RecordSet'));
    expect(records.map((r) => r.Properties!.Type).sort()).toEqual(['A', 'AAAA']);
    for (const r of records) {
      expect(r.Properties).toMatchObject({ Name: 'analytics.example.com.', HostedZoneId: 'Z0123456789ABC' });
      expect(r.Properties!.AliasTarget.DNSName).toEqual({
        'Fn::GetAtt': [logicalId(full!.stack, full!.stack.distribution), 'DomainName'],
      });
    }
    full!.template.hasOutput('ApiBaseUrl', { Value: 'https://analytics.example.com' });
    // Without a custom domain: the default certificate, no aliases, no records.
    const devConfig = Object.values(resources(dev!.template, 'AWS::CloudFront::Distribution'))[0]!.Properties!
      .DistributionConfig;
    expect(devConfig.Aliases).toBeUndefined();
    expect(devConfig.ViewerCertificate).toBeUndefined();
    expect(Object.keys(resources(dev!.template, 'AWS::Route53::RecordSet'))).toEqual([]);
  });

  it('keeps CloudFront access logs in prod, in a private SSL-only bucket expiring with the log retention', () => {
    const config = Object.values(resources(prod!.template, 'AWS::CloudFront::Distribution'))[0]!.Properties!
      .DistributionConfig;
    expect(config.Logging).toMatchObject({
      Bucket: { 'Fn::GetAtt': [logicalId(prod!.stack, prod!.stack.edgeLogBucket!), 'RegionalDomainName'] },
    });
    const bucket = resources(prod!.template, 'AWS::S3::Bucket')[logicalId(prod!.stack, prod!.stack.edgeLogBucket!)]!;
    expect(bucket).toMatchObject({
      DeletionPolicy: 'Retain',
      Properties: {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        LifecycleConfiguration: {
          Rules: [{ ExpirationInDays: stageSettings('prod').logRetention, Status: 'Enabled' }],
        },
      },
    });
    expect(Object.keys(resources(dev!.template, 'AWS::S3::Bucket'))).toEqual([]);
  });
});
