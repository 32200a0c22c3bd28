import { describe, expect, it } from 'vitest';
import { normalizeEvents } from '#shared/capture/decode.ts';
import { renderPrefix } from '#shared/exports/files.ts';
import { parseExportQuery } from '#shared/exports/hogql.ts';
import { parseTrendRequest } from '#shared/trends/parse.ts';
import { call } from '#shared/db/client.ts';
import { isPersonPageKey } from '#shared/db/persons.ts';
import { applyPersonUpdates } from '#shared/domain/person-properties.ts';
import { TRANSIENT, retryTransient } from '#shared/retry.ts';
import { Conflict, PayloadTooLarge, textOf, ValidationError } from '#shared/errors.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '#shared/json.ts';
import { eventChanges } from '#shared/db/stream.ts';
import { marshall } from '@aws-sdk/util-dynamodb';

/** The helpers behind the fixes the fuzz, concurrency and fault tests found (docs/reliability.md). */
describe('reliability fixes', () => {
  it('measures JSON nesting iteratively, at any depth', () => {
    const deep = (d: number) => JSON.parse(`${'['.repeat(d)}1${']'.repeat(d)}`);
    expect(nestedDeeperThan(deep(MAX_JSON_DEPTH))).toBe(false);
    expect(nestedDeeperThan(deep(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestedDeeperThan(JSON.parse(`{"a":${'{"b":'.repeat(200_000)}1${'}'.repeat(200_000)}}`))).toBe(true);
    expect(nestedDeeperThan({ a: [1, { b: 'x' }], c: null })).toBe(false);
  });

  it('turns any request value into text, even one whose toString is data', () => {
    expect(textOf('x')).toBe('x');
    expect(textOf(['hour'])).toBe('hour');
    expect(textOf(JSON.parse('{"toString":{}}'))).toBe('{"toString":{}}');
    expect(textOf(JSON.parse('[{"valueOf":1,"toString":[]}]'))).toBe('[{"valueOf":1,"toString":[]}]');
  });

  it('maps values DynamoDB refuses to store to a 4xx, and nothing else', async () => {
    const refuse = (message: string) =>
      call(() => Promise.reject(Object.assign(new Error(message), { name: 'ValidationException' }))).catch(
        (e: unknown) => e,
      );
    expect(await refuse('Item size has exceeded the maximum allowed size')).toBeInstanceOf(PayloadTooLarge);
    expect(await refuse('Item size to update has exceeded the maximum allowed size')).toBeInstanceOf(PayloadTooLarge);
    expect(
      await refuse(
        'One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of 2048 bytes',
      ),
    ).toBeInstanceOf(ValidationError);
    expect(
      await refuse(
        'Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes',
      ),
    ).toBeInstanceOf(ValidationError);
    expect(await refuse('One or more parameter values were invalid: Size limit exceeded')).toBeInstanceOf(
      ValidationError,
    );
    expect(await refuse('Nesting Levels have exceeded supported limits')).toBeInstanceOf(ValidationError);
    const other = await refuse('The provided key element does not match the schema');
    expect(other).not.toBeInstanceOf(ValidationError);
    expect((other as Error).name).toBe('ValidationException');
  });

  it('accepts as a list cursor only a position of the same project', () => {
    const key = {
      pk: 'PERSON#7#12',
      sk: 'PERSON',
      parent_pk: 'PROJECT#7#PERSONS',
      parent_sk: '2024-01-01T00:00:00.000Z#000000000012',
    };
    expect(isPersonPageKey(7, key)).toBe(true);
    expect(isPersonPageKey(8, key)).toBe(false);
    expect(isPersonPageKey(7, { ...key, pk: 'ORG#x' })).toBe(false);
    expect(isPersonPageKey(7, { ...key, parent_sk: 'x'.repeat(2000) })).toBe(false);
    expect(isPersonPageKey(7, { ...key, extra: 1 })).toBe(false);
    expect(isPersonPageKey(7, 'PERSON#7#12')).toBe(false);
  });

  it('keeps prototype-named person properties as own data', () => {
    const current = JSON.parse('{"a":1}') as Record<string, unknown>;
    const set = JSON.parse('{"__proto__":{"polluted":true},"constructor":"c"}') as Record<string, unknown>;
    const { properties, changed } = applyPersonUpdates(current, {
      set,
      setOnce: JSON.parse('{"toString":"t"}'),
      unset: [],
    });
    expect(JSON.parse(JSON.stringify(properties))).toEqual(
      JSON.parse('{"a":1,"__proto__":{"polluted":true},"constructor":"c","toString":"t"}'),
    );
    expect(Object.getPrototypeOf(properties)).toBe(Object.prototype);
    expect(changed.sort()).toEqual(['__proto__', 'constructor', 'toString']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(applyPersonUpdates(properties, { set: {}, setOnce: {}, unset: ['__proto__'] }).changed).toEqual([
      '__proto__',
    ]);
  });

  it('never takes an Object.prototype name for an entry of a lookup table', () => {
    for (const name of ['constructor', 'isPrototypeOf', 'toString', '__proto__']) {
      const math = (() => {
        try {
          parseTrendRequest({ events: [{ id: 'x', math: name }] });
        } catch (error) {
          return error;
        }
      })() as ValidationError;
      expect(math).toBeInstanceOf(ValidationError);
      expect(typeof math.detail).toBe('string');
      const filter = (() => {
        try {
          parseTrendRequest({ events: [{ id: 'x', properties: [{ key: 'a', value: 1, type: name }] }] });
        } catch (error) {
          return error;
        }
      })() as ValidationError;
      expect(typeof filter.detail).toBe('string');
    }
    const w = { start: new Date('2024-05-01T10:00:00Z'), end: new Date('2024-05-01T11:00:00Z') };
    expect(renderPrefix('{constructor}/{toString}/{year}', w, 'events')).toBe('{constructor}/{toString}/2024');
    const [field] = parseExportQuery('SELECT properties.constructor FROM events');
    expect(field!.read({ columns: {}, properties: JSON.parse('{"a":1}'), person_properties: {} } as never)).toBeNull();
    expect(
      field!.read({ columns: {}, properties: JSON.parse('{"constructor":"c"}'), person_properties: {} } as never),
    ).toBe('c');
  });

  it('cuts event names to 200 characters, as PostHog does', () => {
    const { accepted } = normalizeEvents([{ event: '🚀'.repeat(5_000), distinct_id: 'd' }], {
      now: new Date(),
      newUuid: () => '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    });
    expect(accepted[0]!.event).toBe('🚀'.repeat(200));
  });

  it('retries a lost optimistic race with backoff, and answers 409 once out of time', async () => {
    let calls = 0;
    expect(await retryTransient('Thing', async () => (++calls < 4 ? TRANSIENT : 'done'))).toBe('done');
    expect(calls).toBe(4);
    await expect(retryTransient('Thing', async () => TRANSIENT, { deadline: Date.now() + 50 })).rejects.toBeInstanceOf(
      Conflict,
    );
  });
  it('#10 a keys-only REMOVE (DynamoDB Local, racing deletes) changes nothing; a REMOVE with its old image still does', () => {
    const keys = { pk: { S: 'EVENT#29#u1' }, sk: { S: 'EVENT' } };
    const stored = {
      uuid: 'u1',
      event: 'e',
      distinct_id: 'd',
      project_id: 29,
      properties: '{}',
      timestamp: '2026-01-01T00:00:00.000Z',
      inserted_at: '2026-01-01T00:00:01.000Z',
    };
    const record = (SequenceNumber: string, OldImage?: unknown) =>
      ({ eventName: 'REMOVE', dynamodb: { Keys: keys, SequenceNumber, ...(OldImage ? { OldImage } : {}) } }) as never;
    const changes = eventChanges([record('1'), record('2', marshall(stored))]);
    expect(changes.map((c) => [c.id, c.before?.uuid, c.after])).toEqual([['2', 'u1', undefined]]);
  });
});
