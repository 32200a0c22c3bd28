import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { buildStages } from './synth.ts';

// dev and prod, plus a stage with every option (custom domain, alarm e-mail and topic, CORS), built once.
const FULL = {
  name: 'full',
  overrides: {
    customDomain: {
      domainName: 'analytics.example.com',
      certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-0000-4000-8000-000000000001',
      hostedZone: { hostedZoneId: 'Z0123456789ABC', zoneName: 'example.com' },
    },
    alarmEmail: 'oncall@example.com',
    alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:oncall',
    corsOrigins: ['https://app.example.com'],
  },
};
const { app, stacks } = buildStages('dev', 'prod', FULL);
const report = new AwsSolutionsChecks().validateScope(app);

/** Every acknowledgement recorded under a scope: [construct path, rule id, reason]. */
function acknowledgements(scope: IConstruct): [string, string, string][] {
  return scope.node
    .findAll()
    .flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) =>
          Object.entries(m.data as Record<string, string>).map(
            ([id, reason]) => [c.node.path, id.replace(/^annotation::/i, ''), reason] as [string, string, string],
          ),
        ),
    );
}
const ruleOf = (id: string) => id.replace(/\[.*$/, '');

describe('cdk-nag AwsSolutions', () => {
  it('reports no unacknowledged error or warning on any stage', () => {
    const findings = report.violations.map(
      (v) =>
        `${v.severity} ${v.ruleName}: ${v.description} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
    expect(report.success).toBe(true);
  });

  // The one synthesis of this file (the checks above walk the construct tree): slow under a loaded machine.
  it('runs as a validation plugin at synthesis, as infra/app.ts registers it, without failing', {
    timeout: 300_000,
  }, () => {
    // One stage, the one with every option: the aspect above already checked all three, and the
    // plugin reads the synthesized templates (feature stacks' parameters instead of attributes), a
    // minute or more per stage on a busy machine.
    const { app: one } = buildStages(FULL);
    Validations.of(one).addPlugins(new AwsSolutionsChecks(one));
    expect(() => one.synth()).not.toThrow();
  });

  it('gives every acknowledged finding a specific reason', () => {
    const acks = acknowledgements(app);
    expect(acks.length).toBeGreaterThan(0);
    for (const [path, id, reason] of acks) {
      expect([path, id]).toEqual([path, expect.stringMatching(/^AwsSolutions-[A-Z0-9]+(\[.+\])?$/)]);
      expect([path, id, reason.length >= 80]).toEqual([path, id, true]);
    }
  });

  it('accepts only the reviewed rules, and only where each applies', () => {
    const rulesOf = (stage: string) =>
      [...new Set(acknowledgements(stacks.find((s) => s.stage.name === stage)!).map(([, id]) => ruleOf(id)))].sort();
    const everywhere = [
      'AwsSolutions-APIG4',
      'AwsSolutions-CFR1',
      'AwsSolutions-CFR2',
      'AwsSolutions-IAM5',
      'AwsSolutions-L1',
      // The lake bucket's own access logs (infra/constructs/lake.ts says why).
      'AwsSolutions-S1',
      'AwsSolutions-SQS3',
    ];
    // dev: no PITR (DDB3), no CloudFront logs (CFR3), default certificate (CFR4).
    expect(rulesOf('dev')).toEqual(
      [...everywhere, 'AwsSolutions-CFR3', 'AwsSolutions-CFR4', 'AwsSolutions-DDB3'].sort(),
    );
    // prod: PITR and CloudFront logs, so only the log bucket's own access logs (S1) and the default certificate.
    expect(rulesOf('prod')).toEqual([...everywhere, 'AwsSolutions-CFR4'].sort());
    // S1 on the lake bucket everywhere; on the CloudFront log bucket only where there is one (prod).
    const s1 = (stage: string) =>
      acknowledgements(stacks.find((s) => s.stage.name === stage)!)
        .filter(([, id]) => id === 'AwsSolutions-S1')
        .map(([path]) => path.split('/').slice(1).join('/'))
        .sort();
    expect(s1('dev')).toEqual(['Lake/Bucket']);
    expect(s1('prod')).toEqual(['Default/EdgeLogs', 'Lake/Bucket']);
    // A custom domain brings TLSv1.2_2021: CFR4 is fixed, not acknowledged.
    expect(rulesOf('full')).toEqual([...everywhere, 'AwsSolutions-CFR3', 'AwsSolutions-DDB3'].sort());
  });

  it("accepts wildcard IAM resources only for X-Ray/stream listing, table indexes, the lake's prefixes and customers' export roles", () => {
    const iam5 = new Set(
      acknowledgements(app)
        .filter(([, id]) => id.startsWith('AwsSolutions-IAM5'))
        // The table's and the lake bucket's ARNs as their own stack names them, or as the parameter or
        // output another stack reads them through.
        .map(([, id]) =>
          id
            .replace(/<(Table[A-Z0-9]+\.|referencetoanalytics[a-z]+Table[A-Z0-9]+)Arn>/, '<Table.Arn>')
            .replace(
              /<(Bucket[A-Z0-9]+\.|Lake[A-Za-z0-9]+\.Outputs\.analytics[a-z]+LakeBucket[A-Z0-9]+|referencetoanalytics[a-z]+LakeNestedStackLakeNestedStackResource[A-Z0-9]+Outputsanalytics[a-z]+LakeBucket[A-Z0-9]+)Arn>/,
              '<LakeBucket.Arn>',
            ),
        ),
    );
    expect([...iam5].sort()).toEqual(
      [
        'AwsSolutions-IAM5[Resource::*]',
        // The lake's prefixes (objects named per project and day at run time): the compactor writes them,
        // the trend and query functions read them through Athena, which writes its results under their own.
        'AwsSolutions-IAM5[Resource::<LakeBucket.Arn>/athena-results/*]',
        'AwsSolutions-IAM5[Resource::<LakeBucket.Arn>/events/*]',
        'AwsSolutions-IAM5[Resource::<LakeBucket.Arn>/manifests/events/*]',
        'AwsSolutions-IAM5[Resource::<Table.Arn>/index/*]',
        'AwsSolutions-IAM5[Resource::arn:*:iam::*:role/*]',
      ].sort(),
    );
  });
});
