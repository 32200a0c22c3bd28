import { AsyncLocalStorage } from 'node:async_hooks';
import type { InvocationKind } from './config.ts';

/**
 * The kind of the invocation being run, per async call chain rather than per process: the local
 * runtime runs API requests and workers in one Node process, and each must get its own limits.
 */
const current = new AsyncLocalStorage<InvocationKind>();

/** Runs `fn`, and everything it awaits or starts, as an invocation of `kind` (shared/workers/handler.ts). */
export function runAs<T>(kind: InvocationKind, fn: () => T): T {
  return current.run(kind, fn);
}

/** The running invocation's kind; `api` outside any (API handlers, CLIs): the short limits are the safe default. */
export function invocationKind(): InvocationKind {
  return current.getStore() ?? 'api';
}
