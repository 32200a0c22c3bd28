import { describe, expect, it } from 'vitest';
import { FunctionTimeout, invokeWithTimeout } from '../../infra/local/lambda-context.ts';
import { startApiServer, type LambdaHandler } from '../../infra/local/http-server.ts';

const ok: LambdaHandler = async () => ({ statusCode: 200, body: '{"ok":true}' });
const never: LambdaHandler = () => new Promise(() => undefined);
const blocksFor =
  (ms: number): LambdaHandler =>
  async () => {
    const until = Date.now() + ms;
    while (Date.now() < until); // a handler stuck in synchronous work
    return { statusCode: 200, body: '{"late":true}' };
  };

async function answerOf(handler: LambdaHandler, timeoutMs: number) {
  const server = await startApiServer({ timeoutMs, loadHandler: async () => handler });
  try {
    const started = Date.now();
    const res = await fetch(`${server.baseUrl}/api/organizations`);
    return { status: res.status, body: (await res.json()) as unknown, ms: Date.now() - started };
  } finally {
    await server.close();
  }
}

describe('the local runtime enforces the functions timeout as Lambda and API Gateway do', () => {
  it('answers a handler that never returns with API Gateway 500 at the timeout', async () => {
    const reply = await answerOf(never, 300);
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual({ message: 'Internal Server Error' });
    expect(reply.ms).toBeLessThan(5_000);
  });

  it('reports a handler that blocked past its timeout as timed out, not with its late answer', async () => {
    const reply = await answerOf(blocksFor(400), 100);
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual({ message: 'Internal Server Error' });
  });

  it('passes through an answer given within the timeout', async () => {
    expect(await answerOf(ok, 5_000)).toMatchObject({ status: 200, body: { ok: true } });
  });

  it('stops a worker invocation at its timeout with Lambda\'s "Task timed out"', async () => {
    await expect(invokeWithTimeout('slow_worker', 200, () => new Promise(() => undefined))).rejects.toThrow(
      FunctionTimeout,
    );
    await expect(invokeWithTimeout('slow_worker', 200, () => new Promise(() => undefined))).rejects.toThrow(
      'Task timed out after 0.20 seconds',
    );
    await expect(
      invokeWithTimeout('quick_worker', 1_000, async (context) => context.getRemainingTimeInMillis() > 0),
    ).resolves.toBe(true);
  });
});
