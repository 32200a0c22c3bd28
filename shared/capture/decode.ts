/**
 * Capture ingestion, pure part: raw request bytes -> JSON value -> events + project token ->
 * validated events ready to store. Mirrors PostHog's capture (Rust `rust/capture`, older Django
 * `posthog/api/capture.py`) and the normalisation its plugin-server applies, so every PostHog SDK
 * (posthog-js, posthog-node, posthog-python, ...) can send here unchanged.
 * No I/O: the handler looks the token up and stores what `normalizeEvents` accepted.
 */
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { NotAuthenticated, ParseError, PayloadTooLarge, ValidationError } from '../errors.ts';
import { UUID_PATTERN, uuidOfIndex } from '../ids.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../json.ts';
import { parseClientTime, resolveEventTimestamp, sentAtFromQuery } from './timestamps.ts';

/** PostHog's `/batch` body limit; also the cap on what any decoding step may inflate to. */
export const MAX_REQUEST_BYTES = 20 * 1024 * 1024;
/** PostHog refuses events that would not fit one Kafka message (~1 MB). */
export const MAX_EVENT_BYTES = 1024 * 1024;
/** PostHog truncates distinct ids to 200 characters rather than rejecting them. */
export const MAX_DISTINCT_ID_LENGTH = 200;
/**
 * PostHog's ingestion cuts event names to 200 characters too (plugin-server `sanitizeEventName`). Here
 * the name is also part of index keys (eventsByDay's sort key, rollup partitions), which DynamoDB caps
 * at 1024 bytes: a longer name must not reach them.
 */
export const MAX_EVENT_NAME_LENGTH = 200;

// ------------------------------------------------------------------------------------------------
// 1. Bytes -> JSON value
// ------------------------------------------------------------------------------------------------

export interface CaptureRequestInput {
  body: Buffer;
  /** The most the body, and what any decoding step inflates it to, may hold: MAX_REQUEST_BYTES unless said. */
  maxBytes?: number;
  contentType?: string;
  contentEncoding?: string;
  query: Record<string, string>;
}

/** A layer that was undone, outermost first (for logs and metrics). */
export type Encoding = 'gzip' | 'form' | 'base64' | 'lz64';

export interface DecodedPayload {
  /** The parsed JSON, not yet validated: give it to `extractEvents`. */
  payload: unknown;
  encodings: Encoding[];
  /** UTF-8 size of the JSON text once every layer was undone. */
  bytes: number;
  /**
   * SHA-256 (hex) of that JSON text: the same events resent in another encoding (re-gzipped, form or
   * base64) have the same digest, so their derived uuids (NormalizeOptions.retryKey) match.
   */
  digest: string;
}

type CompressionHint = 'gzip' | 'base64' | 'lz64' | undefined;

/** The layers undone so far, and the size no layer may inflate past. */
interface Decoding {
  encodings: Encoding[];
  limit: number;
}

export function decodeCaptureRequest(input: CaptureRequestInput): DecodedPayload {
  const decoding: Decoding = { encodings: [], limit: input.maxBytes ?? MAX_REQUEST_BYTES };
  const { encodings } = decoding;
  assertWithinLimit(input.body.length, decoding.limit);
  let text = bytesToText(rawPayload(input), decoding);
  let hint = compressionHint(input.query.compression) ?? compressionHint(input.contentEncoding);
  if (isForm(input.contentType, text)) {
    const form = readForm(text);
    encodings.push('form');
    text = form.data;
    // PostHog reads the form's own `compression` field before the query's.
    hint = compressionHint(form.compression) ?? hint;
  }
  text = unwrapText(text, hint, decoding);
  const bytes = Buffer.byteLength(text);
  assertWithinLimit(bytes, decoding.limit);
  return { payload: parseJson(text), encodings, bytes, digest: createHash('sha256').update(text).digest('hex') };
}

function assertWithinLimit(bytes: number, limit: number): void {
  if (bytes > limit) {
    throw new PayloadTooLarge(
      `request payload is ${bytes} bytes once decoded; the limit is ${limit} bytes (${mib(limit)})`,
    );
  }
}

const mib = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/** Legacy GET capture (and some beacons) carry the payload in `?data=`; a body wins when both exist. */
function rawPayload({ body, query }: CaptureRequestInput): Buffer {
  if (body.length > 0) return body;
  if (query.data) return Buffer.from(query.data, 'utf8');
  throw new ValidationError('request holds no event', null, 'no_data');
}

function compressionHint(value: string | null | undefined): CompressionHint {
  switch (value?.trim().toLowerCase()) {
    case 'gzip':
    case 'gzip-js':
      return 'gzip';
    case 'base64':
    case 'b64':
      return 'base64';
    case 'lz64':
    case 'lz-string':
      return 'lz64';
    default:
      return undefined;
  }
}

/**
 * Gzip is recognised by its magic bytes, whatever the hints say: posthog-js sends gzip as
 * text/plain with only `?compression=gzip-js`, and a body labelled gzip but lacking 1f 8b cannot be
 * gzip (a proxy may have inflated it already), so it is read as it is.
 */
function bytesToText(bytes: Buffer, decoding: Decoding): string {
  if (isGzip(bytes)) {
    decoding.encodings.push('gzip');
    return utf8(gunzip(bytes, decoding.limit));
  }
  return utf8(bytes);
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

function gunzip(bytes: Buffer, limit: number): Buffer {
  try {
    // maxOutputLength stops a zip bomb before it is inflated in memory.
    return gunzipSync(bytes, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new PayloadTooLarge(`request payload inflates beyond ${limit} bytes (${mib(limit)})`);
    }
    throw new ParseError(`failed to decode request: invalid gzip data (${(err as Error).message})`);
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function utf8(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new ParseError(
      'failed to decode request: payload is not valid UTF-8 (compressed without a compression hint?)',
    );
  }
}

const FORM_PREFIX = /^(?:data|compression|ver|_)=/;

/** posthog-js's fallback transport posts `data=<base64>` as a form; plain JSON mislabelled as a form still passes. */
function isForm(contentType: string | undefined, text: string): boolean {
  const mime = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mime === 'application/x-www-form-urlencoded') return !looksLikeJson(text);
  return FORM_PREFIX.test(text);
}

function readForm(text: string): { data: string; compression: string | null } {
  const form = new URLSearchParams(text);
  const data = form.get('data');
  if (!data) throw new ValidationError('request missing data payload', 'data', 'no_data');
  return { data, compression: form.get('compression') };
}

function looksLikeJson(text: string): boolean {
  const first = text.trimStart()[0];
  return first === '{' || first === '[';
}

function unwrapText(text: string, hint: CompressionHint, decoding: Decoding): string {
  if (hint === 'lz64' && !looksLikeJson(text)) {
    decoding.encodings.push('lz64');
    return lzDecompressFromBase64(restorePluses(text), decoding.limit);
  }
  if (hint === 'base64' && !looksLikeJson(text)) return fromBase64(text, decoding);
  // No (usable) hint: PostHog decodes a payload that is entirely base64 optimistically. Keep the
  // decoded form only if it turns out to be JSON or gzip, so plain text errors stay readable.
  if (looksLikeJson(text)) return text;
  // Only a payload that is not JSON is copied to strip it (20 MB of JSON was copied twice here for nothing).
  const clean = restorePluses(text).replace(/\s+/g, '');
  if (BASE64_TEXT.test(clean)) {
    const decoded = Buffer.from(clean, 'base64');
    if (isGzip(decoded) || looksLikeJson(decoded.subarray(0, 64).toString('latin1'))) {
      decoding.encodings.push('base64');
      return bytesToText(decoded, decoding);
    }
  }
  return text;
}

const BASE64_TEXT = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** Form and query decoding turn the '+' of base64 into spaces; PostHog puts them back the same way. */
function restorePluses(text: string): string {
  return text.replace(/ /g, '+');
}

function fromBase64(text: string, decoding: Decoding): string {
  const clean = restorePluses(text).replace(/\s+/g, '');
  if (!BASE64_TEXT.test(clean))
    throw new ParseError('failed to decode request: compression=base64 but the payload is not base64');
  decoding.encodings.push('base64');
  return bytesToText(Buffer.from(clean, 'base64'), decoding);
}

function parseJson(text: string): unknown {
  if (text.trim() === '') throw new ValidationError('request holds no event', null, 'no_data');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ParseError(`failed to parse request: invalid JSON (${(err as Error).message})`);
  }
  if (value !== null && typeof value === 'object' && nestedDeeperThan(value)) {
    throw new ParseError(`failed to parse request: invalid JSON (nested deeper than ${MAX_JSON_DEPTH} levels)`);
  }
  return value;
}

// ---- LZ-string (`compressToBase64`), as sent by old posthog-js with compression=lz64 -----------

const LZ_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
const LZ_VALUES = new Map([...LZ_ALPHABET].map((c, i) => [c, i] as const));

/** Reads the bit stream of lz-string's base64 output: 6 bits per character, high bit first, packed LSB-first into codes. */
class LzBitReader {
  private value: number;
  private mask = 32;
  private index = 1;
  constructor(private readonly input: string) {
    this.value = this.valueAt(0);
  }
  get exhausted(): boolean {
    return this.index > this.input.length;
  }
  read(bits: number): number {
    let result = 0;
    for (let i = 0, power = 1; i < bits; i++, power *= 2) {
      if (this.value & this.mask) result += power;
      this.mask >>= 1;
      if (this.mask === 0) {
        this.mask = 32;
        this.value = this.valueAt(this.index++);
      }
    }
    return result;
  }
  private valueAt(i: number): number {
    return LZ_VALUES.get(this.input.charAt(i)) ?? 0;
  }
}

/**
 * lz-string's `decompressFromBase64` (pieroxy/lz-string 1.4/1.5), with an output cap: like PostHog's
 * `decompress_lz64_capped`, a tiny input can expand enormously, so stop at the request limit.
 */
export function lzDecompressFromBase64(input: string, maxChars = MAX_REQUEST_BYTES): string {
  const failed = () => new ParseError('failed to decode request: invalid lz64 data');
  if (input === '') throw failed();
  const reader = new LzBitReader(input);
  // Codes 0, 1 and 2 mean "8-bit literal", "16-bit literal" and "end of stream"; entries start at 3.
  const dictionary: string[] = ['', '', ''];
  let numBits = 3;
  let enlargeIn = 4;
  const grow = () => {
    if (--enlargeIn === 0) enlargeIn = 2 ** numBits++;
  };
  const first = reader.read(2);
  if (first === 2) return '';
  if (first > 2) throw failed();
  let w = String.fromCharCode(reader.read(first === 0 ? 8 : 16));
  dictionary.push(w);
  const out = [w];
  let length = w.length;
  for (;;) {
    if (reader.exhausted) throw failed(); // valid streams end with code 2 before the input runs out
    let code = reader.read(numBits);
    if (code === 2) return out.join('');
    if (code < 2) {
      dictionary.push(String.fromCharCode(reader.read(code === 0 ? 8 : 16)));
      code = dictionary.length - 1;
      grow();
    }
    let entry: string;
    if (code < dictionary.length) entry = dictionary[code]!;
    else if (code === dictionary.length) entry = w + w.charAt(0);
    else throw failed();
    length += entry.length;
    if (length > maxChars) throw new PayloadTooLarge(`request payload inflates beyond ${maxChars} characters (lz64)`);
    out.push(entry);
    dictionary.push(w + entry.charAt(0));
    grow();
    w = entry;
  }
}

// ------------------------------------------------------------------------------------------------
// 2. JSON value -> events + token
// ------------------------------------------------------------------------------------------------

/** One element of the request as the client sent it; `normalizeEvents` validates it. */
export type RawEvent = unknown;

export interface ExtractedRequest {
  /** The project token (phc_...) that authenticates the request; still to be looked up. */
  token: string;
  /** Request-level send time (batch `sent_at`, else posthog-js's `?_=<ms>`), ISO UTC. */
  sentAt: string | undefined;
  events: RawEvent[];
  historicalMigration: boolean;
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Accepts one event, an array of events (posthog-js), or `{api_key|token, batch, sent_at?, historical_migration?}` (server SDKs). */
export function extractEvents(payload: unknown, query: Record<string, string>): ExtractedRequest {
  const { envelope, events } = splitPayload(payload);
  // PostHog answers an empty batch with 400 "request holds no event" before looking at tokens.
  if (events.length === 0) throw new ValidationError('request holds no event', null, 'empty_batch');
  const token = resolveToken(envelope, query, events);
  const batchSentAt = envelope ? parseClientTime(envelope.sent_at) : undefined;
  // An unparseable batch sent_at is ignored, not fatal (PostHog logs an ingestion warning and moves on).
  const sentAt = batchSentAt ?? sentAtFromQuery(query);
  return { token, sentAt: sentAt?.toISOString(), events, historicalMigration: envelope?.historical_migration === true };
}

function splitPayload(payload: unknown): { envelope: JsonObject | undefined; events: RawEvent[] } {
  if (Array.isArray(payload)) return { envelope: undefined, events: payload };
  if (!isObject(payload)) {
    throw new ValidationError(
      'request must be a JSON object (an event or a batch) or an array of events',
      null,
      'invalid_payload',
    );
  }
  if (!('batch' in payload)) return { envelope: undefined, events: [payload] };
  if (!Array.isArray(payload.batch))
    throw new ValidationError('batch must be an array of events', 'batch', 'invalid_payload');
  return { envelope: payload, events: payload.batch };
}

/**
 * Batch-level key first, then the query string, then the events' own tokens. When the batch or the
 * query names the token, PostHog uses it as is and does not compare the events' tokens.
 */
function resolveToken(envelope: JsonObject | undefined, query: Record<string, string>, events: RawEvent[]): string {
  const token =
    tokenValue(envelope?.api_key) ??
    tokenValue(envelope?.token) ??
    tokenValue(query.token) ??
    tokenValue(query.api_key) ??
    tokenFromEvents(events);
  if (token === undefined) throw new NotAuthenticated('event submitted without an api_key');
  // A personal key (phx_) here is a leaked secret: PostHog refuses it before any lookup.
  if (token.startsWith('phx_'))
    throw new NotAuthenticated('API key is not valid: personal API keys cannot be used to capture events');
  if (token.length > 200) throw new NotAuthenticated('API key is not valid: too long');
  return token;
}

function tokenFromEvents(events: RawEvent[]): string | undefined {
  const tokens = new Set<string>();
  for (const e of events) {
    const t = eventToken(e);
    if (t !== undefined) tokens.add(t);
  }
  if (tokens.size > 1) throw new NotAuthenticated('batch submitted with inconsistent api_key values');
  return tokens.values().next().value;
}

/** posthog-js puts the token in `properties.token`; other SDKs at the event root (`api_key`, `token`, `$token`). */
function eventToken(e: RawEvent): string | undefined {
  if (!isObject(e)) return undefined;
  const props = isObject(e.properties) ? e.properties : {};
  return tokenValue(e.api_key) ?? tokenValue(e.token) ?? tokenValue(e.$token) ?? tokenValue(props.token);
}

function tokenValue(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

// ------------------------------------------------------------------------------------------------
// 3. Events -> validated events
// ------------------------------------------------------------------------------------------------

export interface CapturedEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  /** Event time after skew correction, ISO UTC with milliseconds. */
  timestamp: string;
  /** The client send time used for the correction, ISO UTC, when one was known. */
  sent_at?: string;
}

export interface RejectedEvent {
  /** Position of the event in the request. */
  index: number;
  reason: string;
}

export interface NormalizeOptions {
  now: Date;
  /** Request-level `sent_at` (ExtractedRequest.sentAt); an event's own `sent_at` wins over it. */
  sentAt?: string;
  /** The uuid of an event sent without one and without any client time (a random v7: PostHog's behaviour). */
  newUuid: () => string;
  /**
   * Identifies the request's content (token, DecodedPayload.digest, the query's send time). An event sent
   * without a uuid but with a client time (timestamp, offset or sent_at, as every PostHog SDK sends)
   * gets the uuid of (retryKey, its index in the request): a client resending the same body after a
   * lost answer or a 5xx stores nothing twice, while two identical events of one body stay two events.
   */
  retryKey?: string;
}

export interface NormalizedEvents {
  accepted: CapturedEvent[];
  rejected: RejectedEvent[];
  /** UTF-8 bytes of each accepted event as JSON (sizes[i] is accepted[i]'s), measured for the 1 MiB check anyway. */
  sizes: number[];
}

/**
 * Validates each event on its own: a bad event is rejected by index with a reason and the others are
 * kept (never dropped silently). An oversized event fails the whole request with 413, as in PostHog,
 * so SDKs that split batches on 413 (posthog-node) can react.
 */
export function normalizeEvents(events: readonly RawEvent[], opts: NormalizeOptions): NormalizedEvents {
  const requestSentAt = parseClientTime(opts.sentAt) ?? undefined;
  const accepted: CapturedEvent[] = [];
  const rejected: RejectedEvent[] = [];
  const sizes: number[] = [];
  events.forEach((raw, index) => {
    const result = normalizeEvent(raw, index, requestSentAt, opts);
    if (typeof result === 'string') {
      rejected.push({ index, reason: result });
      return;
    }
    sizes.push(assertEventSize(result, index));
    accepted.push(result);
  });
  return { accepted, rejected, sizes };
}

function assertEventSize(event: CapturedEvent, index: number): number {
  const size = Buffer.byteLength(JSON.stringify(event));
  if (size > MAX_EVENT_BYTES) {
    throw new PayloadTooLarge(
      `maximum event size exceeded: event ${index} is ${size} bytes, the limit is ${MAX_EVENT_BYTES} bytes (1 MiB)`,
    );
  }
  return size;
}

/** The event, or the reason it is rejected. */
function normalizeEvent(
  raw: RawEvent,
  index: number,
  requestSentAt: Date | undefined,
  opts: NormalizeOptions,
): CapturedEvent | string {
  if (!isObject(raw)) return 'event must be a JSON object';
  if (typeof raw.event !== 'string' || raw.event === '') return 'event submitted without an event name';
  if (raw.properties !== undefined && raw.properties !== null && !isObject(raw.properties))
    return 'properties must be an object';
  const props: JsonObject = isObject(raw.properties) ? raw.properties : {};
  const distinctId = distinctIdOf(raw, props);
  if (distinctId === undefined) return 'event submitted without a distinct_id';
  const uuid = uuidOf(raw.uuid, () =>
    opts.retryKey !== undefined && hasClientTime(raw, requestSentAt)
      ? uuidOfIndex(opts.retryKey, index)
      : opts.newUuid(),
  );
  if (uuid === undefined) return 'invalid uuid';
  const properties = mergeRootPersonUpdates(raw, props);
  if (typeof properties === 'string') return properties;
  const sentAt = eventSentAt(raw, props, requestSentAt);
  const time = resolveEventTimestamp({ timestamp: raw.timestamp, offset: raw.offset, sentAt, now: opts.now });
  if (!time.ok) return time.reason;
  // A string of at most N UTF-16 units has at most N code points: only a longer one is split to count them.
  const nameChars = raw.event.length > MAX_EVENT_NAME_LENGTH ? [...raw.event] : [];
  return {
    uuid,
    event: nameChars.length > MAX_EVENT_NAME_LENGTH ? nameChars.slice(0, MAX_EVENT_NAME_LENGTH).join('') : raw.event,
    distinct_id: distinctId,
    properties,
    timestamp: time.timestamp.toISOString(),
    ...(sentAt ? { sent_at: sentAt.toISOString() } : {}),
  };
}

/**
 * Root `distinct_id`, else `properties.distinct_id`, else root `$distinct_id` (older Django), taking
 * the first usable one. Non-strings are stringified as PostHog does (numbers, booleans; objects as
 * JSON), and the result is cut to 200 characters (code points) instead of being rejected.
 */
function distinctIdOf(raw: JsonObject, props: JsonObject): string | undefined {
  for (const candidate of [raw.distinct_id, props.distinct_id, raw.$distinct_id]) {
    if (candidate === undefined || candidate === null) continue;
    const text = typeof candidate === 'string' ? candidate : JSON.stringify(candidate);
    if (text === '') continue;
    if (text.length <= MAX_DISTINCT_ID_LENGTH) return text;
    const chars = [...text];
    return chars.length > MAX_DISTINCT_ID_LENGTH ? chars.slice(0, MAX_DISTINCT_ID_LENGTH).join('') : text;
  }
  return undefined;
}

const SIMPLE_UUID = /^[0-9a-f]{32}$/i;

/**
 * The client's uuid is kept (posthog-node and posthog-js send v7 ids, and retries must map to the
 * same event). An unparseable one is rejected: PostHog's newest capture deserialises `uuid` as a
 * UUID and answers 400, rather than silently replacing it.
 */
function uuidOf(value: unknown, newUuid: () => string): string | undefined {
  if (value === undefined || value === null) return newUuid();
  if (typeof value !== 'string') return undefined;
  if (UUID_PATTERN.test(value)) return value.toLowerCase();
  if (SIMPLE_UUID.test(value)) {
    const h = value.toLowerCase();
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  return undefined;
}

/**
 * Whether the client said when the event happened. Without any such time the event's time is when it
 * arrived, so an identical body sent later is a new event (a heartbeat without a timestamp), not a
 * retry: only events with a client time get uuids derived from the request.
 */
function hasClientTime(raw: JsonObject, requestSentAt: Date | undefined): boolean {
  const given = (v: unknown) => v !== undefined && v !== null && v !== '';
  return given(raw.timestamp) || given(raw.offset) || given(raw.sent_at) || requestSentAt !== undefined;
}

/**
 * Server SDKs may send `$set` / `$set_once` / `$unset` at the event root; PostHog's ingestion
 * (`normalizeEvent`) folds them into properties, the root values winning on conflicting keys.
 * Returns the new properties, or the reason the event is rejected.
 */
function mergeRootPersonUpdates(raw: JsonObject, props: JsonObject): JsonObject | string {
  const out: JsonObject = { ...props };
  for (const key of ['$set', '$set_once'] as const) {
    const root = raw[key];
    if (root === undefined || root === null) continue;
    if (!isObject(root)) return `${key} must be an object`;
    out[key] = { ...(isObject(props[key]) ? props[key] : {}), ...root };
  }
  if (raw.$unset !== undefined && raw.$unset !== null) {
    const rootKeys = unsetKeys(raw.$unset);
    if (!rootKeys) return '$unset must be a list of property names';
    out.$unset = [...new Set([...(unsetKeys(props.$unset) ?? []), ...rootKeys])];
  }
  return out;
}

/** `$unset` is a list of keys; some clients send an object whose keys are the names. */
function unsetKeys(value: unknown): string[] | undefined {
  if (Array.isArray(value)) return value.every((k) => typeof k === 'string') ? value : undefined;
  if (isObject(value)) return Object.keys(value);
  return undefined;
}

/**
 * The event's own `sent_at` wins over the request's. `$ignore_sent_at: true` turns skew correction
 * off (PostHog honours it for imports whose timestamps are already right). An unparseable sent_at
 * is ignored, as PostHog does.
 */
function eventSentAt(raw: JsonObject, props: JsonObject, requestSentAt: Date | undefined): Date | undefined {
  if (props.$ignore_sent_at === true) return undefined;
  return parseClientTime(raw.sent_at) ?? requestSentAt;
}
