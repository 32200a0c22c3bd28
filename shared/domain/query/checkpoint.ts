import { ServiceUnavailable } from '../../errors.ts';

/**
 * What a runner calls in every loop over user-sized data (days, pages, batches, rows): it throws once
 * the run is past its deadline or nobody wants its answer any more. A synchronous stretch between
 * two awaits sees a cancellation only at its next await; its deadline it sees at once.
 */
export type Checkpoint = () => void;

/** The run was cancelled, replaced by a later run of its id, or handed to the worker: its answer has no reader. */
export class RunAbandoned extends Error {}

/** The run reached its deadline (a 503 for the API: the blocking path hands the query to the worker). */
export class OutOfTime extends ServiceUnavailable {
  constructor() {
    super('The query ran out of time; retry it, or run it with refresh "async".');
  }
}

export function checkpointOf(deadline: number, signal?: AbortSignal): Checkpoint {
  return () => {
    if (signal?.aborted) throw new RunAbandoned(String(signal.reason ?? 'abandoned'));
    if (Date.now() >= deadline) throw new OutOfTime();
  };
}

/** How often a background run reads its status to learn it was cancelled: a cancel stops it within about this. */
export const CANCEL_POLL_MS = 1_000;

/**
 * Aborts the returned signal once `abandoned()` says so, asking every `everyMs` (never two asks at
 * once); `stop()` ends the asking. A failed ask is not an answer: it asks again next time.
 */
export function watchAbandonment(
  abandoned: () => Promise<boolean>,
  everyMs = CANCEL_POLL_MS,
): { signal: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  let asking = false;
  const timer = setInterval(() => {
    if (asking || controller.signal.aborted) return;
    asking = true;
    abandoned()
      .then((yes) => {
        if (yes) controller.abort('cancelled');
      })
      .catch(() => {})
      .finally(() => {
        asking = false;
      });
  }, everyMs);
  timer.unref?.();
  return { signal: controller.signal, stop: () => clearInterval(timer) };
}

/**
 * Runs `compute` until `safePoint` (epoch ms): its value, or `late` when it has not finished by then
 * or failed after it (the caller hands the query to the worker). Once late, its checkpoint aborts, so
 * the computation stops at its next check instead of running on unread in this container.
 */
export async function untilSafePoint<T>(
  compute: (check: Checkpoint) => Promise<T>,
  safePoint: number,
): Promise<{ value: T } | 'late'> {
  const handedOver = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), Math.max(0, safePoint - Date.now()));
  });
  const running = compute(checkpointOf(safePoint, handedOver.signal));
  running.catch(() => {}); // an abandoned run's failure is nobody's answer
  const outcome = await Promise.race([running.then((value) => ({ value })), late])
    .catch((error: unknown) => {
      if (Date.now() >= safePoint) return 'late' as const;
      throw error;
    })
    .finally(() => clearTimeout(timer));
  if (outcome === 'late') handedOver.abort('handed over');
  return outcome;
}
