import { describe, expect, it } from 'vitest';
import { ENV } from '#shared/config.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

// No time inline: every blocking query outlives its budget, so it is handed to the query worker.
// (Config is read once per process, on first use: before any request. The worker runs in the test
// run's global setup with the default budget.)
process.env[ENV.queryBlockingBudgetMs] = '0';

const api = useApi();

const trends = (days: number) => ({
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: 'viewed' }],
  dateRange: { date_from: `-${days}d` },
});

describe('a blocking query past the API budget', () => {
  it('is answered 202 with its query_status, completes in the worker, and is then served from the cache', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const path = `/api/environments/${p.projectId}/query/`;
    const res = await c.post(path, { query: trends(7) });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      cache_key: expect.stringMatching(/^cache_/),
      query_status: expect.objectContaining({ complete: false, query_async: true, error: false, team_id: p.projectId }),
    });
    const done = await eventually(async () => {
      const status = await c.get(`${path}${res.body.query_status.id}/`);
      expect(status.status).toBe(200);
      return status.body.query_status;
    }, 30_000);
    expect(done.results).toMatchObject({
      is_cached: false,
      cache_key: res.body.cache_key,
      results: [expect.objectContaining({ count: 0 })],
    });
    const cached = await c.post(path, { query: trends(7) });
    expect(cached.status).toBe(200);
    expect(cached.body).toMatchObject({ is_cached: true, last_refresh: done.results.last_refresh });
  });

  it('hands force_blocking over too, under the client_query_id', async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const path = `/api/environments/${p.projectId}/query/`;
    const res = await c.post(path, { query: trends(3), refresh: 'force_blocking', client_query_id: 'slow-one' });
    expect(res.status).toBe(202);
    expect(res.body.query_status.id).toBe('slow-one');
    await eventually(async () => expect((await c.get(`${path}slow-one/`)).status).toBe(200), 30_000);
  });
});
