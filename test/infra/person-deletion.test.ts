import { describe, expect, it } from 'vitest';
import { QUEUES } from '#shared/queues/settings.ts';
import { logicalId, resources, roleActions, synthStages } from './synth.ts';

const dev = synthStages('dev').dev!;
const { stack, template } = dev;
const drain = () => stack.functions.get('drain_person_deletions')!;
const queueArn = (name: 'person_deletions' | 'drain_continuations', which: 'queue' | 'dlq' = 'queue') => ({
  'Fn::GetAtt': [logicalId(stack, stack.queues.get(name)![which]), 'Arn'],
});

describe('deferred person-event deletion', () => {
  it('keeps deletion requests 14 days, and moves a message to its DLQ after the configured receives', () => {
    const queue = resources(template, 'AWS::SQS::Queue')[logicalId(stack, stack.queues.get('person_deletions')!.queue)]!;
    expect(queue.Properties).toMatchObject({
      MessageRetentionPeriod: 14 * 86_400,
      VisibilityTimeout: QUEUES.person_deletions.visibilityTimeoutSeconds,
      RedrivePolicy: { deadLetterTargetArn: queueArn('person_deletions', 'dlq'), maxReceiveCount: QUEUES.person_deletions.maxReceiveCount },
    });
    expect(QUEUES.person_deletions.visibilityTimeoutSeconds).toBeGreaterThan(900);
  });

  it('runs the drain every Sunday at 05:00 UTC', () => {
    const rules = Object.values(resources(template, 'AWS::Events::Rule')).filter((r) => r.Properties!.ScheduleExpression.startsWith('cron'));
    expect(rules).toHaveLength(1);
    expect(rules[0]!.Properties).toMatchObject({
      ScheduleExpression: 'cron(0 5 ? * SUN *)',
      State: 'ENABLED',
      Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': [logicalId(stack, drain()), 'Arn'] } })],
    });
  });

  it('alarms as soon as any queue has a message in its DLQ', () => {
    for (const name of ['person_deletions', 'drain_continuations'] as const) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(stack, stack.queues.get(name)!.dlq), 'QueueName'] } }],
      });
    }
  });

  it('lets only the drain read the deletion queue; person deletes may only send to it', () => {
    const consume = 'sqs:ReceiveMessage';
    expect(roleActions(dev, 'drain_person_deletions')).toContain(consume);
    for (const name of stack.functions.keys()) {
      if (name === 'drain_person_deletions') continue;
      expect([name, roleActions(dev, name).includes(consume)]).toEqual([name, false]);
    }
    for (const op of ['persons_destroy', 'persons_bulk_delete']) expect(roleActions(dev, op)).toContain('sqs:SendMessage');
    expect(roleActions(dev, 'persons_retrieve').some((a) => a.startsWith('sqs:'))).toBe(false);
  });

  it('lets only the drain receive, delete or change the visibility of deletion requests, on the queue or its DLQ', () => {
    const consuming = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'];
    const deletionQueues = [queueArn('person_deletions'), queueArn('person_deletions', 'dlq')].map((a) => JSON.stringify(a));
    const roleIdOf = (name: string) => logicalId(stack, stack.functions.get(name)!.role!);
    for (const name of stack.functions.keys()) {
      const grants = Object.values(resources(template, 'AWS::IAM::Policy'))
        .filter((p) => JSON.stringify(p.Properties!.Roles) === JSON.stringify([{ Ref: roleIdOf(name) }]))
        .flatMap((p) => p.Properties!.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
        .filter((st) => [st.Resource].flat().some((r) => deletionQueues.includes(JSON.stringify(r)) || r === '*'))
        .flatMap((st) => [st.Action].flat())
        .filter((a) => consuming.includes(a) || a === 'sqs:*');
      if (name === 'drain_person_deletions') expect(grants).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
      else expect([name, grants]).toEqual([name, []]);
    }
    // No queue policy opens the deletion queue to anyone else: the only statements deny non-TLS access.
    for (const policy of Object.values(resources(template, 'AWS::SQS::QueuePolicy'))) {
      for (const st of policy.Properties!.PolicyDocument.Statement as { Effect: string }[]) expect(st.Effect).toBe('Deny');
    }
  });

  it('lets a long drain continue itself through its continuation queue, with a 15-minute budget', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: queueArn('drain_continuations'),
      FunctionName: { Ref: logicalId(stack, drain()) },
      BatchSize: 1,
    });
    expect(resources(template, 'AWS::Lambda::Function')[logicalId(stack, drain())]!.Properties!.Timeout).toBe(900);
  });
});

describe('batch export scheduler', () => {
  it('runs every 5 minutes with no S3 permission of its own: only sts:AssumeRole and kms:Decrypt for destinations', () => {
    const target = { 'Fn::GetAtt': [logicalId(stack, stack.functions.get('run_batch_exports')!), 'Arn'] };
    const rules = Object.values(resources(template, 'AWS::Events::Rule')).filter((r) => JSON.stringify(r.Properties!.Targets[0].Arn) === JSON.stringify(target));
    expect(rules.map((r) => r.Properties!.ScheduleExpression)).toEqual(['rate(5 minutes)']);
    const destinationActions = roleActions(dev, 'run_batch_exports').filter((a) => /^(s3|sts|kms):/.test(a));
    expect(destinationActions.sort()).toEqual(['kms:Decrypt', 'sts:AssumeRole', 'sts:AssumeRole']); // Allow any role, Deny this account's
    for (const name of stack.functions.keys()) expect([name, roleActions(dev, name).some((a) => a.startsWith('s3:'))]).toEqual([name, false]);
  });
});

describe('event compactor', () => {
  it('runs every 5 minutes with a write role and no S3 or queue access', () => {
    const target = { 'Fn::GetAtt': [logicalId(stack, stack.functions.get('compact_events')!), 'Arn'] };
    const rules = Object.values(resources(template, 'AWS::Events::Rule')).filter((r) => JSON.stringify(r.Properties!.Targets[0].Arn) === JSON.stringify(target));
    expect(rules.map((r) => r.Properties!.ScheduleExpression)).toEqual(['rate(5 minutes)']);
    const actions = roleActions(dev, 'compact_events');
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:BatchWriteItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']));
    expect(actions.some((a) => a.startsWith('s3:') || a.startsWith('sqs:'))).toBe(false);
  });
});
