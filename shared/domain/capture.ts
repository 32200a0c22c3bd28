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
  encodeEvent,
  EventTooLarge,
  existingEventUuids,
  storeEvents,
  type EncodedEvent,
  type StoredEvent,
} from '../db/events.ts';
import { findProjectByToken } from '../db/organizations.ts';
import { noteEventTime } from '../db/projects.ts';
import { limitRequest } from '../db/rate-limits.ts';
import { NotAuthenticated, ValidationError } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { emitWithDimensions, METRIC, MetricUnit } from '../observability.ts';

export interface CaptureResult {
  status: 1;
  /** Events stored by this request. */
  accepted: number;
  /** Events whose uuid was already stored (or repeated in this request): stored once, counted once. */
  deduplicated: number;
  rejected: number;
  errors: RejectedEvent[];
}

/**
 * PostHog's capture: decode whatever the SDK sent, authenticate by the project token, validate each
 * event, then store the new ones. Storing is idempotent per uuid: a resent batch changes nothing.
 */
export async function captureEvents(input: CaptureRequestInput): Promise<CaptureResult> {
  const { payload } = decodeCaptureRequest(input);
  const { token, sentAt, events } = extractEvents(payload, input.query);
  const project = await findProjectByToken(token);
  if (!project)
    throw new NotAuthenticated('Project API key invalid. You can find your project API key in your project settings.');
  const limited = startRateLimit(project.project_id);

  const receivedAt = now();
  const { accepted, rejected } = normalizeEvents(events, { now: receivedAt, sentAt, newUuid: uuidv7 });
  const rejectedIndexes = new Set(rejected.map((r) => r.index));
  const indexes = events.map((_, i) => i).filter((i) => !rejectedIndexes.has(i));
  const { unique, deduplicated } = encodeUnique(accepted, indexes, rejected, project.project_id, receivedAt);

  if (unique.size === 0 && deduplicated === 0 && rejected.length) {
    await limited;
    countOutcomes({ accepted: 0, deduplicated: 0, rejected: rejected.length });
    throw firstRejection(rejected, events.length);
  }

  const [, existing] = await Promise.all([limited, existingEventUuids(project.project_id, [...unique.keys()])]);
  const fresh = [...unique.entries()].filter(([uuid]) => !existing.has(uuid)).map(([, v]) => v);
  await noteFirstEvent(
    project.project_id,
    fresh.map((v) => v.timestamp),
  );
  await storeEvents(fresh.map((v) => v.encoded));
  rejected.sort((a, b) => a.index - b.index);
  const result: CaptureResult = {
    status: 1,
    accepted: fresh.length,
    deduplicated: deduplicated + existing.size,
    rejected: rejected.length,
    errors: rejected,
  };
  countOutcomes(result);
  return result;
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
  timestamp: string;
  encoded: EncodedEvent;
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
      const encoded = encodeEvent(toStoredEvent(e, projectId, insertedAt));
      unique.set(e.uuid, { index: indexes[i]!, timestamp: e.timestamp, encoded });
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
