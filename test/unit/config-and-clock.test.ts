import { afterEach, describe, expect, it, vi } from 'vitest';
import { readConfig } from '#shared/config.ts';

describe('config', () => {
  it('honours ANALYTICS_FIXED_NOW in the local runtime', () => {
    const c = readConfig({
      ANALYTICS_RUNTIME: 'local',
      ANALYTICS_FIXED_NOW: '2020-01-05T10:00:00+09:00',
      TABLE_NAME: 't',
    });
    expect(c.fixedNow?.toISOString()).toBe('2020-01-05T01:00:00.000Z');
    expect(c.tableName).toBe('t');
  });

  it('never honours it in a deployed stage, even if set', () => {
    expect(readConfig({ ANALYTICS_FIXED_NOW: '2020-01-05T10:00:00Z' }).fixedNow).toBeUndefined();
    expect(
      readConfig({
        ANALYTICS_RUNTIME: 'local',
        ANALYTICS_FIXED_NOW: '2020-01-05T10:00:00Z',
        AWS_LAMBDA_FUNCTION_NAME: 'fn',
      }).fixedNow,
    ).toBeUndefined();
  });

  it('scans at most 10,000 persons per filtered list request unless ANALYTICS_PERSON_SCAN_LIMIT says otherwise', () => {
    expect(readConfig({}).personScanLimit).toBe(10_000);
    expect(readConfig({ ANALYTICS_PERSON_SCAN_LIMIT: '40' }).personScanLimit).toBe(40);
    for (const bad of ['0', '-1', '1.5', 'many'])
      expect(() => readConfig({ ANALYTICS_PERSON_SCAN_LIMIT: bad })).toThrow(/positive integer/);
  });

  it('an EventsQuery examines at most 20,000 events unless ANALYTICS_EVENTS_QUERY_SCAN_LIMIT says otherwise', () => {
    expect(readConfig({}).eventsQueryScanLimit).toBe(20_000);
    expect(readConfig({ ANALYTICS_EVENTS_QUERY_SCAN_LIMIT: '40' }).eventsQueryScanLimit).toBe(40);
    expect(() => readConfig({ ANALYTICS_EVENTS_QUERY_SCAN_LIMIT: '0' })).toThrow(/positive integer/);
  });

  it('an aggregated EventsQuery reads at most 1,000,000 events and keeps 100,000 groups unless configured otherwise', () => {
    expect(readConfig({}).eventsQueryAggregateLimit).toBe(1_000_000);
    expect(readConfig({}).eventsQueryGroupLimit).toBe(100_000);
    expect(readConfig({ ANALYTICS_EVENTS_QUERY_AGGREGATE_LIMIT: '60' }).eventsQueryAggregateLimit).toBe(60);
    expect(readConfig({ ANALYTICS_EVENTS_QUERY_GROUP_LIMIT: '30' }).eventsQueryGroupLimit).toBe(30);
    expect(() => readConfig({ ANALYTICS_EVENTS_QUERY_GROUP_LIMIT: '0' })).toThrow(/positive integer/);
  });

  it('gives a bulk delete 4 s inline unless ANALYTICS_BULK_DELETE_BUDGET_MS says otherwise (0: queue everything)', () => {
    expect(readConfig({}).bulkDeleteBudgetMs).toBe(4_000);
    expect(readConfig({ ANALYTICS_BULK_DELETE_BUDGET_MS: '0' }).bulkDeleteBudgetMs).toBe(0);
    for (const bad of ['-1', '1.5', 'soon'])
      expect(() => readConfig({ ANALYTICS_BULK_DELETE_BUDGET_MS: bad })).toThrow(/integer >= 0/);
  });

  it('rejects an unparsable fixed time instead of guessing', () => {
    expect(() => readConfig({ ANALYTICS_RUNTIME: 'local', ANALYTICS_FIXED_NOW: 'yesterday' })).toThrow(/ISO 8601/);
  });
});

describe('clock', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('returns the frozen time when ANALYTICS_FIXED_NOW is set locally', async () => {
    vi.stubEnv('ANALYTICS_FIXED_NOW', '2021-03-28T00:30:00Z');
    vi.resetModules();
    const { now, nowIso } = await import('#shared/clock.ts');
    expect(nowIso()).toBe('2021-03-28T00:30:00.000Z');
    now().setFullYear(1999);
    expect(nowIso()).toBe('2021-03-28T00:30:00.000Z');
  });

  it('follows the real time otherwise', async () => {
    vi.stubEnv('ANALYTICS_FIXED_NOW', '');
    vi.resetModules();
    const { now } = await import('#shared/clock.ts');
    expect(Math.abs(now().getTime() - Date.now())).toBeLessThan(1000);
  });
});
