import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { cursorPaginated, pageNumberLinks, paginated } from '#shared/http/pagination.ts';
import { parseWith } from '#shared/http/validation.ts';
import { ValidationError } from '#shared/errors.ts';

describe('paginated', () => {
  const url = new URL('https://api.example/api/organizations?limit=2&offset=4&search=x');

  it('links next while more results exist and keeps other parameters', () => {
    const page = paginated(url, { limit: 2, offset: 4 }, 9, ['a', 'b']);
    expect(page.next).toBe('https://api.example/api/organizations?limit=2&offset=6&search=x');
    expect(page.previous).toBe('https://api.example/api/organizations?limit=2&offset=2&search=x');
    expect(page.count).toBe(9);
  });

  it('drops offset from previous when it would be 0 and ends next at count', () => {
    const page = paginated(new URL('https://h/p?offset=1&limit=2'), { limit: 2, offset: 1 }, 3, ['x', 'y']);
    expect(page.previous).toBe('https://h/p?limit=2');
    expect(page.next).toBeNull();
    expect(paginated(new URL('https://h/p'), { limit: 100, offset: 0 }, 0, []).previous).toBeNull();
  });
});

describe('pagination links and a key in the query string', () => {
  const url = new URL('https://h/p?personal_api_key=phx_secret&limit=2&offset=2&search=x');

  it('never copies personal_api_key into next or previous', () => {
    const links = [
      ...Object.values(paginated(url, { limit: 2, offset: 2 }, 9, [])).filter((v) => typeof v === 'string'),
      ...Object.values(cursorPaginated(url, { limit: 2, offset: 2 }, 9, [], { hasMore: true, cursor: 'c' })).filter(
        (v) => typeof v === 'string',
      ),
      ...Object.values(pageNumberLinks(url, 2, true, true)),
    ] as string[];
    expect(links).toHaveLength(6);
    for (const link of links) {
      expect(link).not.toContain('phx_secret');
      expect(new URL(link).searchParams.get('search')).toBe('x');
    }
  });
});

describe('validation errors', () => {
  const schema = v.object({
    name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(3)),
    nested: v.optional(v.object({ inner: v.array(v.object({ flag: v.boolean() })) })),
  });

  function errorOf(input: unknown): ValidationError {
    try {
      parseWith(schema, input, null);
    } catch (e) {
      return e as ValidationError;
    }
    throw new Error('expected a validation error');
  }

  it.each([
    [{}, 'name', 'required', 'This field is required.'],
    [{ name: null }, 'name', 'null', 'This field may not be null.'],
    [{ name: ' ' }, 'name', 'blank', 'This field may not be blank.'],
    [{ name: 'abcd' }, 'name', 'max_length', 'Ensure this field has no more than 3 characters.'],
    [{ name: 1 }, 'name', 'invalid_input', 'Not a valid string.'],
    [
      { name: 'a', nested: { inner: [{ flag: true }, { flag: 'x' }] } },
      'nested__inner__1__flag',
      'invalid_input',
      'Must be a valid boolean.',
    ],
  ])('reports %j as attr %s code %s', (input, attr, code, detail) => {
    const e = errorOf(input);
    expect(e).toBeInstanceOf(ValidationError);
    expect({ attr: e.attr, code: e.code, detail: e.detail }).toEqual({ attr, code, detail });
  });
});
