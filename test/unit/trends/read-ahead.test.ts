import { describe, expect, it } from 'vitest';
import {
  eventsNeeded,
  eventsReadAhead,
  parseTrendRequest,
  resolveDateRange,
  type ProjectSettings,
} from '#shared/trends/index.ts';

const NOW = new Date('2024-04-20T12:34:56Z');
const filtered = { key: '$browser', operator: 'exact', value: ['Chrome'] };
const ahead = (raw: Record<string, unknown>) => eventsReadAhead(parseTrendRequest(raw), NOW);

describe('eventsReadAhead: the day counters a trend can start reading before the project is read', () => {
  it('covers what the trend reads in any time zone and with either week start, for every interval', () => {
    const zones = ['UTC', 'Pacific/Kiritimati', 'Pacific/Pago_Pago', 'Asia/Kolkata', 'America/New_York'];
    const requests: Record<string, unknown>[] = [
      { events: [{ id: '$pageview', properties: [filtered] }], date_from: '-30d' },
      { events: [{ id: '$pageview' }], breakdown: '$os', date_from: '-7d', interval: 'hour' },
      { events: [{ id: '$pageview', math: 'dau' }], date_from: '-4w', interval: 'week' },
      { events: [{ id: '$pageview', math: 'weekly_active' }], date_from: '-14d', compare: true },
      { events: [{ id: 'signed up', properties: [filtered] }], date_from: '2024-03-01', date_to: '2024-03-31' },
      { events: [{ id: '$pageview', properties: [filtered] }], date_from: '-1m', interval: 'month' },
    ];
    let checked = 0;
    for (const raw of requests) {
      const window = ahead(raw);
      expect(window, JSON.stringify(raw)).toBeDefined();
      for (const timezone of zones)
        for (const week_start_day of [0, 1] as const) {
          const settings: ProjectSettings = { timezone, week_start_day, test_account_filters: [] };
          const query = parseTrendRequest(raw);
          const needed = eventsNeeded(query, resolveDateRange(query, settings, NOW));
          expect(needed.from.getTime()).toBeGreaterThanOrEqual(window!.from.getTime());
          expect(needed.to.getTime()).toBeLessThanOrEqual(window!.to.getTime());
          checked += 1;
        }
    }
    expect(checked).toBe(60);
  });

  it('names each event once', () => {
    expect(
      ahead({
        events: [
          { id: '$pageview', math: 'dau' },
          { id: '$pageview', properties: [filtered] },
          { id: 'signed up', math: 'total', properties: [filtered] },
        ],
      })?.names,
    ).toEqual(['$pageview', 'signed up']);
  });

  it('reads nothing ahead for what may be answered from rollups, names no event, or spans more than 70 days', () => {
    expect(ahead({ events: [{ id: '$pageview' }], date_from: '-30d' })).toBeUndefined();
    expect(ahead({ events: [{ id: null, properties: [filtered] }] })).toBeUndefined();
    expect(ahead({ actions: [{ id: 3 }], breakdown: '$os' })).toBeUndefined();
    expect(ahead({ events: [{ id: '$pageview', properties: [filtered] }], date_from: '-90d' })).toBeUndefined();
    expect(ahead({ events: [{ id: '$pageview', properties: [filtered] }], date_from: 'all' })).toBeUndefined();
  });
});
