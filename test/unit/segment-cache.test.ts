import { describe, expect, it } from 'vitest';
import { SegmentCache, type CachedBuild } from '#shared/db/segment-cache.ts';

function build(
  id: string,
  columns: Record<string, number>,
  options: { event?: string; timeBytes?: number; dids?: boolean } = {},
): CachedBuild {
  return {
    event: options.event ?? '$pageview',
    build: id,
    through: '2024-04-18T00:00:00.000Z',
    tally: { count: 3, xsum: 42 },
    chunks: [
      {
        n: 3,
        base: 0,
        time: new Uint8Array(options.timeBytes ?? 100),
        dids: options.dids ? new Uint8Array(50) : (undefined as unknown as Uint8Array),
        columns: new Map(Object.entries(columns).map(([k, bytes]) => [k, new Uint8Array(bytes)])),
      },
    ],
    attributes: new Set(['t', ...(options.dids ? ['d'] : []), ...Object.keys(columns).map((k) => `p:${k}`)]),
  };
}

describe('SegmentCache', () => {
  it('answers a build only for the project, day and event it was read for, and only with the attributes asked for', () => {
    const cache = new SegmentCache(1 << 20);
    cache.put(1, '2024-04-18', build('b1', { $os: 10 }));
    expect(cache.get(1, '2024-04-18', '$pageview', ['t', 'p:$os'])?.build).toBe('b1');
    expect(cache.get(2, '2024-04-18', '$pageview', ['t'])).toBeUndefined();
    expect(cache.get(1, '2024-04-19', '$pageview', ['t'])).toBeUndefined();
    expect(cache.get(1, '2024-04-18', '$autocapture', ['t'])).toBeUndefined();
    expect(cache.get(1, '2024-04-18', '$pageview', ['t', 'p:$browser'])).toBeUndefined();
    expect(cache.get(1, '2024-04-18', '$pageview', ['t', 'd'])).toBeUndefined();
  });

  it('merges the columns of a second read of the same build, and replaces a superseded build whole', () => {
    const cache = new SegmentCache(1 << 20);
    cache.put(1, '2024-04-18', build('b1', { $os: 10 }));
    cache.put(1, '2024-04-18', build('b1', { $browser: 20 }, { dids: true }));
    const merged = cache.get(1, '2024-04-18', '$pageview', ['t', 'd', 'p:$os', 'p:$browser']);
    expect([...merged!.chunks[0]!.columns.keys()].sort()).toEqual(['$browser', '$os']);
    expect(cache.bytes).toBe(256 + 100 + 50 + 10 + 20);

    cache.put(1, '2024-04-18', build('b2', { $browser: 20 }));
    expect(cache.get(1, '2024-04-18', '$pageview', ['t', 'p:$os'])).toBeUndefined();
    expect(cache.get(1, '2024-04-18', '$pageview', ['t', 'p:$browser'])?.build).toBe('b2');
    expect(cache.bytes).toBe(256 + 100 + 20);
  });

  it('evicts the least recently used builds past its capacity and never keeps one over a quarter of it', () => {
    const cache = new SegmentCache(4 * 1000);
    for (const day of ['2024-04-01', '2024-04-02', '2024-04-03', '2024-04-04'])
      cache.put(1, day, build(`b-${day}`, {}, { timeBytes: 744 }));
    expect(cache.bytes).toBe(4000);
    cache.get(1, '2024-04-01', '$pageview', ['t']);
    cache.put(1, '2024-04-05', build('b5', {}, { timeBytes: 744 }));
    expect(cache.bytes).toBe(4000);
    expect(cache.get(1, '2024-04-02', '$pageview', ['t'])).toBeUndefined();
    expect(cache.get(1, '2024-04-01', '$pageview', ['t'])?.build).toBe('b-2024-04-01');

    cache.put(1, '2024-04-06', build('huge', {}, { timeBytes: 1000 }));
    expect(cache.get(1, '2024-04-06', '$pageview', ['t'])).toBeUndefined();
    expect(cache.bytes).toBe(4000);
  });

  it('keeps nothing with a capacity of 0', () => {
    const cache = new SegmentCache(0);
    cache.put(1, '2024-04-18', build('b1', {}));
    expect(cache.get(1, '2024-04-18', '$pageview', ['t'])).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });

  it('copies a blob that is a view of a larger buffer, so a response buffer is not kept alive', () => {
    const response = new Uint8Array(10_000);
    const b = build('b1', {});
    b.chunks[0]!.time = response.subarray(100, 200);
    const cache = new SegmentCache(1 << 20);
    cache.put(1, '2024-04-18', b);
    const time = cache.get(1, '2024-04-18', '$pageview', ['t'])!.chunks[0]!.time;
    expect(time.byteLength).toBe(100);
    expect(time.buffer.byteLength).toBe(100);
  });
});
