import {
  decodeCaptureRequest,
  extractEvents,
  normalizeEvents,
  type CapturedEvent,
  type CaptureRequestInput,
  type RejectedEvent,
} from '../capture/decode.ts';
import { now } from '../clock.ts';
import {
  ALWAYS_STORABLE_BYTES,
  encodeEvent,
  EventTooLarge,
  existingEventUuids,
  storeEvents,
  type EncodedEvent,
  type StoredEvent,
} from '../db/events.ts';
import { noteEventTime } from '../db/projects.ts';
import { limitRequest } from '../db/rate-limits.ts';
import { NotAuthenticated, ServiceUnavailable, ValidationError } from '../errors.ts';
import { packCaptureBatches, queueCaptureBatches, type CaptureBatchMessage } from '../queues/capture-batches.ts';
import { PAST_DEADLINE, settledBefore } from '../retry.ts';
import { projectOfToken } from './project-tokens.ts';
import { attributeGroups } from './group-types.ts';
import { uuidv7 } from '../ids.ts';
import { emitWithDimensions, logger, METRIC, MetricUnit } from '../observability.ts';

export interface CaptureResult {
  status: 1;
  /** Events stored by this request. */
  accepted: number;
  /** Events whose uuid was already stored (or repeated in this request): stored once, counted once. */
  deduplicated: number;
  rejected: number;
  errors: RejectedEvent[];
  /**
   * Events staged for the store_capture_batches worker rather than stored by the request (a batch too
   * large to store within the function's budget, or the rest of one when the deadline neared): durable
   * once this answer is sent, stored within seconds, a uuid already stored skipped there. Absent when 0.
   */
  queued?: number;
}

export interface CaptureInput extends CaptureRequestInput {
  /** When the request must have answered (epoch ms): storing stops there and the rest is staged. */
  deadline: number;
}

/**
 * A request stores at most this many events itself: ~1 s of writes on DynamoDB Local, ~0.1 s on
 * DynamoDB. PostHog's SDKs send 20-100 events a batch, so they get answers with exact counts; a
 * larger batch is validated here and staged for the worker, so a 20 MB body answers in seconds.
 */
export const INLINE_EVENT_LIMIT = 500;

/** Events written per step of the inline store; the deadline is checked between steps. */
const INLINE_STEP = 100;

/** Time kept before the deadline to stage what is left and answer. */
const STAGE_MARGIN_MS = 1_500;

/**
 * PostHog's capture: decode whatever the SDK sent, authenticate by the project token, validate each
 * event, then store the new ones, or stage them for the store_capture_batches worker. Storing is
 * idempotent per uuid, and events sent without a uuid get one derived from the request's content
 * (NormalizeOptions.retryKey): a resent batch changes nothing. The answer is never a 5xx once an event
 * is stored, unless staging the rest fails (SQS unreachable), which a resend then completes without doubles.
 */
export async function captureEvents(input: CaptureInput): Promise<CaptureResult> {
  const { payload, digest } = decodeCaptureRequest(input);
  const { token, sentAt, events } = extractEvents(payload, input.query);
  const project = await projectOfToken(token);
  if (!project)
    throw new NotAuthenticated('Project API key invalid. You can find your project API key in your project settings.');
  const projectId = project.project_id;
  const limited = startRateLimit(projectId);

  const receivedAt = now();
  const retryKey = [token, digest, input.query.sent_at ?? input.query._ ?? ''].join('\u0000');
  const { accepted, rejected, sizes } = normalizeEvents(events, { now: receivedAt, sentAt, newUuid: uuidv7, retryKey });
  // Before encoding: `$group_N` is part of what is stored (and of the size that decides where it is stored).
  await attributeGroups(projectId, accepted);
  const rejectedIndexes = new Set(rejected.map((r) => r.index));
  const indexes = events.map((_, i) => i).filter((i) => !rejectedIndexes.has(i));
  // Encoding each event for the table is needed to store it here, or to refuse one too large to store at all.
  const storeHere = accepted.length <= INLINE_EVENT_LIMIT;
  const { unique, deduplicated } = encodeUnique(
    accepted,
    indexes,
    rejected,
    projectId,
    receivedAt,
    (i) => storeHere || sizes[i]! > ALWAYS_STORABLE_BYTES,
  );

  if (unique.size === 0 && deduplicated === 0 && rejected.length) {
    await limited;
    countOutcomes({ accepted: 0, deduplicated: 0, rejected: rejected.length });
    throw firstRejection(rejected, events.length);
  }

  // Validating a 20 MB body on a starved machine can take most of the budget: then nothing is stored or
  // staged, and the 503 is true (a resend is safe), instead of staging after the function timed out (a 500
  // for a batch that was stored after all, which is what a client must never see).
  if (Date.now() > input.deadline)
    throw new ServiceUnavailable(
      'The batch took too long to validate; nothing was stored. Retry it, or send smaller batches.',
    );
  const all = [...unique.values()];
  const inline = storeHere ? all : [];
  await limited;
  await noteFirstEvent(
    projectId,
    all.map((v) => v.stored.timestamp),
  );
  const stored = await storeBefore(projectId, inline, input.deadline - STAGE_MARGIN_MS);
  const rest = inline === all ? stored.rest : all;
  const queued = rest.length ? await stage(projectId, rest) : 0;
  rejected.sort((a, b) => a.index - b.index);
  const result: CaptureResult = {
    status: 1,
    accepted: stored.accepted,
    deduplicated: deduplicated + stored.deduplicated,
    rejected: rejected.length,
    errors: rejected,
    ...(queued ? { queued } : {}),
  };
  countOutcomes(result);
  return result;
}

/**
 * Stores the events not stored yet, a step at a time, until `stopAt`: what is not known to be written
 * by then, or what a failed step left, is returned as `rest` (a step still in flight too: its writes
 * are idempotent, and the worker skips whichever of them land).
 */
async function storeBefore(
  projectId: number,
  events: UniqueEvent[],
  stopAt: number,
): Promise<{ accepted: number; deduplicated: number; rest: UniqueEvent[] }> {
  if (events.length === 0) return { accepted: 0, deduplicated: 0, rest: [] };
  const existing = await settledBefore(
    existingEventUuids(
      projectId,
      events.map((v) => v.stored.uuid),
    ),
    stopAt,
  );
  if (existing === PAST_DEADLINE) return { accepted: 0, deduplicated: 0, rest: events };
  const fresh = events.filter((v) => !existing.has(v.stored.uuid));
  for (let i = 0; i < fresh.length; i += INLINE_STEP) {
    const step = fresh.slice(i, i + INLINE_STEP).map((v) => v.encoded ?? encodeEvent(v.stored));
    // A failed step (throttling past the SDK's retries) is staged with the rest rather than answered 503
    // after earlier steps were stored: the worker's longer timeouts and SQS's retries take it from there.
    const written = await settledBefore(
      storeEvents(step).then(
        () => true,
        (error: unknown) => {
          logger.warn('capture store step failed; staging the rest', { error: (error as Error).message });
          return false;
        },
      ),
      stopAt,
    );
    if (written !== true) return { accepted: i, deduplicated: existing.size, rest: fresh.slice(i) };
  }
  return { accepted: fresh.length, deduplicated: existing.size, rest: [] };
}

/** Stages events for the store_capture_batches worker; one too large for a message is stored here instead. */
async function stage(projectId: number, events: UniqueEvent[]): Promise<number> {
  const { messages, alone } = packCaptureBatches(
    projectId,
    events.map((v) => v.stored),
  );
  await queueCaptureBatches(messages);
  if (alone.length) await storeEvents(alone.map((e) => encodeEvent(e)));
  return events.length;
}

/**
 * The store_capture_batches worker's part: stores a staged message's events that are not stored yet
 * (a redelivered message, or events the request stored after all, are skipped), counted as capture
 * counts its own.
 */
export async function storeStagedEvents(
  message: CaptureBatchMessage,
): Promise<{ accepted: number; deduplicated: number }> {
  const existing = await existingEventUuids(
    message.project_id,
    message.events.map((e) => e.uuid),
  );
  const fresh = message.events.filter((e) => !existing.has(e.uuid));
  await storeEvents(fresh.map((e) => encodeEvent(e)));
  const counts = { accepted: fresh.length, deduplicated: existing.size, rejected: 0 };
  countOutcomes(counts);
  return counts;
}

/**
 * Per project (its token names exactly one), far above the personal-key limits; SDKs back off on 429.
 * Counted while the batch is validated and its uuids looked up; nothing is stored before the verdict.
 */
function startRateLimit(projectId: number): Promise<void> {
  const limited = limitRequest(`project:${projectId}`, 'capture').then(({ throttled }) => {
    if (throttled) throw throttled;
  });
  limited.catch(() => undefined); // awaited by the caller; this only keeps an early validation error from leaving it unhandled
  return limited;
}

/** A captured event as its project stores it, ingested at `insertedAt` (ISO UTC). */
export function toStoredEvent(e: CapturedEvent, projectId: number, insertedAt: string): StoredEvent {
  const { uuid, event, distinct_id, properties, timestamp } = e;
  return { uuid, event, distinct_id, project_id: projectId, properties, timestamp, inserted_at: insertedAt };
}

interface UniqueEvent {
  index: number;
  stored: StoredEvent;
  /** Encoded when stored here, or when it might be too large to store (the worker encodes the rest). */
  encoded?: EncodedEvent;
}

/**
 * The accepted events encoded for storage, once per uuid (repeats counted as deduplicated); an event
 * too large to store joins `rejected` under its index in the request (`indexes[i]` for accepted[i]).
 */
function encodeUnique(
  accepted: ReturnType<typeof normalizeEvents>['accepted'],
  indexes: number[],
  rejected: RejectedEvent[],
  projectId: number,
  receivedAt: Date,
  encodeNow: (i: number) => boolean,
): { unique: Map<string, UniqueEvent>; deduplicated: number } {
  const unique = new Map<string, UniqueEvent>();
  let deduplicated = 0;
  const insertedAt = receivedAt.toISOString();
  accepted.forEach((e, i) => {
    if (unique.has(e.uuid)) {
      deduplicated += 1;
      return;
    }
    try {
      const stored = toStoredEvent(e, projectId, insertedAt);
      unique.set(e.uuid, { index: indexes[i]!, stored, ...(encodeNow(i) ? { encoded: encodeEvent(stored) } : {}) });
    } catch (error) {
      if (!(error instanceof EventTooLarge)) throw error;
      rejected.push({ index: indexes[i]!, reason: 'event too large to store' });
    }
  });
  return { unique, deduplicated };
}

/** The 400 for a batch none of whose events can be stored: the first rejection, with its index unless it was the only event. */
function firstRejection(rejected: RejectedEvent[], eventCount: number): ValidationError {
  const first = [...rejected].sort((a, b) => a.index - b.index)[0]!;
  return new ValidationError(
    first.reason,
    rejected.length === eventCount && eventCount === 1 ? null : `batch__${first.index}`,
  );
}

/**
 * The earliest timestamp this container has lowered each project's first-event time to. That time only
 * ever moves earlier, so a batch no earlier than it needs no write: steady state costs nothing.
 */
const notedFirstEvents = new Map<number, string>();

/**
 * Lowers the project's first-event time before the events are stored, so no stored event is ever
 * earlier than it: trends clamp their reads to it (and `all` starts there) without missing events the
 * ingest worker has not reached yet. The ingest worker still lowers it too (idempotent).
 */
async function noteFirstEvent(projectId: number, timestamps: string[]): Promise<void> {
  let earliest: string | undefined;
  for (const timestamp of timestamps) if (earliest === undefined || timestamp < earliest) earliest = timestamp;
  const noted = notedFirstEvents.get(projectId);
  if (earliest === undefined || (noted !== undefined && noted <= earliest)) return;
  await noteEventTime(projectId, earliest);
  if (notedFirstEvents.size >= 10_000) notedFirstEvents.clear();
  notedFirstEvents.set(projectId, earliest);
}

/** CaptureEvents by outcome (events of requests whose token resolved); outcomes with no events are left out. */
function countOutcomes(counts: Pick<CaptureResult, 'accepted' | 'deduplicated' | 'rejected'>): void {
  for (const outcome of ['accepted', 'deduplicated', 'rejected'] as const) {
    if (counts[outcome] > 0) emitWithDimensions(METRIC.captureEvents, MetricUnit.Count, counts[outcome], { outcome });
  }
}
