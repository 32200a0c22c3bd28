import { describe, expect, it } from 'vitest';
import { call } from '#shared/db/client.ts';
import { ServiceUnavailable } from '#shared/errors.ts';

const failWith = (props: Record<string, unknown>) => () =>
  Promise.reject(Object.assign(new Error('sdk failure'), props));

describe('table call errors', () => {
  it.each([
    { name: 'TimeoutError' },
    { name: 'Error', code: 'ECONNREFUSED' },
    { name: 'ProvisionedThroughputExceededException' },
    { name: 'ThrottlingException' },
    { name: 'InternalServerError' },
  ])('turns %j into a 503 ServiceUnavailable', async (props) => {
    await expect(call(failWith(props))).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('passes other errors through unchanged', async () => {
    const error = await call(failWith({ name: 'ValidationException' })).catch((e) => e);
    expect(error).not.toBeInstanceOf(ServiceUnavailable);
    expect(error.name).toBe('ValidationException');
  });
});
