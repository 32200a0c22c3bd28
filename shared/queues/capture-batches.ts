import { gunzipSync, gzipSync } from 'node:zlib';
import { SendMessageCommand, sqs } from '../aws/sqs.ts';
import { ConfigError, requireQueueUrl } from '../config.ts';
import type { StoredEvent } from '../db/events.ts';
import { ServiceUnavailable } from '../errors.ts';

/**
 * One message of the capture_batches queue: events of one project, already validated, with their
 * uuids, times and ingestion time fixed by the capture request, so storing a message twice (SQS
 * delivers at least once) writes the same items and counts nothing twice.
 */
export interface CaptureBatchMessage {
  project_id: number;
  events: StoredEvent[];
}

/**
 * Under SQS's smallest message size (256 KiB, what queues made before 2025 keep): the events are
 * gzipped JSON, base64 in the message (SQS bodies are text).
 */
export const MAX_CAPTURE_MESSAGE_BYTES = 240 * 1024;

/**
 * The messages that carry `events`, each at most MAX_CAPTURE_MESSAGE_BYTES; `alone` gets the events
 * that do not fit a message even by themselves (an event of ~200 KB of incompressible properties), which
 * the caller stores itself. Each slice is sized from the last one's compressed bytes per event (aiming
 * at 80% of the limit), and one that overflows is packed again smaller: most events are gzipped once.
 * Level 1 gzip: 20 MB of events pack in a fraction of level 6's time, a little larger.
 */
export function packCaptureBatches(
  projectId: number,
  events: readonly StoredEvent[],
): { messages: string[]; alone: StoredEvent[] } {
  const messages: string[] = [];
  const alone: StoredEvent[] = [];
  let next = 0;
  let count = 500;
  while (next < events.length) {
    const slice = events.slice(next, next + count);
    const message: CaptureBatchMessage = { project_id: projectId, events: slice };
    const body = gzipSync(JSON.stringify(message), { level: 1 }).toString('base64');
    const fits = body.length <= MAX_CAPTURE_MESSAGE_BYTES;
    if (fits) messages.push(body);
    else if (slice.length === 1) alone.push(slice[0]!);
    if (fits || slice.length === 1) next += slice.length;
    count = Math.max(1, Math.floor((MAX_CAPTURE_MESSAGE_BYTES * 0.8) / (body.length / slice.length)));
  }
  return { messages, alone };
}

export function unpackCaptureBatch(body: string): CaptureBatchMessage {
  const message = JSON.parse(gunzipSync(Buffer.from(body, 'base64')).toString('utf8')) as CaptureBatchMessage;
  if (!Number.isInteger(message.project_id) || !Array.isArray(message.events))
    throw new Error('not a capture batch message');
  return message;
}

/** Messages sent at once: 20 MB of events is ~10-40 messages, a few rounds. */
const SENDS_IN_FLIGHT = 8;

/**
 * Queues the messages for the store_capture_batches worker. A failure is a 503 (SQS unreachable):
 * what was already sent is stored by the worker, and a resent request maps onto the same uuids.
 */
export async function queueCaptureBatches(messages: readonly string[]): Promise<void> {
  try {
    const url = requireQueueUrl('capture_batches');
    for (let i = 0; i < messages.length; i += SENDS_IN_FLIGHT) {
      await Promise.all(
        messages
          .slice(i, i + SENDS_IN_FLIGHT)
          .map((MessageBody) => sqs().send(new SendMessageCommand({ QueueUrl: url, MessageBody }))),
      );
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ServiceUnavailable('Could not queue the batch for storage; please retry it (events are not doubled).');
  }
}
