import type { Context } from 'aws-lambda';
import { type Worker, workers } from '#functions/routes.ts';
import { invokeWithTimeout } from './lambda-context.ts';
import { nextRun } from './schedule.ts';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { QueueName } from '#shared/queue-settings.ts';

type Handler = (event: unknown, context: Context) => Promise<unknown>;

/** Invocations of a worker its queue may run at once (Lambda's event source maxConcurrency): one poller each. */
const maxFromQueue = (w: Worker) => w.concurrency?.maxFromQueue ?? 1;

export async function loadWorker(name: string): Promise<Handler> {
  const worker = workers.find((w) => w.name === name);
  if (!worker) throw new Error(`no worker ${name}`);
  const url = new URL(`../../functions/${worker.handler}.ts`, import.meta.url).href;
  return ((await import(/* @vite-ignore */ url)) as { handler: Handler }).handler;
}

/** The EventBridge scheduled event a rule delivers. */
export function scheduledEvent(ruleName: string, at = new Date()) {
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: at.toISOString(),
    region: 'us-east-1',
    resources: [`arn:aws:events:us-east-1:000000000000:rule/${ruleName}`],
    detail: {},
  };
}

export async function runWorker(name: string, event: unknown): Promise<unknown> {
  const worker = workers.find((w) => w.name === name)!;
  const handler = await loadWorker(name);
  return invokeWithTimeout(name, worker.timeoutSeconds * 1000, (context) => handler(event, context));
}

export interface Stoppable {
  stop(): Promise<void>;
}

/** Fires scheduled workers on their EventBridge expressions (real time: a frozen clock must not stop them). */
export function startScheduler(
  onError: (name: string, error: unknown) => void = (n, e) => console.error(`scheduler: ${n} failed`, e),
): Stoppable {
  const timers = new Map<string, NodeJS.Timeout>();
  let stopped = false;
  const arm = (w: (typeof workers)[number]) => {
    if (!('schedule' in w.trigger) || stopped) return;
    const at = nextRun(w.trigger.schedule, new Date());
    const timer = setTimeout(
      () => {
        runWorker(w.name, scheduledEvent(w.name, at))
          .catch((e) => onError(w.name, e))
          .finally(() => arm(w));
      },
      Math.min(at.getTime() - Date.now(), 2 ** 31 - 1),
    );
    timer.unref();
    timers.set(w.name, timer);
  };
  workers.forEach(arm);
  return {
    stop: async () => {
      stopped = true;
      for (const t of timers.values()) clearTimeout(t);
    },
  };
}

/** Each queue a worker receives from: messages per invocation, and how many invocations may run at once (one poller each). */
export function queueSources(
  rows: readonly Worker[] = workers,
): { worker: string; queue: QueueName; batchSize: number; pollers: number }[] {
  return rows.flatMap((w) => [
    ...('queue' in w.trigger
      ? [{ worker: w.name, queue: w.trigger.queue, batchSize: w.batchSize ?? 10, pollers: maxFromQueue(w) }]
      : []),
    ...(w.continuesVia ? [{ worker: w.name, queue: w.continuesVia, batchSize: 1, pollers: 1 }] : []),
  ]);
}

/**
 * Lambda's SQS event sources: a worker's `trigger.queue` (batches of its row's `batchSize`, 10 by
 * default; the messages the worker reports in `batchItemFailures`, or all of them when it fails, stay
 * for SQS to hand out again after their visibility timeout, the others are deleted), polled by as many
 * loops as its row's `concurrency.maxFromQueue` (one by default), and its continuation queue (one note
 * at a time).
 */
export function startQueuePollers(endpoint: string, urls: Partial<Record<QueueName, string>>): Stoppable {
  // Lambda's poller, not a function: its own client, with room for a long poll in each request.
  const sqs = new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 3,
    requestHandler: new NodeHttpHandler({
      connectionTimeout: 1_000,
      requestTimeout: 10_000,
      throwOnRequestTimeout: true,
    }),
  });
  let stopped = false;
  const loops = queueSources().flatMap(({ worker, queue, batchSize, pollers }) => {
    const url = urls[queue];
    if (!url) return [];
    return Array.from({ length: pollers }, () =>
      (async () => {
        while (!stopped) {
          const out = await sqs
            .send(
              new ReceiveMessageCommand({
                QueueUrl: url,
                MaxNumberOfMessages: batchSize,
                WaitTimeSeconds: 1,
                MessageSystemAttributeNames: ['All'],
              }),
            )
            .catch(() => ({ Messages: [] }));
          const messages = out.Messages ?? [];
          if (messages.length === 0) continue;
          const event = {
            Records: messages.map((m) => ({
              messageId: m.MessageId,
              receiptHandle: m.ReceiptHandle,
              body: m.Body,
              attributes: m.Attributes ?? {},
              messageAttributes: {},
              eventSource: 'aws:sqs',
              eventSourceARN: url,
              awsRegion: 'us-east-1',
            })),
          };
          try {
            const result = (await runWorker(worker, event)) as
              | { batchItemFailures?: { itemIdentifier: string }[] }
              | undefined;
            const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
            for (const m of messages)
              if (!failed.has(m.MessageId!))
                await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
          } catch (error) {
            console.error(`${worker} failed on messages of ${queue}`, error);
          }
        }
      })(),
    );
  });
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      sqs.destroy();
    },
  };
}
