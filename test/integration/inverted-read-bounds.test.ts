// The API's clock is frozen here; the compactor below runs with a clock five minutes ahead of it.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:10:00Z';

import { describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { getCompactionMarker, readEventDay } from '#shared/db/segments.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { client, eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();
const NOW = Date.parse('2024-04-20T12:10:00Z');
const DAY = '2024-04-20';

const pageview = (distinctId: string, time: string, browser: string) => ({
  event: '$pageview',
  distinct_id: distinctId,
  timestamp: `${DAY}T${time}:00Z`,
  properties: { $browser: browser },
});

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, `${DAY}T00`, `${DAY}T23`)).values()].reduce((a, b) => a + b, 0);

describe('a compactor clock ahead of the API', () => {
  it('a trend that tops up its segments answers 200 with exact counts, not a DynamoDB ValidationException', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const capture = client(api.baseUrl);
    const first = [
      pageview('u1', '09:00', 'Chrome'),
      pageview('u2', '10:00', 'Chrome'),
      pageview('u3', '10:30', 'Safari'),
    ];
    expect((await capture.post('/batch', { api_key: p.token, batch: first })).status).toBe(200);
    await eventually(async () => {
      expect(await total(p.projectId)).toBe(3);
      expect((await getCompactionMarker(p.projectId, DAY))?.touches).toBeGreaterThan(0);
    }, 20_000);

    // Compacted by a worker whose clock is 5 minutes ahead: the segment says it holds what was ingested up to 12:14.
    expect((await compactDay(p.projectId, DAY, new Date(NOW + 5 * 60_000))).complete).toBe(true);
    const segment = (await readEventDay(p.projectId, DAY, '$pageview', null)).segments.get('$pageview');
    expect(segment?.through).toBe('2024-04-20T12:14:00.000Z');

    // A late event, ingested at the API's 12:10: the day's counter moves past the segment's tally, so a
    // trend tops the segment up with what was ingested from 12:14 to 12:11 (now + 1 min): an inverted window.
    const late = [pageview('u1', '11:00', 'Chrome')];
    expect((await capture.post('/batch', { api_key: p.token, batch: late })).status).toBe(200);
    await eventually(async () => expect(await total(p.projectId)).toBe(4), 20_000);

    const trend = await c.post(`/api/environments/${p.projectId}/insights/trend/?refresh=true`, {
      events: [{ id: '$pageview', properties: [{ key: '$browser', value: 'Chrome', operator: 'exact' }] }],
      date_from: DAY,
      date_to: DAY,
      interval: 'day',
    });
    expect(trend.status).toBe(200);
    // Chrome page views on the 20th: u1 09:00, u2 10:00 and the late u1 11:00 (u3's is Safari).
    expect(trend.body.result[0].count).toBe(3);
    expect(trend.body.result[0].data).toEqual([3]);
  });
});
