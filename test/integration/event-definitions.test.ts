import { describe, expect, it } from 'vitest';
import { eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();
const hoursAgo = (n: number) => new Date(Date.now() - n * 3_600_000).toISOString();

describe('event_definitions', () => {
  it("lists the project's event names of the last 30 days by volume, with search and paging (PostHog's shape)", async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const batch = [
      ...Array.from({ length: 3 }, (_, i) => ({ event: '$pageview', distinct_id: `u${i}`, timestamp: hoursAgo(i) })),
      { event: 'signed up', distinct_id: 'u0', timestamp: hoursAgo(30) },
      { event: 'signed up', distinct_id: 'u1', timestamp: hoursAgo(2) },
      { event: 'old', distinct_id: 'u1', timestamp: hoursAgo(24 * 40) },
    ];
    expect((await api.as().post('/batch', { api_key: p.token, batch })).status).toBe(200);
    const path = `/api/environments/${p.projectId}/event_definitions/`;
    const list = await eventually(async () => {
      const res = await c.get(path);
      expect(res.status).toBe(200);
      expect(res.body.results.map((d: any) => [d.name, d.volume_30_day])).toEqual([
        ['$pageview', 3],
        ['signed up', 2],
      ]);
      return res.body;
    }, 60_000);
    expect(list).toMatchObject({ count: 2, next: null, previous: null });
    expect(list.results[0]).toMatchObject({ id: '$pageview', name: '$pageview', tags: [] });
    expect(list.results[0].last_seen_at).toMatch(/^\d{4}-\d{2}-\d{2}T00:00:00Z$/);
    const searched = await c.get(`${path}?search=SIGN`);
    expect(searched.body.results.map((d: any) => d.name)).toEqual(['signed up']);
    const paged = await c.get(`${path}?limit=1`);
    expect(paged.body.results.map((d: any) => d.name)).toEqual(['$pageview']);
    expect(paged.body.next).toContain('offset=1');
    // Another project's key sees none of them.
    const other = await newProject(api.as);
    expect((await api.as(other.key).get(path)).status).toBe(404);
  });
});
