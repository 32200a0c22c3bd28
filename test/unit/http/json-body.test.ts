import { describe, expect, it } from 'vitest';
import { ParseError, PayloadTooLarge, UnsupportedMediaType, ValidationError } from '#shared/errors.ts';
import { jsonBody, jsonListBody, MAX_BODY_BYTES } from '#shared/http/middleware/json-body.ts';
import { fakeRequest, thrownBy } from './fake-request.ts';

const json = { 'content-type': 'application/json' };
const run = async (body: string | undefined, headers: Record<string, string> = json, isBase64Encoded = false) => {
  const request = fakeRequest({ body, headers, isBase64Encoded });
  const error = await thrownBy(jsonBody, request);
  return {
    body: request.internal.body,
    error: error as { status?: number; code?: string; detail?: string; attr?: string | null } | undefined,
  };
};

describe('jsonBody middleware', () => {
  it('puts the parsed object on request.internal.body, base64 bodies decoded, +json media types accepted', async () => {
    expect(await run('{"name":"Acme"}')).toEqual({ body: { name: 'Acme' }, error: undefined });
    expect((await run(Buffer.from('{"a":1}').toString('base64'), json, true)).body).toEqual({ a: 1 });
    expect((await run('{"a":1}', { 'content-type': 'application/merge-patch+json; charset=utf-8' })).body).toEqual({
      a: 1,
    });
  });

  it('reads an empty or blank body as {} whatever its content type', async () => {
    expect((await run(undefined, {})).body).toEqual({});
    expect((await run('  \n', { 'content-type': 'text/plain' })).body).toEqual({});
  });

  it('refuses a body over 1 MiB with 413, counting bytes rather than characters', async () => {
    const { error } = await run(`{"a":"${'é'.repeat(MAX_BODY_BYTES / 2)}"}`);
    expect(error).toBeInstanceOf(PayloadTooLarge);
    expect(error).toMatchObject({ status: 413, detail: `Request body exceeds ${MAX_BODY_BYTES} bytes.` });
    expect((await run(`{"a":"${'x'.repeat(MAX_BODY_BYTES - 10)}"}`)).error).toBeUndefined();
  });

  it('refuses a non-JSON media type with 415 naming it', async () => {
    const { error } = await run('a=1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(error).toBeInstanceOf(UnsupportedMediaType);
    expect(error).toMatchObject({
      status: 415,
      code: 'unsupported_media_type',
      detail: 'Unsupported media type "application/x-www-form-urlencoded" in request.',
    });
    expect(((await run('{}', {})).error as UnsupportedMediaType).status).toBe(415);
  });

  it("answers malformed JSON with 400 parse_error in PostHog's wording", async () => {
    const { error } = await run('{"a":');
    expect(error).toBeInstanceOf(ParseError);
    expect(error).toMatchObject({ status: 400, code: 'parse_error' });
    expect(error?.detail).toMatch(/^JSON parse error - /);
  });

  it('refuses JSON nested deeper than 128 levels, and takes 128', async () => {
    const nested = (depth: number) => `${'['.repeat(depth - 1)}{}${']'.repeat(depth - 1)}`;
    expect((await run(`{"a":${nested(127)}}`)).error).toBeUndefined();
    const { error } = await run(`{"a":${nested(128)}}`);
    expect(error).toMatchObject({
      status: 400,
      code: 'parse_error',
      detail: 'JSON parse error - nested deeper than 128 levels',
    });
  });

  it('accepts only a JSON object: a list, null, a string or a number is a 400 saying what it got', async () => {
    for (const [raw, got] of [
      ['[1]', 'list'],
      ['null', 'null'],
      ['"x"', 'string'],
      ['3', 'number'],
    ]) {
      const { error } = await run(raw);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({
        status: 400,
        detail: `Invalid data. Expected a dictionary, but got ${got}.`,
        attr: null,
      });
    }
  });

  it('takes a JSON list only on routes that declare one (listBody: update_metadata)', async () => {
    const list = fakeRequest({ body: '[{"group_type_index":0}]', headers: json, isBase64Encoded: false });
    expect(await thrownBy(jsonListBody, list)).toBeUndefined();
    expect(list.internal.body).toEqual([{ group_type_index: 0 }]);
    expect((await run('[1]')).error).toBeInstanceOf(ValidationError);
    const scalar = fakeRequest({ body: '3', headers: json, isBase64Encoded: false });
    expect(await thrownBy(jsonListBody, scalar)).toBeInstanceOf(ValidationError);
  });
});
