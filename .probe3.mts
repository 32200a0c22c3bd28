import { decodeCaptureRequest, extractEvents, normalizeEvents } from '#shared/capture/decode.ts';
import { encodeEvent } from '#shared/db/events.ts';
import { toStoredEvent } from '#shared/domain/capture.ts';
import { packCaptureBatches } from '#shared/queues/capture-batches.ts';
import { uuidv7 } from '#shared/ids.ts';
const n = 60000;
const body = Buffer.from(JSON.stringify({ api_key: 'phc_x', batch: Array.from({ length: n }, (_, i) => ({
  event: 'probe big', distinct_id: `large-${i % 200}`, timestamp: new Date(Date.UTC(2024, 4, 1, 11, 0, 0, i)).toISOString(),
  properties: { $current_url: `https://example.com/products/${i % 400}/details?ref=newsletter`, $browser: i % 2 ? 'Chrome' : 'Firefox', $os: i % 3 ? 'Mac OS X' : 'Windows', $session_id: `0190a1b2-c3d4-7e5f-8a9b-${String(i % 997).padStart(12, '0')}`, amount: i % 13, plan: i % 4 ? 'free' : 'paid', $lib: 'posthog-node', $lib_version: '4.2.1' } })) }));
let t = performance.now();
const lap = (what: string) => { const n2 = performance.now(); console.log(what, Math.round(n2 - t), 'ms'); t = n2; };
const { payload, digest } = decodeCaptureRequest({ body, query: {}, contentType: 'application/json' }); lap('decode');
const { events, sentAt } = extractEvents(payload, {}); lap('extract');
const { accepted } = normalizeEvents(events, { now: new Date(), sentAt, newUuid: uuidv7, retryKey: `phc_x\u0000${digest}` }); lap('normalize');
const stored = accepted.map((e) => toStoredEvent(e, 1, new Date().toISOString())); lap('toStored');
stored.forEach((s) => encodeEvent(s)); lap('encode');
const { messages } = packCaptureBatches(1, stored); lap(`pack (${messages.length} messages)`);
