import { Conflict } from '../errors.ts';

/**
 * Optimistic concurrency for read-modify-write edits: `attempt` reads, computes and writes
 * conditionally, returning `undefined` when another writer got there first. Lost races are retried
 * with full-jitter exponential backoff (so 50 writers of one item spread out instead of colliding
 * in lockstep) until `deadline` (epoch ms; API handlers pass the invocation's, a little before the
 * function's own timeout); after that the request answers 409 rather than a 500 or a timeout.
 */
export async function retryOnConflict<T>(what: string, attempt: () => Promise<T | undefined>, deadline = Date.now() + 8_000): Promise<T> {
  for (let n = 0; ; n += 1) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (Date.now() >= deadline) throw new Conflict(`${what} kept changing during the request; retry it.`);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(300, 15 * 2 ** n)));
  }
}
