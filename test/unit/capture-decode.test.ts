import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  MAX_EVENT_BYTES,
  MAX_REQUEST_BYTES,
  decodeCaptureRequest,
  extractEvents,
  lzDecompressFromBase64,
  normalizeEvents,
  type CaptureRequestInput,
  type NormalizeOptions,
} from '#shared/capture/decode.ts';
import { NotAuthenticated, ParseError, PayloadTooLarge, ValidationError } from '#shared/errors.ts';
import { EARLIEST_EVENT_TIME } from '#shared/capture/timestamps.ts';

const EVENT = { event: '$pageview', distinct_id: 'user-1', properties: { token: 'phc_abc' } };
const EVENT_JSON = JSON.stringify(EVENT);

function decode(body: Buffer | string, extra: Partial<CaptureRequestInput> = {}) {
  return decodeCaptureRequest({ body: typeof body === 'string' ? Buffer.from(body) : body, query: {}, ...extra });
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('decodeCaptureRequest', () => {
  it('parses a plain JSON body', () => {
    expect(decode(EVENT_JSON, { contentType: 'application/json' })).toEqual({
      payload: EVENT,
      encodings: [],
      bytes: EVENT_JSON.length,
      digest: createHash('sha256').update(EVENT_JSON).digest('hex'),
    });
  });

  it('gives the same digest to the same JSON in any encoding (a resend through another transport)', () => {
    const plain = decode(EVENT_JSON).digest;
    expect(decode(gzipSync(EVENT_JSON)).digest).toBe(plain);
    expect(decode(`data=${Buffer.from(EVENT_JSON).toString('base64')}&compression=base64`).digest).toBe(plain);
    expect(decode(EVENT_JSON.replace('}', ',"x":1}')).digest).not.toBe(plain);
  });

  it('bounds the body and what it inflates to by maxBytes when a route takes less (the SDK endpoints: 1 MiB)', () => {
    const big = JSON.stringify({ token: 't', pad: 'x'.repeat(1024 * 1024) });
    expect(thrown(() => decode(big, { maxBytes: 1024 * 1024 }))).toMatchObject({ status: 413 });
    expect(thrown(() => decode(gzipSync(big), { maxBytes: 1024 * 1024 }))).toMatchObject({
      status: 413,
      detail: 'request payload inflates beyond 1048576 bytes (1 MiB)',
    });
    expect(decode(big).bytes).toBe(big.length);
  });

  it('gunzips a body sent with Content-Encoding: gzip (posthog-node)', () => {
    const out = decode(gzipSync(EVENT_JSON), { contentType: 'application/json', contentEncoding: 'gzip' });
    expect(out.payload).toEqual(EVENT);
    expect(out.encodings).toEqual(['gzip']);
  });

  it('gunzips a text/plain body flagged only by ?compression=gzip-js (posthog-js)', () => {
    const out = decode(gzipSync(`[${EVENT_JSON}]`), {
      contentType: 'text/plain',
      query: { compression: 'gzip-js', ver: '1.200.0', _: '1714564810000' },
    });
    expect(out.payload).toEqual([EVENT]);
    expect(out.encodings).toEqual(['gzip']);
  });

  it('detects gzip by its magic bytes when nothing says so', () => {
    expect(decode(gzipSync(EVENT_JSON)).payload).toEqual(EVENT);
  });

  it('reads a body labelled gzip but without the gzip magic as it is', () => {
    expect(decode(EVENT_JSON, { contentEncoding: 'gzip', query: { compression: 'gzip-js' } }).payload).toEqual(EVENT);
  });

  it('rejects corrupt gzip with ParseError', () => {
    const err = thrown(() => decode(Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02])));
    expect(err).toBeInstanceOf(ParseError);
    expect((err as ParseError).detail).toMatch(/^failed to decode request: invalid gzip data/);
  });

  it('decodes form data=<base64>&compression=base64 (posthog-js fallback)', () => {
    const body = `data=${encodeURIComponent(Buffer.from(EVENT_JSON).toString('base64'))}&compression=base64`;
    const out = decode(body, { contentType: 'application/x-www-form-urlencoded; charset=UTF-8' });
    expect(out.payload).toEqual(EVENT);
    expect(out.encodings).toEqual(['form', 'base64']);
  });

  it("restores base64 '+' that form decoding turned into spaces", () => {
    // base64('{"event":"a>?","distinct_id":"u"}') = eyJldmVudCI6ImE+PyIsImRpc3RpbmN0X2lkIjoidSJ9, sent unescaped
    const out = decode('data=eyJldmVudCI6ImE+PyIsImRpc3RpbmN0X2lkIjoidSJ9', {
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(out.payload).toEqual({ event: 'a>?', distinct_id: 'u' });
  });

  it('reads urlencoded data= holding plain JSON', () => {
    const out = decode(`data=${encodeURIComponent(EVENT_JSON)}`, { contentType: 'application/x-www-form-urlencoded' });
    expect(out).toMatchObject({ payload: EVENT, encodings: ['form'], bytes: EVENT_JSON.length });
  });

  it('treats a body starting with data= as a form even without the form content type', () => {
    expect(decode(`data=${encodeURIComponent(EVENT_JSON)}`, { contentType: 'text/plain' }).payload).toEqual(EVENT);
  });

  it('reads JSON mislabelled as a form', () => {
    expect(decode(EVENT_JSON, { contentType: 'application/x-www-form-urlencoded' }).payload).toEqual(EVENT);
  });

  it('answers 400 "request missing data payload" for a form without data', () => {
    const err = thrown(() =>
      decode('compression=base64&ver=1.0', { contentType: 'application/x-www-form-urlencoded' }),
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ status: 400, detail: 'request missing data payload', attr: 'data' });
  });

  it('decodes a whole body in base64 with ?compression=base64', () => {
    const out = decode(Buffer.from(EVENT_JSON).toString('base64'), { query: { compression: 'base64' } });
    expect(out.payload).toEqual(EVENT);
    expect(out.encodings).toEqual(['base64']);
  });

  it('decodes a whole body in base64 with no hint', () => {
    expect(decode(Buffer.from(`[${EVENT_JSON}]`).toString('base64')).payload).toEqual([EVENT]);
  });

  it('decodes base64 of gzip', () => {
    const out = decode(gzipSync(EVENT_JSON).toString('base64'), { query: { compression: 'b64' } });
    expect(out.payload).toEqual(EVENT);
    expect(out.encodings).toEqual(['base64', 'gzip']);
  });

  it('rejects compression=base64 on a payload that is not base64', () => {
    const err = thrown(() => decode('not%base64!', { query: { compression: 'base64' } }));
    expect(err).toBeInstanceOf(ParseError);
  });

  it('reads GET ?data= holding base64 (its + decoded to spaces by the query parser)', () => {
    const out = decode(Buffer.alloc(0), { query: { data: 'eyJldmVudCI6ImE PyIsImRpc3RpbmN0X2lkIjoidSJ9' } });
    expect(out.payload).toEqual({ event: 'a>?', distinct_id: 'u' });
  });

  it('reads GET ?data= holding JSON', () => {
    expect(decode(Buffer.alloc(0), { query: { data: EVENT_JSON } }).payload).toEqual(EVENT);
  });

  it('decodes lz64 form data (old posthog-js) from an lz-string compressToBase64 vector', () => {
    // lz-string 1.4 compressToBase64 of the JSON below; its '+' arrives as a space after form decoding.
    const lz =
      'NobwRApgbhB2AuYBcYAkAHAhgc2gSwgHcwAaMAEzwGd49YBjeAfT3OTAFcBGUsdAJwD26CP1oQqycPEEBrOO3QALekwA2AL1614aiOwA7sAPf0AH+QCXAAkDI5NcC8G4AC9sAF9XAXSA';
    const out = decode(`data=${lz}&compression=lz64`, { contentType: 'application/x-www-form-urlencoded' });
    expect(out.payload).toEqual([
      { event: '$pageview', distinct_id: 'u1', properties: { token: 'phc_lz', title: 'Ünïcødé ✓ 🚀' } },
    ]);
    expect(out.encodings).toEqual(['form', 'lz64']);
  });

  it('decompresses published lz-string base64 vectors', () => {
    expect(lzDecompressFromBase64('BIUwNmD2A0AEDukBOYAmBCIA')).toBe('Hello, world!');
    expect(lzDecompressFromBase64('BYUwNmD2AEDukCcwBMg=')).toBe('hello world');
    expect(lzDecompressFromBase64('M4ewrgTgxgpgBMALhAlgOwOZAAA=')).toBe('source string');
  });

  it('stops lz64 output at the cap with PayloadTooLarge', () => {
    expect(() => lzDecompressFromBase64('BYUwNmD2AEDukCcwBMg=', 5)).toThrow(PayloadTooLarge);
  });

  it('rejects invalid lz64 with ParseError', () => {
    expect(() => decode('data=AAAA&compression=lz64', { contentType: 'application/x-www-form-urlencoded' })).toThrow(
      ParseError,
    );
  });

  it('answers malformed JSON with ParseError (400) saying what failed', () => {
    const err = thrown(() => decode('{"event": "x",', { contentType: 'application/json' }));
    expect(err).toBeInstanceOf(ParseError);
    expect(err).toMatchObject({ status: 400, code: 'parse_error' });
    expect((err as ParseError).detail).toMatch(/^failed to parse request: invalid JSON/);
  });

  it('answers bytes that are not UTF-8 with ParseError', () => {
    expect(() => decode(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))).toThrow(ParseError);
  });

  it('answers an empty body without ?data= with ValidationError "request holds no event"', () => {
    for (const body of ['', '   \n']) {
      const err = thrown(() => decode(body));
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({ status: 400, detail: 'request holds no event', attr: null, code: 'no_data' });
    }
  });

  it('stops a gzip bomb at 20 MiB with PayloadTooLarge', () => {
    const bomb = gzipSync(Buffer.alloc(MAX_REQUEST_BYTES + 1, 0x20));
    expect(bomb.length).toBeLessThan(100 * 1024);
    const err = thrown(() => decode(bomb));
    expect(err).toBeInstanceOf(PayloadTooLarge);
    expect(err).toMatchObject({ status: 413 });
  });

  it('refuses a body over 20 MiB with PayloadTooLarge', () => {
    expect(MAX_REQUEST_BYTES).toBe(20_971_520);
    expect(() => decode(Buffer.alloc(MAX_REQUEST_BYTES + 1, 0x20))).toThrow(PayloadTooLarge);
  });
});

describe('extractEvents', () => {
  it('takes a single event object', () => {
    expect(extractEvents(EVENT, {})).toEqual({
      token: 'phc_abc',
      sentAt: undefined,
      events: [EVENT],
      historicalMigration: false,
    });
  });

  it('takes a bare array of events', () => {
    const events = [EVENT, { ...EVENT, event: 'click' }];
    expect(extractEvents(events, {}).events).toEqual(events);
  });

  it('takes a batch envelope with api_key, sent_at and historical_migration', () => {
    const out = extractEvents(
      {
        api_key: 'phc_batch',
        batch: [{ event: 'a', distinct_id: 'd' }],
        sent_at: '2024-05-01T12:00:05+00:00',
        historical_migration: true,
      },
      {},
    );
    expect(out).toEqual({
      token: 'phc_batch',
      sentAt: '2024-05-01T12:00:05.000Z',
      events: [{ event: 'a', distinct_id: 'd' }],
      historicalMigration: true,
    });
  });

  it('rejects a batch that is not an array', () => {
    expect(thrown(() => extractEvents({ api_key: 'phc_a', batch: {} }, {}))).toMatchObject({
      status: 400,
      attr: 'batch',
    });
  });

  it('rejects payloads that are neither an object nor an array with ValidationError', () => {
    for (const payload of ['x', 42, null, true]) expect(() => extractEvents(payload, {})).toThrow(ValidationError);
  });

  it('rejects an empty batch with "request holds no event"', () => {
    for (const payload of [[], { api_key: 'phc_a', batch: [] }]) {
      expect(thrown(() => extractEvents(payload, {}))).toMatchObject({ status: 400, detail: 'request holds no event' });
    }
  });

  it('reads the token from each place', () => {
    const e = { event: 'a', distinct_id: 'd' };
    expect(extractEvents({ token: 'phc_1', batch: [e] }, {}).token).toBe('phc_1');
    expect(extractEvents([e], { token: 'phc_2' }).token).toBe('phc_2');
    expect(extractEvents([e], { api_key: 'phc_3' }).token).toBe('phc_3');
    expect(extractEvents([{ ...e, api_key: 'phc_4' }], {}).token).toBe('phc_4');
    expect(extractEvents([{ ...e, token: 'phc_5' }], {}).token).toBe('phc_5');
    expect(extractEvents([{ ...e, $token: 'phc_6' }], {}).token).toBe('phc_6');
    expect(extractEvents([{ ...e, properties: { token: 'phc_7' } }], {}).token).toBe('phc_7');
  });

  it('prefers the batch token, then the query, then the events', () => {
    const e = { event: 'a', distinct_id: 'd', properties: { token: 'phc_event' } };
    expect(extractEvents({ api_key: 'phc_batch', batch: [e] }, { token: 'phc_query' }).token).toBe('phc_batch');
    expect(extractEvents([e], { token: 'phc_query' }).token).toBe('phc_query');
    expect(extractEvents([e], {}).token).toBe('phc_event');
  });

  it('ignores the events’ tokens when the batch names one', () => {
    const batch = [
      { event: 'a', distinct_id: 'd', api_key: 'phc_x' },
      { event: 'b', distinct_id: 'd', api_key: 'phc_y' },
    ];
    expect(extractEvents({ api_key: 'phc_batch', batch }, {}).token).toBe('phc_batch');
  });

  it('answers events with different tokens with 401', () => {
    const err = thrown(() =>
      extractEvents([{ ...EVENT }, { event: 'b', distinct_id: 'd', properties: { token: 'phc_other' } }], {}),
    );
    expect(err).toBeInstanceOf(NotAuthenticated);
    expect(err).toMatchObject({ status: 401, detail: 'batch submitted with inconsistent api_key values' });
  });

  it('accepts events that share one token while others carry none', () => {
    expect(extractEvents([EVENT, { event: 'b', distinct_id: 'd' }], {}).token).toBe('phc_abc');
  });

  it('answers a request without any token with 401', () => {
    const err = thrown(() => extractEvents([{ event: 'a', distinct_id: 'd', api_key: '' }], {}));
    expect(err).toBeInstanceOf(NotAuthenticated);
    expect(err).toMatchObject({ status: 401, detail: 'event submitted without an api_key' });
  });

  it('answers a personal API key used as token with 401', () => {
    expect(() => extractEvents({ api_key: 'phx_secret', batch: [EVENT] }, {})).toThrow(NotAuthenticated);
  });

  it('takes sent_at from posthog-js’s ?_=<ms>, ignoring second-resolution values', () => {
    expect(extractEvents([EVENT], { _: '1714564805000' }).sentAt).toBe('2024-05-01T12:00:05.000Z');
    expect(extractEvents([EVENT], { _: '1714564805' }).sentAt).toBeUndefined();
  });

  it('prefers a valid batch sent_at over the query, and falls back on the query when it is invalid', () => {
    const q = { _: '1714564805000' };
    expect(extractEvents({ api_key: 'phc_a', batch: [EVENT], sent_at: '2024-05-01T12:00:01Z' }, q).sentAt).toBe(
      '2024-05-01T12:00:01.000Z',
    );
    expect(extractEvents({ api_key: 'phc_a', batch: [EVENT], sent_at: 'yesterday' }, q).sentAt).toBe(
      '2024-05-01T12:00:05.000Z',
    );
  });
});

describe('normalizeEvents', () => {
  const NOW = new Date('2024-05-01T12:00:10.000Z');
  const NEW_UUID = '0190a0b0-0000-7000-8000-000000000001';
  const opts: NormalizeOptions = { now: NOW, newUuid: () => NEW_UUID };
  const one = (raw: unknown, o: Partial<NormalizeOptions> = {}) => normalizeEvents([raw], { ...opts, ...o });
  const accepted = (raw: unknown, o: Partial<NormalizeOptions> = {}) => {
    const out = one(raw, o);
    expect(out.rejected).toEqual([]);
    return out.accepted[0]!;
  };
  const reason = (raw: unknown) => one(raw).rejected[0]?.reason;

  it('turns a valid event into the stored shape', () => {
    expect(normalizeEvents([EVENT], opts)).toEqual({
      accepted: [
        {
          uuid: NEW_UUID,
          event: '$pageview',
          distinct_id: 'user-1',
          properties: { token: 'phc_abc' },
          timestamp: '2024-05-01T12:00:10.000Z',
        },
      ],
      rejected: [],
      sizes: [expect.any(Number)],
    });
  });

  it('rejects events missing event or distinct_id by index and keeps the others', () => {
    const out = normalizeEvents(
      [
        { distinct_id: 'd' },
        { event: 'ok', distinct_id: 'd' },
        { event: 'x' },
        { event: '', distinct_id: 'd' },
        { event: 'x', distinct_id: null },
      ],
      opts,
    );
    expect(out.accepted.map((e) => e.event)).toEqual(['ok']);
    expect(out.rejected).toEqual([
      { index: 0, reason: 'event submitted without an event name' },
      { index: 2, reason: 'event submitted without a distinct_id' },
      { index: 3, reason: 'event submitted without an event name' },
      { index: 4, reason: 'event submitted without a distinct_id' },
    ]);
  });

  it('rejects non-object events and non-object properties', () => {
    expect(reason('oops')).toBe('event must be a JSON object');
    expect(reason({ event: 'a', distinct_id: 'd', properties: ['x'] })).toBe('properties must be an object');
    expect(accepted({ event: 'a', distinct_id: 'd', properties: null }).properties).toEqual({});
  });

  it('falls back on properties.distinct_id, then $distinct_id, skipping empty values', () => {
    expect(accepted({ event: 'a', properties: { distinct_id: 'from-props' } }).distinct_id).toBe('from-props');
    expect(accepted({ event: 'a', $distinct_id: 'legacy' }).distinct_id).toBe('legacy');
    expect(accepted({ event: 'a', distinct_id: '', properties: { distinct_id: 'p' } }).distinct_id).toBe('p');
  });

  it('stringifies non-string distinct ids', () => {
    expect(accepted({ event: 'a', distinct_id: 42 }).distinct_id).toBe('42');
    expect(accepted({ event: 'a', distinct_id: 0 }).distinct_id).toBe('0');
    expect(accepted({ event: 'a', distinct_id: true }).distinct_id).toBe('true');
    expect(accepted({ event: 'a', distinct_id: { id: 1 } }).distinct_id).toBe('{"id":1}');
  });

  it('truncates distinct_id to 200 characters', () => {
    expect(accepted({ event: 'a', distinct_id: 'x'.repeat(300) }).distinct_id).toBe('x'.repeat(200));
    // code points, not UTF-16 units: no half surrogate pair at the cut
    expect(accepted({ event: 'a', distinct_id: '🚀'.repeat(250) }).distinct_id).toBe('🚀'.repeat(200));
  });

  it('merges root $set/$set_once/$unset into properties, root values winning', () => {
    const raw = {
      event: '$identify',
      distinct_id: 'd',
      $set: { plan: 'pro', email: 'a@b.c' },
      $set_once: { first: 'root' },
      $unset: ['old'],
      properties: {
        $set: { plan: 'free', name: 'Ann' },
        $set_once: { first: 'props', x: 1 },
        $unset: ['gone'],
        other: 1,
      },
    };
    expect(accepted(raw).properties).toEqual({
      $set: { plan: 'pro', name: 'Ann', email: 'a@b.c' },
      $set_once: { first: 'root', x: 1 },
      $unset: ['gone', 'old'],
      other: 1,
    });
    expect(raw.properties.$set).toEqual({ plan: 'free', name: 'Ann' }); // input untouched
    expect(reason({ event: 'a', distinct_id: 'd', $set: 'nope' })).toBe('$set must be an object');
  });

  it('keeps a client uuid (lower-cased), generates one when absent, rejects an invalid one', () => {
    expect(accepted({ ...EVENT, uuid: '0190A0B0-1111-7222-8333-444455556666' }).uuid).toBe(
      '0190a0b0-1111-7222-8333-444455556666',
    );
    expect(accepted({ ...EVENT, uuid: '0190a0b0111172228333444455556666' }).uuid).toBe(
      '0190a0b0-1111-7222-8333-444455556666',
    );
    expect(accepted({ ...EVENT }).uuid).toBe(NEW_UUID);
    expect(accepted({ ...EVENT, uuid: null }).uuid).toBe(NEW_UUID);
    expect(reason({ ...EVENT, uuid: 'not-a-uuid' })).toBe('invalid uuid');
    expect(reason({ ...EVENT, uuid: 123 })).toBe('invalid uuid');
  });

  it('fails the whole request with 413 when one event is over 1 MiB', () => {
    const big = { event: 'a', distinct_id: 'd', properties: { blob: 'x'.repeat(MAX_EVENT_BYTES) } };
    const err = thrown(() => normalizeEvents([EVENT, big], opts));
    expect(err).toBeInstanceOf(PayloadTooLarge);
    expect(err).toMatchObject({ status: 413 });
    expect((err as PayloadTooLarge).detail).toMatch(/^maximum event size exceeded/);
  });

  it('accepts an event just under 1 MiB', () => {
    expect(
      one({ event: 'a', distinct_id: 'd', properties: { blob: 'x'.repeat(MAX_EVENT_BYTES - 1000) } }).accepted,
    ).toHaveLength(1);
  });

  it('corrects clock skew with the request sent_at', () => {
    const e = accepted({ ...EVENT, timestamp: '2024-05-01T12:00:00.000Z' }, { sentAt: '2024-05-01T12:00:05.000Z' });
    expect(e.timestamp).toBe('2024-05-01T12:00:05.000Z'); // now 12:00:10 - (12:00:05 - 12:00:00)
    expect(e.sent_at).toBe('2024-05-01T12:00:05.000Z');
  });

  it('prefers the event’s own sent_at over the request’s', () => {
    const e = accepted(
      { ...EVENT, timestamp: '2024-05-01T12:00:00Z', sent_at: '2024-05-01T12:00:02Z' },
      { sentAt: '2024-05-01T12:00:05Z' },
    );
    expect(e.timestamp).toBe('2024-05-01T12:00:08.000Z');
  });

  it('skips skew correction for $ignore_sent_at and for an unparseable sent_at', () => {
    const ts = '2024-05-01T11:00:00.000Z';
    expect(
      accepted({ ...EVENT, timestamp: ts, properties: { $ignore_sent_at: true } }, { sentAt: '2024-05-01T12:00:05Z' })
        .timestamp,
    ).toBe(ts);
    expect(accepted({ ...EVENT, timestamp: ts, sent_at: 'garbage' }).timestamp).toBe(ts);
  });

  it('uses now - offset when there is no timestamp', () => {
    expect(accepted({ ...EVENT, offset: 3000 }).timestamp).toBe('2024-05-01T12:00:07.000Z');
    expect(reason({ ...EVENT, offset: 'soon' })).toBe('invalid offset');
  });

  it('uses the client timestamp as given when there is no sent_at, in any zone notation', () => {
    expect(accepted({ ...EVENT, timestamp: '2024-05-01T14:00:00+02:00' }).timestamp).toBe('2024-05-01T12:00:00.000Z');
    expect(accepted({ ...EVENT, timestamp: '2024-05-01T12:00:00.123456Z' }).timestamp).toBe('2024-05-01T12:00:00.123Z');
    expect(accepted({ ...EVENT, timestamp: '2024-05-01 07:30:00-0430' }).timestamp).toBe('2024-05-01T12:00:00.000Z');
    expect(accepted({ ...EVENT, timestamp: '2024-05-01T12:00:00' }).timestamp).toBe('2024-05-01T12:00:00.000Z'); // no zone = UTC
  });

  it('uses now when there is no timestamp', () => {
    expect(accepted({ ...EVENT, timestamp: null }).timestamp).toBe('2024-05-01T12:00:10.000Z');
  });

  it('replaces a timestamp more than 23 h in the future with now', () => {
    expect(accepted({ ...EVENT, timestamp: '2024-05-02T11:00:11Z' }).timestamp).toBe('2024-05-01T12:00:10.000Z'); // 23 h 1 s ahead
    expect(accepted({ ...EVENT, timestamp: '2024-05-02T11:00:10Z' }).timestamp).toBe('2024-05-02T11:00:10.000Z'); // exactly 23 h: kept
  });

  it('accepts epoch-millisecond timestamps', () => {
    expect(accepted({ ...EVENT, timestamp: 1714564800000 }).timestamp).toBe('2024-05-01T12:00:00.000Z');
  });

  it('rejects an invalid timestamp for that event only', () => {
    const out = normalizeEvents(
      [
        { ...EVENT, timestamp: 'not a date' },
        { ...EVENT, timestamp: '2024-02-30T00:00:00Z' },
        { ...EVENT, timestamp: '1714564800000' },
        { ...EVENT, timestamp: true },
        EVENT,
      ],
      opts,
    );
    expect(out.rejected).toEqual([0, 1, 2, 3].map((index) => ({ index, reason: 'invalid timestamp' })));
    expect(out.accepted).toHaveLength(1);
  });

  it('rejects an event whose time is before 2000-01-01, for that event only, whichever way the time came', () => {
    expect(EARLIEST_EVENT_TIME.toISOString()).toBe('2000-01-01T00:00:00.000Z');
    const out = normalizeEvents(
      [
        { ...EVENT, timestamp: '1999-12-31T23:59:59.999Z' },
        { ...EVENT, timestamp: '2000-01-01T00:00:00Z' },
        { ...EVENT, timestamp: 0 },
        { ...EVENT, timestamp: '0001-01-01T00:00:00Z' },
        { ...EVENT, offset: NOW.getTime() - Date.parse('1999-06-01T00:00:00Z') },
        EVENT,
      ],
      opts,
    );
    expect(out.rejected).toEqual(
      [0, 2, 3, 4].map((index) => ({ index, reason: 'timestamp before 2000-01-01T00:00:00.000Z' })),
    );
    expect(out.accepted.map((e) => e.timestamp)).toEqual(['2000-01-01T00:00:00.000Z', '2024-05-01T12:00:10.000Z']);
  });

  it('keeps an event from a client whose clock reads 1970 once sent_at corrects it', () => {
    const e = accepted({ ...EVENT, timestamp: '1970-01-01T00:00:05Z' }, { sentAt: '1970-01-01T00:00:10Z' });
    expect(e.timestamp).toBe('2024-05-01T12:00:05.000Z');
  });
});
