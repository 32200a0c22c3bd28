import { describe, expect, it, vi } from 'vitest';
import { queueSources } from '../../../infra/local/workers.ts';
import { compareKeys, compareTerms, type ValueKey, valueKey } from '#shared/domain/query/actors.ts';
import {
  checkpointOf,
  OutOfTime,
  RunAbandoned,
  untilSafePoint,
  watchAbandonment,
} from '#shared/domain/query/checkpoint.ts';
import { sortByKey } from '#shared/domain/query/sort.ts';

describe('sortByKey (ActorsQuery value orders)', () => {
  it('computes each row key once, however many comparisons the sort makes', () => {
    const rows = Array.from({ length: 4_000 }, (_, i) => ({ id: i, value: { nested: `v${(i * 7919) % 4_000}` } }));
    const keyOf = vi.fn((row: (typeof rows)[number]) => valueKey(row.value, String(row.id)));
    const sorted = sortByKey(
      rows,
      keyOf,
      (a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0),
      () => {},
    );
    expect(keyOf).toHaveBeenCalledTimes(rows.length);
    expect(sorted.map((r) => r.key.text)).toEqual([...sorted.map((r) => r.key.text)].sort());
  });

  it('calls the checkpoint while decorating and sorting, and stops when it throws', () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => i);
    const check = vi.fn();
    sortByKey(
      rows,
      (i) => -i,
      (a, b) => a - b,
      check,
    );
    // Decorating alone checks ceil(10,000 / 1,024) = 10 times; sorting adds more.
    expect(check.mock.calls.length).toBeGreaterThan(10);
    let calls = 0;
    const stop = () => {
      calls += 1;
      if (calls > 3) throw new OutOfTime();
    };
    expect(() =>
      sortByKey(
        rows,
        (i) => -i,
        (a, b) => a - b,
        stop,
      ),
    ).toThrow(OutOfTime);
  });

  it('orders like ClickHouse: numbers, then strings, then other values as JSON; null and missing last', () => {
    const values = [null, { a: 1 }, 'b', 2, undefined, 'a', 1, [1]];
    const compare = (a: ValueKey, b: ValueKey) => compareKeys({ ascending: true }, a, b);
    const sorted = sortByKey(
      values,
      (v) => valueKey(v, ''),
      compare,
      () => {},
    ).map((r) => r.item);
    expect(sorted.slice(0, 6)).toEqual([1, 2, 'a', 'b', [1], { a: 1 }]);
    expect(sorted.slice(6)).toEqual([null, undefined]);
  });

  it('orders by several terms, each its own direction with nulls last, ties by the sort key in the first direction', () => {
    const rows = [
      { values: ['b', 1], sortKey: '1' },
      { values: [null, 9], sortKey: '2' },
      { values: ['a', 2], sortKey: '3' },
      { values: ['b', null], sortKey: '4' },
      { values: ['b', 3], sortKey: '5' },
      { values: ['a', 2], sortKey: '6' },
    ];
    const terms = [{ ascending: true }, { ascending: false }];
    const keys = (r: (typeof rows)[number]) => r.values.map((v) => valueKey(v, r.sortKey));
    const sorted = [...rows].sort((a, b) => compareTerms(terms, keys(a), keys(b))).map((r) => r.sortKey);
    expect(sorted).toEqual(['3', '6', '5', '1', '4', '2']);
    const down = [{ ascending: false }, { ascending: false }];
    expect([...rows].sort((a, b) => compareTerms(down, keys(a), keys(b))).map((r) => r.sortKey)).toEqual([
      '5',
      '1',
      '4',
      '6',
      '3',
      '2',
    ]);
  });
});

describe('run checkpoints', () => {
  it('throws OutOfTime past the deadline and RunAbandoned once the signal aborts', () => {
    expect(() => checkpointOf(Date.now() - 1)()).toThrow(OutOfTime);
    const controller = new AbortController();
    const check = checkpointOf(Date.now() + 60_000, controller.signal);
    expect(() => check()).not.toThrow();
    controller.abort('cancelled');
    expect(() => check()).toThrow(RunAbandoned);
  });

  it('aborts when the poll says the run was abandoned, asking at the given interval and never twice at once', async () => {
    vi.useFakeTimers();
    try {
      let answers = 0;
      let resolveAsk: (yes: boolean) => void = () => {};
      const abandoned = vi.fn(
        () =>
          new Promise<boolean>((resolve) => {
            answers += 1;
            resolveAsk = resolve;
          }),
      );
      const watch = watchAbandonment(abandoned, 1_000);
      await vi.advanceTimersByTimeAsync(999);
      expect(abandoned).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      expect(abandoned).toHaveBeenCalledTimes(1);
      // Still asking: the next tick does not ask again.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(answers).toBe(1);
      resolveAsk(false);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(answers).toBe(2);
      expect(watch.signal.aborted).toBe(false);
      resolveAsk(true);
      await vi.advanceTimersByTimeAsync(0);
      expect(watch.signal.aborted).toBe(true);
      watch.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a blocking run handed to the worker', () => {
  const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('stops computing in this container once handed over (its next checkpoint throws)', async () => {
    let steps = 0;
    let stoppedBy: unknown;
    // A computation that would run for ever: it only yields and checks.
    const compute = async (check: () => void) => {
      try {
        for (;;) {
          check();
          steps += 1;
          await tick();
        }
      } catch (error) {
        stoppedBy = error;
        throw error;
      }
    };
    const outcome = await untilSafePoint(compute, Date.now() + 50);
    expect(outcome).toBe('late');
    await tick();
    await tick();
    const atHandOver = steps;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(steps).toBe(atHandOver);
    expect(stoppedBy).toBeInstanceOf(Error);
  });

  it('answers the value of a computation finished before the safe point', async () => {
    expect(await untilSafePoint(async () => 42, Date.now() + 1_000)).toEqual({ value: 42 });
  });
});

describe('local queue pollers', () => {
  it('hand the query worker one message per invocation, with as many pollers as its maximum concurrency', () => {
    expect(queueSources().filter((s) => s.worker === 'run_queries')).toEqual([
      { worker: 'run_queries', queue: 'query_runs', batchSize: 1, pollers: 10 },
    ]);
    // Other queue workers keep Lambda's default batches and one poller.
    expect(queueSources().find((s) => s.worker === 'delete_queued_persons')).toMatchObject({
      batchSize: 10,
      pollers: 1,
    });
  });
});
