import { describe, expect, it } from 'vitest';
import { chunksOf } from '#shared/db/result-cache.ts';
import {
  cacheKeyOf,
  decide,
  executionModeOf,
  intervalOf,
  STALE_AFTER_MS,
  type Decision,
  type ExecutionMode,
} from '#shared/domain/query/refresh.ts';

const now = new Date('2026-11-23T12:00:00Z');
const ago = (ms: number) => ({ lastRefresh: new Date(now.getTime() - ms) });
const MIN = 60_000;

// Day interval (a TrendsQuery's default): fresh up to 6 h, lazily fresh up to 12 h (PostHog's thresholds).
const fresh = ago(5 * MIN);
const stale = ago(7 * 60 * MIN);
const lazyStale = ago(13 * 60 * MIN);

describe('refresh decision (PostHog ExecutionMode)', () => {
  const table: [ExecutionMode, Decision, Decision, Decision, Decision][] = [
    // mode,           fresh,           stale (6-12 h),              stale past lazy (> 12 h),     missing
    ['blocking', 'serve_cached', 'compute', 'compute', 'compute'],
    ['force_blocking', 'compute', 'compute', 'compute', 'compute'],
    ['force_cache', 'serve_cached', 'serve_cached', 'serve_cached', 'cache_miss'],
    ['async', 'serve_cached', 'serve_cached_and_run_async', 'serve_cached_and_run_async', 'cache_miss_and_run_async'],
    ['lazy_async', 'serve_cached', 'serve_cached', 'serve_cached_and_run_async', 'cache_miss_and_run_async'],
    ['force_async', 'run_async', 'run_async', 'run_async', 'run_async'],
  ];
  it.each(table)('%s: fresh -> %s, stale -> %s, past lazy -> %s, missing -> %s', (mode, a, b, c, d) => {
    expect(decide(mode, fresh, now, 'day')).toBe(a);
    expect(decide(mode, stale, now, 'day')).toBe(b);
    expect(decide(mode, lazyStale, now, 'day')).toBe(c);
    expect(decide(mode, undefined, now, 'day')).toBe(d);
  });

  it('judges staleness by the interval: a minute-interval answer is stale after 5 minutes, an hour one after an hour', () => {
    expect(decide('blocking', ago(4 * MIN), now, 'minute')).toBe('serve_cached');
    expect(decide('blocking', ago(6 * MIN), now, 'minute')).toBe('compute');
    expect(decide('blocking', ago(59 * MIN), now, 'hour')).toBe('serve_cached');
    expect(decide('blocking', ago(61 * MIN), now, 'hour')).toBe('compute');
    expect(STALE_AFTER_MS.default.month).toBe(2 * 24 * 60 * MIN);
  });

  it("takes a TrendsQuery's interval (day by default) and live for the lists", () => {
    expect(intervalOf({ kind: 'TrendsQuery' })).toBe('day');
    expect(intervalOf({ kind: 'TrendsQuery', interval: 'hour' })).toBe('hour');
    expect(intervalOf({ kind: 'TrendsQuery', interval: 'fortnight' })).toBe('day');
    expect(intervalOf({ kind: 'EventsQuery' })).toBe('live');
  });

  it('recomputes a list for blocking requests however fresh its cached copy, and lets lazy_async use it for a minute', () => {
    expect(decide('blocking', ago(0), now, 'live')).toBe('compute');
    expect(decide('async', ago(0), now, 'live')).toBe('serve_cached_and_run_async');
    expect(decide('lazy_async', ago(30_000), now, 'live')).toBe('serve_cached');
    expect(decide('lazy_async', ago(61_000), now, 'live')).toBe('serve_cached_and_run_async');
    expect(decide('force_cache', ago(0), now, 'live')).toBe('serve_cached');
  });
});

describe('refresh values', () => {
  it('reads refresh as PostHog: absent or false is blocking, true is force_blocking, async: true is async', () => {
    expect(executionModeOf({})).toBe('blocking');
    expect(executionModeOf({ refresh: false })).toBe('blocking');
    expect(executionModeOf({ refresh: true })).toBe('force_blocking');
    expect(executionModeOf({ refresh: 'force_cache' })).toBe('force_cache');
    expect(executionModeOf({ refresh: 'lazy_async' })).toBe('lazy_async');
    expect(executionModeOf({ async: true })).toBe('async');
    expect(executionModeOf({ async: true, refresh: 'force_blocking' })).toBe('async');
    expect(executionModeOf({ async: false, refresh: 'force_async' })).toBe('force_async');
  });
});

describe('cache key', () => {
  it('is the same for the same query whatever its key order, and differs by project, settings, generation and query', () => {
    const a = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'x' }], interval: 'day' };
    const b = { interval: 'day', series: [{ event: 'x', kind: 'EventsNode' }], kind: 'TrendsQuery' };
    const base = { projectId: 1, settings: { timezone: 'UTC' }, generation: 0, query: a };
    const key = (changes: Partial<typeof base> & { viewer?: string | null } = {}) =>
      cacheKeyOf({ ...base, ...changes });
    expect(key({ query: b })).toBe(key());
    expect(key()).toMatch(/^cache_[0-9a-f]{32}$/);
    expect(key({ projectId: 2 })).not.toBe(key());
    expect(key({ settings: { timezone: 'Europe/Paris' } })).not.toBe(key());
    expect(key({ generation: 1 })).not.toBe(key());
    expect(key({ query: { ...a, interval: 'hour' } })).not.toBe(key());
    expect(key({ viewer: 'user-1' })).not.toBe(key({ viewer: 'user-2' }));
    expect(key({ viewer: null })).toBe(key());
  });
});

describe('stored values', () => {
  it('splits bytes into chunks of at most the chunk size, in order', () => {
    const bytes = Uint8Array.from({ length: 25 }, (_, i) => i);
    const chunks = chunksOf(bytes, 10);
    expect(chunks.map((c) => c.length)).toEqual([10, 10, 5]);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(bytes));
    expect(chunksOf(new Uint8Array(0), 10)).toHaveLength(1);
  });
});
