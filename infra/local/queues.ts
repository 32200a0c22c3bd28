import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { QUEUES, type QueueName } from '#shared/queue-settings.ts';

/** Creates every queue of shared/queue-settings.ts with its DLQ and redrive, as CDK does; returns their URLs. */
export async function ensureQueues(endpoint: string, prefix = 'analytics-local'): Promise<Record<QueueName, string>> {
  const sqs = new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const urls = {} as Record<QueueName, string>;
  for (const [name, q] of Object.entries(QUEUES) as [QueueName, (typeof QUEUES)[QueueName]][]) {
    const retention = String(q.retentionDays * 86_400);
    const dlq = await sqs.send(
      new CreateQueueCommand({ QueueName: `${prefix}-${name}-dlq`, Attributes: { MessageRetentionPeriod: '1209600' } }),
    );
    const dlqArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl!, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    const queue = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${prefix}-${name}`,
        Attributes: {
          MessageRetentionPeriod: retention,
          VisibilityTimeout: String(q.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: q.maxReceiveCount }),
        },
      }),
    );
    urls[name] = queue.QueueUrl!;
  }
  sqs.destroy();
  return urls;
}

export function queueUrlEnv(urls: Partial<Record<QueueName, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(urls).map(([name, url]) => [QUEUES[name as QueueName].urlEnv, url!]));
}
