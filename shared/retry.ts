import { Conflict } from './errors.ts';

/**
 * What an attempt returns when its failure is transient and it must run again: a lost race (a
 * conditional write or transaction that did not commit), unprocessed batch items, or an S3 5xx.
 * The one reading of "try again".
 */
export const TRANSIENT: unique symbol = Symbol('transient');
export type Transient = typeof TRANSIENT;

export interface RetryPolicy {
  /** At most this many attempts (the first included). */
  attempts?: number;
  /** No new attempt after this instant (epoch ms); API handlers pass the invocation's deadline. */
  deadline?: number;
  /** Full-jitter backoff: before retry n (0-based) wait a random time below min(capMs, baseMs * 2^n). 0 retries at once. */
  baseMs?: number;
  capMs?: number;
  /** The error thrown once out of attempts or time; by default a 409 naming `what`. */
  gaveUp?: () => Error;
}

/** Without attempts or a deadline, a retry gives up after 8 s (API handlers pass their own deadline). */
const DEFAULT_BUDGET_MS = 8_000;

/**
 * THE retry loop of the code base (an architecture test bans any other): runs `attempt` until it
 * returns something other than TRANSIENT. Transient failures (lost races, unprocessed batch items, S3
 * 5xx) are retried with full-jitter exponential backoff, so 50 writers of one item spread out instead
 * of colliding in lockstep, until the attempts or the deadline run out; then `gaveUp()` is thrown
 * (by default a 409 naming `what`), never a silent give-up. Errors thrown by `attempt` propagate at
 * once (throttling is a 503, not a transient failure to retry here).
 */
export async function retryTransient<T>(
  what: string,
  attempt: (n: number) => Promise<T | Transient>,
  policy: RetryPolicy = {},
): Promise<T> {
  const { attempts = Infinity, baseMs = 15, capMs = 300 } = policy;
  const deadline = policy.deadline ?? (attempts === Infinity ? Date.now() + DEFAULT_BUDGET_MS : Infinity);
  for (let n = 0; ; n += 1) {
    const result = await attempt(n);
    if (result !== TRANSIENT) return result;
    if (n + 1 >= attempts || Date.now() >= deadline)
      throw policy.gaveUp?.() ?? new Conflict(`${what} kept changing during the request; retry it.`);
    if (baseMs > 0) await sleep(Math.random() * Math.min(capMs, baseMs * 2 ** n));
  }
}

/** `false` (a conditional write that did not happen: a conflict) read as TRANSIENT, to be run again. */
export const conflictIfFalse = (written: boolean): true | Transient => (written ? true : TRANSIENT);

export const PAST_DEADLINE: unique symbol = Symbol('past deadline');

/**
 * `work`'s result, or PAST_DEADLINE once `deadline` (epoch ms) passes first. The work is not
 * cancelled (it may still complete): callers use this only for work that is safe to finish late or
 * to do again, such as idempotent writes whose remainder they hand to a worker.
 */
export async function settledBefore<T>(work: Promise<T>, deadline: number): Promise<T | typeof PAST_DEADLINE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof PAST_DEADLINE>((resolve) => {
    timer = setTimeout(() => resolve(PAST_DEADLINE), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
