/**
 * The console's watch over a running backfill (console/poll.ts): it backs off, never overlaps two
 * looks, and ends when the thing settles, when its view leaves the page, or when a look fails.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pollDelay, watch } from '../../console/poll.ts';

describe('console watch', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits 1, 2, 4, 8 s, then every 15 s', () => {
    expect([0, 1, 2, 3, 4, 5, 20].map(pollDelay)).toEqual([1000, 2000, 4000, 8000, 15_000, 15_000, 15_000]);
  });

  it('looks with growing waits until the thing settles, then stops', async () => {
    const at: number[] = [];
    const start = Date.now();
    let looks = 0;
    watch({
      alive: () => true,
      failed: () => expect.unreachable(),
      check: async () => {
        at.push(Date.now() - start);
        looks += 1;
        return looks === 4;
      },
    });
    await vi.advanceTimersByTimeAsync(120_000);
    expect(at).toEqual([1000, 3000, 7000, 15_000]);
  });

  it('makes no request once its view has left the page', async () => {
    let attached = true;
    const check = vi.fn(async () => false);
    watch({ alive: () => attached, failed: () => expect.unreachable(), check });
    await vi.advanceTimersByTimeAsync(3000);
    expect(check).toHaveBeenCalledTimes(2);
    attached = false;
    await vi.advanceTimersByTimeAsync(600_000);
    expect(check).toHaveBeenCalledTimes(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never starts a look while the previous one is still waiting for its answer', async () => {
    let inFlight = 0;
    let most = 0;
    watch({
      alive: () => true,
      failed: () => expect.unreachable(),
      check: async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 30_000));
        inFlight -= 1;
        return false;
      },
    });
    await vi.advanceTimersByTimeAsync(300_000);
    expect(most).toBe(1);
  });

  it('skips looks while paused (a hidden tab) and ends on a failed look, saying so once', async () => {
    let hidden = true;
    const failed = vi.fn();
    const check = vi.fn(async () => {
      throw new Error('offline');
    });
    watch({ alive: () => true, paused: () => hidden, failed, check });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(check).not.toHaveBeenCalled();
    hidden = false;
    await vi.advanceTimersByTimeAsync(600_000);
    expect(check).toHaveBeenCalledTimes(1);
    expect(failed).toHaveBeenCalledTimes(1);
  });

  it('stops when told to', async () => {
    const check = vi.fn(async () => false);
    const stop = watch({ alive: () => true, failed: () => expect.unreachable(), check });
    stop();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(check).not.toHaveBeenCalled();
  });
});
