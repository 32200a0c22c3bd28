import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { workers } from '#functions/routes.ts';
import {
  CUSTOM_METRICS,
  DELETION_OVERDUE_SECONDS,
  METRICS_NAMESPACE,
  RUNBOOK,
  RUNBOOK_DOC,
} from '#infra/constructs/monitoring.ts';
import { stageSettings } from '#infra/stages.ts';
import { METRIC } from '#shared/observability.ts';
import { logicalId, resources, synthStages, type Synthesized } from './synth.ts';

const EXTERNAL_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:oncall';
const { dev, prod, paged } = synthStages('dev', 'prod', {
  name: 'paged',
  overrides: { alarmEmail: 'oncall@example.com', alarmTopicArn: EXTERNAL_TOPIC },
});

type Alarm = {
  AlarmName: string;
  AlarmDescription: string;
  MetricName?: string;
  Namespace?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  [k: string]: any;
};
const alarms = (s: Synthesized) =>
  Object.values(resources(s.monitoring, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties as Alarm);
const alarmNamed = (s: Synthesized, suffix: string) => {
  const found = alarms(s).filter((a) => a.AlarmName === `analytics-${s.stack.stage.name}-${suffix}`);
  expect(found, suffix).toHaveLength(1);
  return found[0]!;
};
// The nested stack watches functions and queues by the names the stage's stack gives them.
const fnRef = (s: Synthesized, name: string) =>
  resources(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, s.stack.functions.get(name)!)]!.Properties!
    .FunctionName as string;
const queueName = (s: Synthesized, queue: Parameters<typeof logicalId>[1]) =>
  resources(s.template, 'AWS::SQS::Queue')[logicalId(s.stack, queue)]!.Properties!.QueueName as string;
/** What the stage's stack passes for a parameter of the monitoring nested stack. */
const passedFor = (s: Synthesized, ref: unknown) => {
  const parameter = (ref as { Ref: string }).Ref;
  const nested = resources(s.template, 'AWS::CloudFormation::Stack')[
    s.stack.getLogicalId(s.stack.monitoringStack.nestedStackResource!)
  ]!;
  return nested.Properties!.Parameters[parameter];
};

describe('alarms', () => {
  it('watches errors and throttles of every function, workers from their first error', () => {
    for (const s of [dev!, prod!]) {
      const thresholds = stageSettings(s.stack.stage.name).alarms;
      const workerNames = new Set<string>(workers.map((w) => w.name));
      for (const name of s.stack.functions.keys()) {
        const errors = alarmNamed(s, `${name}-errors`);
        expect(errors).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'Errors',
          Statistic: 'Sum',
          Period: 300,
          Dimensions: [{ Name: 'FunctionName', Value: fnRef(s, name) }],
          Threshold: workerNames.has(name) ? 1 : thresholds.functionErrors,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          TreatMissingData: 'notBreaching',
        });
        expect(alarmNamed(s, `${name}-throttles`)).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'Throttles',
          Dimensions: [{ Name: 'FunctionName', Value: fnRef(s, name) }],
          Threshold: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        });
      }
    }
  });

  it('alarms on the API 5xx rate (5xx / requests, ignoring near-idle periods) and p99 latency of the $default stage', () => {
    for (const s of [dev!, prod!]) {
      const t = stageSettings(s.stack.stage.name).alarms;
      const rate = alarmNamed(s, 'api-5xx-rate');
      // The API's id is the nested stack's parameter, which the stage's stack fills with its HTTP API.
      const apiId = alarmNamed(s, 'api-latency-p99').Dimensions![0]!.Value;
      expect(passedFor(s, apiId)).toEqual({ Ref: logicalId(s.stack, s.stack.api) });
      const dims = [
        { Name: 'ApiId', Value: apiId },
        { Name: 'Stage', Value: '$default' },
      ];
      expect(rate).toMatchObject({
        Threshold: t.apiServerErrorRatePercent,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
        TreatMissingData: 'notBreaching',
      });
      const byId = Object.fromEntries((rate.Metrics as { Id: string }[]).map((m) => [m.Id, m as any]));
      expect(byId.expr_1.Expression).toBe(
        `IF(requests >= ${t.apiServerErrorMinRequests}, 100 * FILL(errors, 0) / requests, 0)`,
      );
      expect(byId.errors.MetricStat).toMatchObject({
        Metric: { Namespace: 'AWS/ApiGateway', MetricName: '5xx', Dimensions: dims },
        Stat: 'Sum',
        Period: 300,
      });
      expect(byId.requests.MetricStat).toMatchObject({
        Metric: { Namespace: 'AWS/ApiGateway', MetricName: 'Count', Dimensions: dims },
        Stat: 'Sum',
        Period: 300,
      });
      expect(alarmNamed(s, 'api-latency-p99')).toMatchObject({
        Namespace: 'AWS/ApiGateway',
        MetricName: 'Latency',
        ExtendedStatistic: 'p99',
        Dimensions: dims,
        Threshold: t.apiLatencyP99Ms,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it("alarms when the ingest worker's stream iterator age passes the stage threshold", () => {
    for (const s of [dev!, prod!]) {
      expect(alarmNamed(s, 'ingest-iterator-age')).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Statistic: 'Maximum',
        Dimensions: [{ Name: 'FunctionName', Value: fnRef(s, 'ingest_events') }],
        Threshold: stageSettings(s.stack.stage.name).alarms.ingestIteratorAgeMs,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it('has exactly one depth > 0 alarm per dead-letter queue: each queue DLQ and the ingest failures queue', () => {
    const s = dev!;
    const dlqs = [s.stack.ingestFailures, ...[...s.stack.queues.values()].map((q) => q.dlq)];
    const depthAlarms = alarms(s).filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible');
    expect(depthAlarms).toHaveLength(dlqs.length);
    for (const dlq of dlqs) {
      const matching = depthAlarms.filter(
        (a) => JSON.stringify(a.Dimensions) === JSON.stringify([{ Name: 'QueueName', Value: queueName(s, dlq) }]),
      );
      expect(matching).toHaveLength(1);
      expect(matching[0]).toMatchObject({
        Namespace: 'AWS/SQS',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
      });
    }
  });

  it('alarms on any failed batch export run within 15 minutes', () => {
    expect(alarmNamed(dev!, 'batch-export-failures')).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      MetricName: 'ExportRunFailures',
      Dimensions: [{ Name: 'service', Value: 'analytics-dev' }],
      Statistic: 'Sum',
      Period: 900,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms when the Sunday drain reports no DrainCompleted between 05:00 and 08:00 UTC, counting no data as not completed', () => {
    const alarm = alarmNamed(dev!, 'drain-not-completed');
    expect(alarm).toMatchObject({
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    const byId = Object.fromEntries((alarm.Metrics as { Id: string }[]).map((m) => [m.Id, m as any]));
    expect(byId.expr_1).toMatchObject({
      ReturnData: true,
      Expression: 'IF(DAY(done) == 7 AND HOUR(done) >= 5 AND HOUR(done) <= 7 AND done < 1, 1, 0)',
    });
    // FILL makes the hourly series dense: a drain that never reported is 0 (not completed), not "missing".
    expect(byId.done).toMatchObject({ ReturnData: false, Expression: 'FILL(completed, 0)' });
    expect(byId.completed.MetricStat).toEqual({
      Metric: {
        Namespace: METRICS_NAMESPACE,
        MetricName: 'DrainCompleted',
        Dimensions: [{ Name: 'service', Value: 'analytics-dev' }],
      },
      Period: 3600,
      Stat: 'Sum',
    });
    // It clears by itself once the check window has passed, so an OK notification would mislead.
    expect(alarm.OKActions).toBeUndefined();
  });

  it('alarms, until handled, on a deletion request that waited through a Sunday drain', () => {
    expect(alarmNamed(dev!, 'deletion-request-overdue')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Statistic: 'Maximum',
      Dimensions: [{ Name: 'QueueName', Value: queueName(dev!, dev!.stack.queues.get('person_deletions')!.queue) }],
      Threshold: DELETION_OVERDUE_SECONDS,
    });
    expect(DELETION_OVERDUE_SECONDS).toBeGreaterThan(7 * 86_400);
    expect(DELETION_OVERDUE_SECONDS).toBeLessThan(8 * 86_400);
  });

  it("sends every alarm to the stage's topic, and also to the configured topic and e-mail", () => {
    for (const s of [dev!, paged!]) {
      const topic = { Ref: logicalId(s.stack.monitoringStack, s.stack.monitoring.topic) };
      const expected = s === paged ? [topic, EXTERNAL_TOPIC] : [topic];
      for (const a of alarms(s)) {
        expect([a.AlarmName, a.AlarmActions]).toEqual([a.AlarmName, expected]);
        if (!a.AlarmName.endsWith('drain-not-completed'))
          expect([a.AlarmName, a.OKActions]).toEqual([a.AlarmName, expected]);
      }
    }
    paged!.monitoring.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
    expect(Object.keys(resources(dev!.monitoring, 'AWS::SNS::Subscription'))).toEqual([]);
    dev!.monitoring.hasResourceProperties('AWS::SNS::Topic', { TopicName: 'analytics-dev-alarms' });
  });

  it('describes every alarm with what to do and a runbook section that exists in docs/operations.md', () => {
    const doc = readFileSync(new URL(`../../${RUNBOOK_DOC}`, import.meta.url), 'utf8');
    const anchors = new Set([...doc.matchAll(/<a id="([a-z0-9-]+)"><\/a>/g)].map((m) => m[1]));
    for (const section of Object.values(RUNBOOK)) expect([section, anchors.has(section)]).toEqual([section, true]);
    for (const a of alarms(dev!)) {
      const section = /Runbook: docs\/operations\.md#([a-z0-9-]+)$/.exec(a.AlarmDescription)?.[1];
      expect([a.AlarmName, section && anchors.has(section)]).toEqual([a.AlarmName, true]);
      expect(a.AlarmDescription.length).toBeLessThanOrEqual(1024);
      expect(doc, `docs/operations.md should name ${a.AlarmName.replace('analytics-dev-', '')}`).toContain(
        a.AlarmName.replace('analytics-dev-', '').replace(/^[a-z_]+-(errors|throttles)$/, '<function>-$1'),
      );
    }
  });
});

describe('nested stack', () => {
  it("takes only the HTTP API id from the stage's stack: functions and queues are watched by name", () => {
    for (const s of [dev!, prod!, paged!]) {
      const parameters = Object.keys(s.monitoring.toJSON().Parameters ?? {});
      expect(parameters).toHaveLength(1);
      expect(passedFor(s, { Ref: parameters[0] })).toEqual({ Ref: logicalId(s.stack, s.stack.api) });
    }
  });
});

describe('custom metrics', () => {
  it('reads exactly the metric names the code emits (shared/observability.ts)', () => {
    expect(Object.values(CUSTOM_METRICS).sort()).toEqual(Object.values(METRIC).sort());
  });
});

describe('dashboard', () => {
  it('has one dashboard per stage covering traffic, errors, latency, capture, ingestion, queues, exports, the drain and throttles', () => {
    for (const s of [dev!, prod!]) {
      const dashboards = Object.values(resources(s.monitoring, 'AWS::CloudWatch::Dashboard'));
      expect(dashboards).toHaveLength(1);
      expect(dashboards[0]!.Properties!.DashboardName).toBe(`analytics-${s.stack.stage.name}`);
      // The body is a JSON string joined with tokens (ids, ARNs); backslashes dropped to compare plain text.
      const body = JSON.stringify(dashboards[0]!.Properties!.DashboardBody).replaceAll('\\', '');
      for (const title of [
        'API requests',
        'API 4xx / 5xx',
        'API latency (ms)',
        'Capture volume by outcome',
        'Ingestion lag (ms)',
        'Deletion queue',
        'Dead-letter queues',
        'Batch export runs',
        'Batch export rows',
        'Weekly drain',
        'Throttling',
        'Alarms',
      ]) {
        expect(body).toContain(title);
      }
      for (const name of Object.values(CUSTOM_METRICS)) expect(body).toContain(`MetricName="${name}"`);
      expect(body).toContain(`service="analytics-${s.stack.stage.name}"`);
    }
  });
});
