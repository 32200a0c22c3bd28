import { beforeAll, describe, expect, it } from 'vitest';
import { compactDay } from '#shared/domain/event-segments.ts';
import { SUPPORTED_QUERY_KINDS, type QueryKind } from '#shared/schemas/query/index.ts';
import { expectErrorShape, eventually, newKey, newProject, useApi } from '../support/api.ts';

// Scopes per query kind (PostHog's names): `query:read` runs every kind; `insight:read` only the
// insight kinds; a kind that lists persons or events is a 403 without `query:read`, and so are
// reading and cancelling such a query by id.
const api = useApi();

const SAMPLE: Record<QueryKind, Record<string, unknown>> = {
  TrendsQuery: {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: 'viewed' }],
    dateRange: { date_from: '-7d' },
  },
  ActorsQuery: { kind: 'ActorsQuery', select: ['id', 'properties.email', 'distinct_ids'] },
  EventsQuery: { kind: 'EventsQuery', select: ['*', 'person'], after: '-7d' },
  HogQLQuery: { kind: 'HogQLQuery', query: 'SELECT distinct_id, count() FROM events GROUP BY distinct_id' },
};

type Grant = 'query:read' | 'query:write' | 'insight:read' | 'insight:write' | 'person:read' | '*';
const GRANTS: Grant[] = ['query:read', 'query:write', 'insight:read', 'insight:write', 'person:read', '*'];

/** Written out rather than derived: the table is the rule. */
const ALLOWED: Record<QueryKind, Grant[]> = {
  TrendsQuery: ['query:read', 'query:write', 'insight:read', 'insight:write', '*'],
  ActorsQuery: ['query:read', 'query:write', '*'],
  EventsQuery: ['query:read', 'query:write', '*'],
  HogQLQuery: ['query:read', 'query:write', '*'],
};

let owner: { key: string; email: string };
let path: string;
const started: Partial<Record<QueryKind, string>> = {};
/** One key per grant (a user may hold 10). */
const keyOf: Partial<Record<Grant, string>> = {};

beforeAll(async () => {
  const p = await newProject(api.as);
  owner = { key: p.key, email: p.email };
  path = `/api/environments/${p.projectId}/query/`;
  const capturedOn = new Date().toISOString().slice(0, 10);
  await api.as().post('/batch', {
    api_key: p.token,
    batch: [{ event: 'viewed', distinct_id: 'alice', properties: { $set: { email: 'alice@example.com' } } }],
  });
  await eventually(async () => {
    const res = await api.as(owner.key).post(path, { query: SAMPLE.ActorsQuery, refresh: 'force_blocking' });
    expect(res.body.results).toHaveLength(1);
  });
  // HogQLQuery reads the lake: the day's events are compacted into it (both days, should the capture straddle midnight).
  for (const day of new Set([capturedOn, new Date().toISOString().slice(0, 10)]))
    await compactDay(p.projectId, day, new Date(Date.now() + 70_000));
  for (const grant of GRANTS) keyOf[grant] = (await newKey({ email: owner.email, scopes: [grant] })).key;
  for (const kind of SUPPORTED_QUERY_KINDS) {
    const res = await api.as(owner.key).post(path, { query: SAMPLE[kind], refresh: 'force_async' });
    expect(res.status).toBe(202);
    started[kind] = res.body.query_status.id;
    // A project runs at most 3 background queries at once: each finishes before the next starts.
    await eventually(async () => {
      const status = await api.as(owner.key).get(`${path}${started[kind]}/`);
      expect(status.body.query_status?.complete).toBe(true);
    }, 30_000);
  }
});

it('covers every supported kind', () => {
  expect(Object.keys(SAMPLE).sort()).toEqual([...SUPPORTED_QUERY_KINDS].sort());
});

describe.each(SUPPORTED_QUERY_KINDS.flatMap((kind) => GRANTS.map((grant) => [kind, grant] as const)))(
  '%s with a key of %s',
  (kind, grant) => {
    const allowed = ALLOWED[kind].includes(grant);

    it(allowed ? 'runs, reads and cancels it' : 'refuses to run, read or cancel it with 403', async () => {
      const c = api.as(keyOf[grant]!);
      const id = started[kind];
      const answers = [
        await c.post(path, { query: SAMPLE[kind], refresh: 'force_blocking' }),
        await c.get(`${path}${id}/`),
        await c.delete(`${path}${id}/`),
      ];
      for (const res of answers) {
        if (allowed) {
          // The query may already be cancelled by another key's test: GET then answers 400 "Query cancelled".
          expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
          expect([401, 403, 404]).not.toContain(res.status);
        } else {
          expect(res.status).toBe(403);
          expectErrorShape(res.body);
          expect(res.body.detail).toBe("API key missing required scope 'query:read'");
          expect(res.text).not.toContain('alice');
        }
      }
      if (allowed && kind !== 'TrendsQuery') expect(answers[0]!.text).toContain('alice');
    });
  },
);
