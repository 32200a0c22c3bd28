// 50-way bursts from one key: keep this file's process clear of the per-key rate limits.
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { eventually, newProject, useApi } from '../support/api.ts';
import { retryingUnavailable } from '../support/retry.ts';

// 50 transactions racing on one item, or 3,000 events in three transactions' worth of dedup claims,
// take DynamoDB Local (one process, one lock per table) far longer than DynamoDB: these tests check
// that no write is lost or doubled, not the speed (`npm run bench` does), so the functions get 30 s.
const api = useApi({ timeoutMs: 30_000 });

describe('concurrent writes', () => {
  it('applies 50 concurrent PATCHes of one organization: all 200, last write wins per field, no field lost', async () => {
    const { key, org } = await newProject(api.as);
    const c = api.as(key);
    const logos = Array.from({ length: 50 }, () => randomUUID());
    // Most writes race on name or logo; two write a field nobody else touches (a lost update would drop them).
    const bodies = Array.from({ length: 50 }, (_, i) =>
      i === 7
        ? { enforce_2fa: true }
        : i === 31
          ? { is_member_join_email_enabled: false }
          : i % 2
            ? { name: `Racer ${i}` }
            : { logo_media_id: logos[i] },
    );
    const started = performance.now();
    const unavailable = { retried: 0 };
    const responses = await Promise.all(
      bodies.map((b) => retryingUnavailable(() => c.patch(`/api/organizations/${org.id}`, b), 4, unavailable)),
    );
    const ms = performance.now() - started;
    expect(responses.map((r) => r.status)).toEqual(bodies.map(() => 200));
    const final = (await c.get(`/api/organizations/${org.id}`)).body;
    expect(bodies.filter((b) => 'name' in b).map((b) => b.name)).toContain(final.name);
    expect(bodies.filter((b) => 'logo_media_id' in b).map((b) => b.logo_media_id)).toContain(final.logo_media_id);
    expect(final.enforce_2fa).toBe(true);
    expect(final.is_member_join_email_enabled).toBe(false);
    console.info(`concurrency: 50 organization PATCHes in ${Math.round(ms)} ms (${unavailable.retried} retried 503s)`);
  });

  it('applies 50 concurrent PATCHes of one person: all 200, every property kept, the shared one from one of the writes', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    await api.as().post('/batch', {
      api_key: token,
      batch: [{ event: 'x', distinct_id: 'racer', properties: { $set: { before: true } } }],
    });
    const person = await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/persons?distinct_id=racer`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0] as { id: number };
    });
    const started = performance.now();
    const unavailable = { retried: 0 };
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        retryingUnavailable(
          () =>
            c.patch(`/api/environments/${projectId}/persons/${person.id}`, { properties: { [`k${i}`]: i, shared: i } }),
          4,
          unavailable,
        ),
      ),
    );
    const ms = performance.now() - started;
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 200));
    const final = (await c.get(`/api/environments/${projectId}/persons/${person.id}`)).body;
    expect(final.properties).toEqual({
      before: true,
      shared: final.properties.shared,
      ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i])),
    });
    expect(final.properties.shared).toBeGreaterThanOrEqual(0);
    expect(final.properties.shared).toBeLessThan(50);
    // Each write is one entry of the person's activity log: 50 writes, 50 entries, none lost or doubled
    // (a 503 whose write had landed before its timeout, then retried, would add one: allowed for).
    const activity = await c.get(`/api/environments/${projectId}/persons/${person.id}/activity?limit=100`);
    const entries = activity.body.results.filter((a: { activity: string }) => a.activity === 'updated').length;
    expect(entries).toBeGreaterThanOrEqual(50);
    expect(entries).toBeLessThanOrEqual(50 + unavailable.retried);
    console.info(`concurrency: 50 person PATCHes in ${Math.round(ms)} ms (${unavailable.retried} retried 503s)`);
  }, 60_000);

  it('gives 20 concurrent organization creates with the same name 20 distinct slugs', async () => {
    const { key } = await newProject(api.as);
    const c = api.as(key);
    const unavailable = { retried: 0 };
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        retryingUnavailable(() => c.post('/api/organizations', { name: 'Same Name Inc' }), 4, unavailable),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 201));
    const slugs = responses.map((r) => r.body.slug as string);
    expect(new Set(slugs).size).toBe(20);
    expect(slugs).toContain('same-name-inc');
    for (const slug of slugs) expect(slug).toMatch(/^same-name-inc(-[a-z]{4})?$/);
    const list = await c.get('/api/organizations?limit=100');
    const listed = list.body.results
      .filter((o: { name: string }) => o.name === 'Same Name Inc')
      .map((o: { slug: string }) => o.slug);
    expect(listed.length).toBeGreaterThanOrEqual(20);
    expect(listed.length).toBeLessThanOrEqual(20 + unavailable.retried);
    expect(new Set(listed).size).toBe(listed.length);
  });
});

describe('concurrent capture of one batch', () => {
  it('counts a 1,000-event batch sent 3 times at once exactly once', async () => {
    const { projectId, token } = await newProject(api.as);
    const batch = Array.from({ length: 1_000 }, (_, i) => ({
      event: i % 3 ? 'tripled' : 'tripled-b',
      distinct_id: `t${i % 17}`,
      uuid: randomUUID(),
      timestamp: `2024-07-0${1 + (i % 3)}T${String(i % 24).padStart(2, '0')}:30:00Z`,
    }));
    const started = performance.now();
    // A loaded DynamoDB Local can make a copy answer 503 (bounded timeouts); SDKs retry those, so do we.
    const send = async () => {
      for (let attempt = 1; ; attempt += 1) {
        const res = await api.as().post('/batch', { api_key: token, batch });
        if (res.status !== 503 || attempt === 5) return res;
        await new Promise((r) => setTimeout(r, 500 * attempt));
      }
    };
    const results = await Promise.all([1, 2, 3].map(send));
    const ms = performance.now() - started;
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    // Each copy says what it saw: stored, duplicates, or staged for the batch worker (over 500 events),
    // which stores each event once whichever copies it sees.
    expect(results.reduce((n, r) => n + r.body.accepted + r.body.deduplicated + (r.body.queued ?? 0), 0)).toBe(3_000);
    const total = async () =>
      [...(await readRollups(projectId, null, '2024-07-01T00', '2024-07-03T23')).values()].reduce((a, b) => a + b, 0);
    // Staged copies reach the table through the batch worker and then the stream: slow on a busy run.
    await eventually(async () => expect(await total()).toBe(1_000), 90_000);
    const tripled = [...(await readRollups(projectId, 'tripled', '2024-07-01T00', '2024-07-03T23')).values()].reduce(
      (a, b) => a + b,
      0,
    );
    expect(tripled).toBe(batch.filter((e) => e.event === 'tripled').length);
    // And it stays there: late stream deliveries of the copies change nothing.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await total()).toBe(1_000);
    console.info(`concurrency: 3 x 1,000-event batches in ${Math.round(ms)} ms`);
  }, 150_000);
});
