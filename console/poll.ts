/**
 * Watching something the server finishes later (a backfill) without hammering the API: each wait
 * doubles, up to a cap, and the watch ends by itself once the page that showed it is gone.
 */

/** The wait before check n (0-based): 1 s, 2 s, 4 s, 8 s, then every 15 s for as long as it runs. */
export const pollDelay = (n: number): number => Math.min(15_000, 1000 * 2 ** n);

export interface Watch {
  /** One look at the thing: true once it has settled (no further look is needed). */
  check(): Promise<boolean>;
  /** False once the view is gone (its element left the page): the watch ends without another request. */
  alive(): boolean;
  /** A failed look ends the watch; the caller says so on the page. */
  failed(error: unknown): void;
  /** Skips a look while true (a hidden tab) without ending the watch. */
  paused?(): boolean;
  delay?(n: number): number;
}

/** Starts watching; returns a stop function. Checks run one at a time, never overlapping. */
export function watch(w: Watch): () => void {
  const delay = w.delay ?? pollDelay;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const next = (n: number) => {
    timer = setTimeout(() => void tick(n), delay(n));
  };
  const tick = async (n: number) => {
    if (stopped || !w.alive()) return;
    if (w.paused?.()) return next(n);
    try {
      if (await w.check()) return;
    } catch (error) {
      if (w.alive()) w.failed(error);
      return;
    }
    next(n + 1);
  };
  next(0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
