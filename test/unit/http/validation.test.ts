import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { validation } from '#shared/http/middleware/validation.ts';
import { queryInteger } from '#shared/schemas/query-string.ts';
import { fakeRequest, thrownBy } from './fake-request.ts';

const schemas = {
  params: v.object({ id: v.pipe(v.string(), v.uuid()) }),
  query: v.object({ limit: v.optional(queryInteger(1, 1000)) }),
  body: v.object({ name: v.pipe(v.string(), v.minLength(1)) }),
};
const ID = '0190a7a0-0000-7000-8000-000000000001';

describe('validation middleware', () => {
  it('puts the validated params, query and body on request.internal.input, the last repeated query key winning', async () => {
    const request = fakeRequest(
      { pathParameters: { id: ID }, rawQueryString: 'limit=5&limit=7' },
      { body: { name: 'Acme', extra: 1 } },
    );
    await validation({}, schemas).before?.(request);
    expect(request.internal.input).toEqual({
      format: 'json',
      params: { id: ID },
      query: { limit: 7 },
      body: { name: 'Acme' },
    });
  });

  it('validates an absent body as {} and leaves out what the route has no schema for', async () => {
    const request = fakeRequest({ pathParameters: { id: ID } });
    expect(await thrownBy(validation({}, { body: schemas.body }), request)).toMatchObject({
      detail: 'This field is required.',
      attr: 'name',
    });
    await validation({}, {}).before?.(request);
    expect(request.internal.input).toEqual({ format: 'json', params: undefined, query: undefined, body: undefined });
  });

  it('reports the first failure in DRF wording, path parameters before query before body', async () => {
    const bad = fakeRequest({ pathParameters: { id: 'nope' }, rawQueryString: 'limit=0' }, { body: {} });
    expect(await thrownBy(validation({}, schemas), bad)).toMatchObject({
      status: 400,
      detail: 'Must be a valid UUID.',
      attr: 'id',
    });
    const badQuery = fakeRequest({ pathParameters: { id: ID }, rawQueryString: 'limit=0' }, { body: {} });
    expect(await thrownBy(validation({}, schemas), badQuery)).toMatchObject({
      detail: 'Ensure this value is greater than or equal to 1.',
      attr: 'limit',
    });
  });

  it('takes format=csv only on routes that answer CSV, and checks it before anything else', async () => {
    const csv = fakeRequest({ rawQueryString: 'format=csv' });
    await validation({ csv: true }, {}).before?.(csv);
    expect(csv.internal.input?.format).toBe('csv');
    const other = fakeRequest({ rawQueryString: 'format=csv' });
    await validation({}, {}).before?.(other);
    expect(other.internal.input?.format).toBe('json');
    const error = await thrownBy(
      validation({ csv: true }, schemas),
      fakeRequest({ rawQueryString: 'format=xml', pathParameters: { id: 'nope' } }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'invalid_choice', detail: '"xml" is not a valid choice.', attr: 'format' });
  });
});
