import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** The Lambda context the runtime gives a handler, as far as our code and Powertools read it. */
export function lambdaContext(functionName: string, timeoutMs = 30_000): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** What Lambda reports for an invocation that ran past its timeout (the function is stopped). */
export class FunctionTimeout extends Error {
  constructor(
    readonly functionName: string,
    readonly timeoutMs: number,
  ) {
    super(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
    this.name = 'FunctionTimeout';
  }
}

/**
 * Runs one invocation with Lambda's timeout: the caller stops waiting at the deadline, as Lambda
 * stops the function. A handler that blocks the event loop cannot be interrupted in-process, so an
 * invocation that returns after its deadline is still reported as timed out: the caller sees what
 * the cloud would have answered, only later.
 */
export async function invokeWithTimeout<T>(
  functionName: string,
  timeoutMs: number,
  invoke: (context: Context) => Promise<T>,
): Promise<T> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FunctionTimeout(functionName, timeoutMs)), timeoutMs);
  });
  try {
    const result = await Promise.race([invoke(lambdaContext(functionName, timeoutMs)), deadline]);
    if (Date.now() - started > timeoutMs) throw new FunctionTimeout(functionName, timeoutMs);
    return result;
  } finally {
    clearTimeout(timer);
  }
}
