import { describe, expect, it } from 'vitest';
import { workers } from '#functions/routes.ts';
import { QUEUES, type QueueName } from '#shared/queue-settings.ts';
import { logicalId, resources, roleActions, synthStages } from './synth.ts';

const dev = synthStages('dev').dev!;
const { stack, template, monitoring } = dev;
const drain = () => stack.functions.get('drain_person_deletions')!;
const queueArn = (name: QueueName, which: 'queue' | 'dlq' = 'queue') => ({
  'Fn::GetAtt': [logicalId(stack, stack.queues.get(name)![which]), 'Arn'],
});
const roleIdOf = (name: string) => logicalId(stack, stack.functions.get(name)!.role!);
/** Actions the function's role has on any of the resources (or on '*'). */
const actionsOn = (name: string, ...targets: unknown[]) => {
  const wanted = targets.map((t) => JSON.stringify(t));
  return Object.values(resources(template, 'AWS::IAM::Policy'))
    .filter((p) => JSON.stringify(p.Properties!.Roles) === JSON.stringify([{ Ref: roleIdOf(name) }]))
    .flatMap((p) => p.Properties!.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
    .filter((st) => [st.Resource].flat().some((r) => wanted.includes(JSON.stringify(r)) || r === '*'))
    .flatMap((st) => [st.Action].flat());
};
/** The schedule expressions of the rules that invoke the function. */
const schedulesOf = (name: string) => {
  const target = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, stack.functions.get(name)!), 'Arn'] });
  return Object.values(resources(template, 'AWS::Events::Rule'))
    .filter((r) => JSON.stringify(r.Properties!.Targets[0].Arn) === target)
    .map((r) => r.Properties!.ScheduleExpression);
};
/** The queue keeps messages 14 days and moves one to its DLQ after its configured receives. */
function expectRetainedWithDlq(name: QueueName) {
  const queue = resources(template, 'AWS::SQS::Queue')[logicalId(stack, stack.queues.get(name)!.queue)]!;
  expect(queue.Properties).toMatchObject({
    MessageRetentionPeriod: 14 * 86_400,
    VisibilityTimeout: QUEUES[name].visibilityTimeoutSeconds,
    RedrivePolicy: { deadLetterTargetArn: queueArn(name, 'dlq'), maxReceiveCount: QUEUES[name].maxReceiveCount },
  });
}

describe('deferred person-event deletion', () => {
  it('keeps deletion requests 14 days, and moves a message to its DLQ after the configured receives', () => {
    expectRetainedWithDlq('person_deletions');
    expect(QUEUES.person_deletions.visibilityTimeoutSeconds).toBeGreaterThan(900);
  });

  it('runs the drain every Sunday at 05:00 UTC', () => {
    const rules = Object.values(resources(template, 'AWS::Events::Rule')).filter((r) =>
      r.Properties!.ScheduleExpression.startsWith('cron'),
    );
    expect(rules).toHaveLength(1);
    expect(rules[0]!.Properties).toMatchObject({
      ScheduleExpression: 'cron(0 5 ? * SUN *)',
      State: 'ENABLED',
      Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': [logicalId(stack, drain()), 'Arn'] } })],
    });
  });

  it('alarms as soon as any queue has a message in its DLQ', () => {
    for (const name of ['person_deletions', 'drain_continuations', 'person_bulk_deletes'] as const) {
      const dlq = resources(template, 'AWS::SQS::Queue')[logicalId(stack, stack.queues.get(name)!.dlq)]!;
      monitoring.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        Dimensions: [{ Name: 'QueueName', Value: dlq.Properties!.QueueName }],
      });
    }
  });

  it('lets only the drain read the deletion queue; person deletes may only send to it', () => {
    const consume = 'sqs:ReceiveMessage';
    expect(roleActions(dev, 'drain_person_deletions')).toContain(consume);
    for (const name of stack.functions.keys()) {
      // The bulk-delete, query, capture-batch and cohort workers receive from their own queues only (next describe); the test below checks the deletion queue by resource.
      const ownQueue = ['delete_queued_persons', 'run_queries', 'store_capture_batches', 'calculate_cohorts'];
      if (name === 'drain_person_deletions' || ownQueue.includes(name)) continue;
      expect([name, roleActions(dev, name).includes(consume)]).toEqual([name, false]);
    }
    for (const op of ['persons_destroy', 'persons_bulk_delete', 'persons_delete_events', 'delete_queued_persons'])
      expect(roleActions(dev, op)).toContain('sqs:SendMessage');
    expect(roleActions(dev, 'persons_retrieve').some((a) => a.startsWith('sqs:'))).toBe(false);
  });

  it('lets only the drain receive, delete or change the visibility of deletion requests, on the queue or its DLQ', () => {
    const consuming = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'];
    for (const name of stack.functions.keys()) {
      const grants = actionsOn(name, queueArn('person_deletions'), queueArn('person_deletions', 'dlq')).filter(
        (a) => consuming.includes(a) || a === 'sqs:*',
      );
      if (name === 'drain_person_deletions')
        expect(grants).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
      else expect([name, grants]).toEqual([name, []]);
    }
    // No queue policy opens the deletion queue to anyone else: the only statements deny non-TLS access.
    for (const policy of Object.values(resources(template, 'AWS::SQS::QueuePolicy'))) {
      for (const st of policy.Properties!.PolicyDocument.Statement as { Effect: string }[])
        expect(st.Effect).toBe('Deny');
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

describe('queued bulk deletes', () => {
  const worker = () => stack.functions.get('delete_queued_persons')!;

  it('keeps queued persons 14 days, hides a message in hand 6 times the worker timeout, and moves it to its DLQ after the configured receives', () => {
    expectRetainedWithDlq('person_bulk_deletes');
    const timeout = resources(template, 'AWS::Lambda::Function')[logicalId(stack, worker())]!.Properties!.Timeout;
    expect(timeout).toBe(workers.find((w) => w.name === 'delete_queued_persons')!.timeoutSeconds);
    expect(QUEUES.person_bulk_deletes.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * timeout);
  });

  it('runs the worker on batches of the queue, reporting failed messages so SQS retries only those', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: queueArn('person_bulk_deletes'),
      FunctionName: { Ref: logicalId(stack, worker()) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('lets only the worker receive queued bulk deletes; bulk_delete and the worker (its rest) may send them', () => {
    const consuming = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:*'];
    for (const name of stack.functions.keys()) {
      for (const which of ['queue', 'dlq'] as const) {
        const actions = actionsOn(name, queueArn('person_bulk_deletes', which));
        const consumes = actions.filter((a) => consuming.includes(a));
        const sends = actions.includes('sqs:SendMessage');
        if (name === 'delete_queued_persons' && which === 'queue') {
          expect(consumes).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
          expect(sends).toBe(true);
        } else {
          expect([name, which, consumes]).toEqual([name, which, []]);
          expect([name, which, sends]).toEqual([name, which, name === 'persons_bulk_delete' && which === 'queue']);
        }
      }
    }
    const envOf = (name: string) =>
      resources(template, 'AWS::Lambda::Function')[logicalId(stack, stack.functions.get(name)!)]!.Properties!
        .Environment.Variables;
    const url = (name: QueueName) => ({ Ref: logicalId(stack, stack.queues.get(name)!.queue) });
    expect(envOf('persons_bulk_delete')).toMatchObject({
      [QUEUES.person_bulk_deletes.urlEnv]: url('person_bulk_deletes'),
      [QUEUES.person_deletions.urlEnv]: url('person_deletions'),
    });
    expect(envOf('delete_queued_persons')).toMatchObject({
      [QUEUES.person_bulk_deletes.urlEnv]: url('person_bulk_deletes'),
      [QUEUES.person_deletions.urlEnv]: url('person_deletions'),
    });
    // The worker asks for the deletion of the persons' events (delete_events) but cannot read those requests.
    expect(actionsOn('delete_queued_persons', queueArn('person_deletions'))).toEqual(
      expect.arrayContaining(['sqs:SendMessage']),
    );
    expect(
      actionsOn('delete_queued_persons', queueArn('person_deletions')).filter((a) => consuming.includes(a)),
    ).toEqual([]);
  });
});

describe('batch export scheduler', () => {
  it('runs every 5 minutes with no S3 permission of its own: only sts:AssumeRole and kms:Decrypt for destinations', () => {
    expect(schedulesOf('run_batch_exports')).toEqual(['rate(5 minutes)']);
    const destinationActions = roleActions(dev, 'run_batch_exports').filter((a) => /^(s3|sts|kms):/.test(a));
    expect(destinationActions.sort()).toEqual(['kms:Decrypt', 'sts:AssumeRole', 'sts:AssumeRole']); // Allow any role, Deny this account's
    // The compactor writes the lake's own bucket; the functions answering big trends reach it only
    // through their project's session of the lake query role (test/infra/stack.test.ts and lake.test.ts
    // pin it): no other function has S3 of its own.
    for (const name of stack.functions.keys())
      expect([name, roleActions(dev, name).some((a) => a.startsWith('s3:'))]).toEqual([
        name,
        name === 'compact_events',
      ]);
  });
});

describe('event compactor', () => {
  it("runs every 5 minutes with a write role, no queue access, and S3 only for the lake's objects", () => {
    expect(schedulesOf('compact_events')).toEqual(['rate(5 minutes)']);
    const actions = roleActions(dev, 'compact_events');
    expect(actions).toEqual(
      expect.arrayContaining([
        'dynamodb:Query',
        'dynamodb:BatchWriteItem',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
      ]),
    );
    expect(actions.some((a) => a.startsWith('sqs:'))).toBe(false);
    expect(actions.filter((a) => a.startsWith('s3:')).sort()).toEqual(
      ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'].sort(),
    );
  });
});
