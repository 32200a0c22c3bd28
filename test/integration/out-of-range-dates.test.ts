/**
 * Issue 21, item 5: a date that resolves to no instant (NaN past JavaScript's range) or to one outside
 * years 0001-9999 is a 400 naming the caller's field, on every route that takes dates. Before, an
 * EventsQuery `after: "-999999y"` became NaN, slipped past the 366-day check and answered 200 with no rows.
 */
import { describe, expect, it } from 'vitest';
import { type Client, expectErrorShape, newProject, useApi } from '../support/api.ts';

const api = useApi();

const OUT_OF_RANGE = ['-999999y', '+999999d', '9999999-01-01', '-1e309h', '-99999999999999999999d'];

async function refused(reply: Promise<{ status: number; body: any }>, attr: string): Promise<string> {
  const res = await reply;
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expectErrorShape(res.body);
  expect(res.body.attr).toBe(attr);
  return res.body.detail as string;
}

async function project(): Promise<{ c: Client; projectId: number; orgId: string }> {
  const p = await newProject(api.as);
  return { c: api.as(p.key), projectId: p.projectId, orgId: p.org.id };
}

describe('dates out of range', () => {
  it.each(OUT_OF_RANGE)('legacy trends: date_from / date_to %s is a 400 on that field (GET and POST)', async (date) => {
    const { c, projectId } = await project();
    const path = `/api/environments/${projectId}/insights/trend/`;
    const events = JSON.stringify([{ id: '$pageview' }]);
    await refused(c.get(`${path}?${new URLSearchParams({ events, date_from: date })}`), 'date_from');
    await refused(c.get(`${path}?${new URLSearchParams({ events, date_from: '-7d', date_to: date })}`), 'date_to');
    await refused(c.post(path, { events: [{ id: '$pageview' }], date_from: date }), 'date_from');
  });

  it.each(OUT_OF_RANGE)('TrendsQuery: dateRange %s is a 400 on query__dateRange__date_from / _to', async (date) => {
    const { c, projectId } = await project();
    const path = `/api/environments/${projectId}/query/`;
    const trends = (dateRange: Record<string, string>) =>
      c.post(path, { query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$pageview' }], dateRange } });
    await refused(trends({ date_from: date }), 'query__dateRange__date_from');
    await refused(trends({ date_from: '-7d', date_to: date }), 'query__dateRange__date_to');
  });

  it.each([
    ...OUT_OF_RANGE,
    '-9999999999999999s', // finite, but before year 0001 (and both bounds alike: no 366-day gap to catch it)
  ])('EventsQuery: after / before %s is a 400 on query__after / query__before', async (date) => {
    const { c, projectId } = await project();
    const path = `/api/environments/${projectId}/query/`;
    const events = (bounds: Record<string, string>) =>
      c.post(path, { query: { kind: 'EventsQuery', select: ['event'], ...bounds } });
    await refused(events({ after: date }), 'query__after');
    await refused(events({ after: date, before: date }), 'query__before');
    await refused(events({ after: '-1d', before: date }), 'query__before');
  });

  it('EventsQuery: the issue\'s "-999999y" names the range dates must fall in', async () => {
    const { c, projectId } = await project();
    const detail = await refused(
      c.post(`/api/environments/${projectId}/query/`, {
        query: { kind: 'EventsQuery', select: ['event'], after: '-999999y' },
      }),
      'query__after',
    );
    expect(detail).toContain('0001-01-01 and 9999-12-31');
  });

  it('a date property filter with "-999999y" is a 400 on its value (EventsQuery and legacy trends), not a filter matching nothing', async () => {
    const { c, projectId } = await project();
    const filter = { key: 'signed_up_at', operator: 'is_date_after', value: '-999999y', type: 'event' };
    await refused(
      c.post(`/api/environments/${projectId}/query/`, {
        query: { kind: 'EventsQuery', select: ['event'], properties: [filter] },
      }),
      'query__properties__0__value',
    );
    await refused(
      c.post(`/api/environments/${projectId}/insights/trend/`, { events: [{ id: '$pageview' }], properties: [filter] }),
      'properties__0__value',
    );
  });

  it.each(['2024-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '99999-01-01T00:00:00Z'])(
    'persons properties_timeline: from / to %s is a 400 on that field',
    async (date) => {
      const { c, projectId } = await project();
      const path = `/api/environments/${projectId}/persons/1/properties_timeline/`;
      await refused(c.get(`${path}?${new URLSearchParams({ from: date })}`), 'from');
      await refused(c.get(`${path}?${new URLSearchParams({ to: date })}`), 'to');
    },
  );

  it.each(['2024-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z'])(
    'batch export backfill: start_at / end_at %s is a 400 on that field, and queues nothing',
    async (date) => {
      const { c, orgId } = await project();
      const base = `/api/organizations/${orgId}/batch_exports/`;
      const created = await c.post(base, {
        name: 'Dates',
        interval: 'hour',
        paused: true,
        destination: {
          type: 'S3',
          config: {
            bucket_name: 'my-bucket',
            region: 'us-east-1',
            prefix: 'p',
            aws_access_key_id: 'AKIA_TEST',
            aws_secret_access_key: 'secret',
          },
        },
      });
      expect(created.status).toBe(201);
      const backfill = (body: Record<string, string>) => c.post(`${base}${created.body.id}/backfill/`, body);
      await refused(backfill({ start_at: date, end_at: '2024-03-01T00:00:00Z' }), 'start_at');
      await refused(backfill({ start_at: '2024-01-01T00:00:00Z', end_at: date }), 'end_at');
      await refused(c.post(base, { ...created.body, name: 'Dates 2', start_at: date }), 'start_at');
      expect((await c.get(`${base}${created.body.id}/`)).body.latest_runs).toEqual([]);
    },
  );
});
