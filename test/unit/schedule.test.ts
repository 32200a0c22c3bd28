import { describe, expect, it } from 'vitest';
import { nextRun } from '../../infra/local/schedule.ts';

describe('local scheduler expressions', () => {
  it.each([
    ['cron(0 5 ? * SUN *)', '2026-11-21T10:00:00Z', '2026-11-22T05:00:00.000Z'],
    ['cron(0 5 ? * SUN *)', '2026-11-22T04:59:30Z', '2026-11-22T05:00:00.000Z'],
    ['cron(0 5 ? * SUN *)', '2026-11-22T05:00:00Z', '2026-11-29T05:00:00.000Z'],
    ['cron(0 5 ? * 1 *)', '2026-11-21T10:00:00Z', '2026-11-22T05:00:00.000Z'],
    ['cron(15,45 */6 * * ? *)', '2026-11-21T10:00:00Z', '2026-11-21T12:15:00.000Z'],
    ['cron(0 9 1 JAN ? *)', '2026-11-21T10:00:00Z', '2027-01-01T09:00:00.000Z'],
    ['rate(5 minutes)', '2026-11-21T10:03:10Z', '2026-11-21T10:05:00.000Z'],
    ['rate(1 hour)', '2026-11-21T10:03:10Z', '2026-11-21T11:00:00.000Z'],
  ])('%s after %s fires at %s', (expression, after, expected) => {
    expect(nextRun(expression, new Date(after)).toISOString()).toBe(expected);
  });

  it('refuses expressions it cannot run', () => {
    expect(() => nextRun('cron(0 5 * *)', new Date())).toThrow(/6 fields/);
    expect(() => nextRun('every sunday', new Date())).toThrow(/unsupported/);
    expect(() => nextRun('cron(0 25 ? * SUN *)', new Date())).toThrow(/bad schedule field/);
  });
});
