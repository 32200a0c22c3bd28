import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { RAW_EVENT_RECORD_FILTER } from '#shared/db/stream.ts';
import { logicalId, resources, synthStages } from './synth.ts';

const { stack, template, monitoring } = synthStages('dev').dev!;
const worker = () => logicalId(stack, stack.functions.get('ingest_events')!);

describe('ingest worker', () => {
  it('reads the table stream, only raw event records, reporting failures per record', () => {
    const mappings = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => JSON.stringify(m.Properties!.FunctionName) === JSON.stringify({ Ref: worker() }),
    );
    expect(mappings).toHaveLength(1);
    const props = mappings[0]!.Properties!;
    expect(props.FunctionName).toEqual({ Ref: worker() });
    expect(props.EventSourceArn).toEqual({ 'Fn::GetAtt': [logicalId(stack, stack.table), 'StreamArn'] });
    expect(props.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(props.BisectBatchOnFunctionError).toBe(true);
    expect(props.MaximumRetryAttempts).toBe(10);
    const pattern = JSON.parse(props.FilterCriteria.Filters[0].Pattern);
    expect(pattern).toEqual({
      dynamodb: {
        Keys: { pk: { S: [{ prefix: RAW_EVENT_RECORD_FILTER.pkPrefix }] }, sk: { S: [RAW_EVENT_RECORD_FILTER.sk] } },
      },
    });
  });

  it('sends records it gives up on to a queue, and alarms as soon as one is there', () => {
    const queueArn = { 'Fn::GetAtt': [logicalId(stack, stack.ingestFailures), 'Arn'] };
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      DestinationConfig: { OnFailure: { Destination: queueArn } },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { MessageRetentionPeriod: 14 * 24 * 3600 });
    const queueName = resources(template, 'AWS::SQS::Queue')[logicalId(stack, stack.ingestFailures)]!.Properties!
      .QueueName;
    monitoring.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      Dimensions: [{ Name: 'QueueName', Value: queueName }],
    });
  });

  it('lets the worker write the table (persons, rollups) and read its stream', () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: Match.arrayWith(['dynamodb:GetRecords', 'dynamodb:GetShardIterator']) }),
        ]),
      },
    });
  });
});
