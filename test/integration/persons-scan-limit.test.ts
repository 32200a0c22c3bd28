import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '#shared/config.ts';
import { batchPut } from '#shared/db/batch.ts';
import { personItems } from '#shared/db/persons.ts';
import { newProject, useApi, type Client } from '../support/api.ts';

// Read once by the first request of this process (config is built once): the whole file scans at most 40 persons per request.
process.env[ENV.personScanLimit] = '40';

const api = useApi();
const MATCHING = [99, 85, 50, 45, 5];

describe('filtered persons lists do bounded work per request', () => {
  let c: Client;
  let base: string;
  beforeAll(async () => {
    const p = await newProject(api.as);
    c = api.as(p.key);
    base = `/api/environments/${p.projectId}/persons/`;
    const start = Date.parse('2024-01-01T00:00:00Z');
    await batchPut(
      Array.from({ length: 100 }, (_, i) =>
        personItems({
          id: 5_000_000 + i,
          uuid: `00000000-0000-7000-8000-${String(5_000_000 + i).padStart(12, '0')}`,
          project_id: p.projectId,
          properties: { n: i, plan: MATCHING.includes(i) ? 'pro' : 'free', email: `p${i}@example.com` },
          distinct_ids: [`scan-${i}`],
          created_at: new Date(start + i * 1000).toISOString(),
          is_identified: true,
          version: 1,
        }),
      ).flat(),
    );
  });

  async function walk(first: string) {
    const pages: any[] = [];
    let path: string | null = first;
    while (path && pages.length < 20) {
      const res: { status: number; body: any } = await c.get(path);
      expect(res.status).toBe(200);
      pages.push(res.body);
      path = res.body.next ? new URL(res.body.next).pathname + new URL(res.body.next).search : null;
    }
    return pages;
  }

  const pro = encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }]));

  it('stops a properties scan at the limit with the matches so far, scan_limited and a next that resumes it: every match exactly once', async () => {
    const pages = await walk(`${base}?properties=${pro}&limit=10`);
    expect(pages[0]).toMatchObject({ scan_limited: true, count: 2 });
    expect(pages[0].results.map((p: any) => p.properties.n)).toEqual([99, 85]);
    expect(pages[0].next).toMatch(/cursor=/);
    expect(new URL(pages[0].next).searchParams.get('offset')).toBe('2');
    expect(pages).toHaveLength(3);
    expect(pages.flatMap((p) => p.results.map((r: any) => r.properties.n))).toEqual(MATCHING);
    expect(pages.at(-1)).toMatchObject({ next: null, count: 5 });
    expect(pages.at(-1).scan_limited).toBeUndefined();
  });

  it('fills pages across scan limits without repeating or skipping a match', async () => {
    const pages = await walk(`${base}?properties=${pro}&limit=1`);
    expect(pages.flatMap((p) => p.results.map((r: any) => r.properties.n))).toEqual(MATCHING);
    expect(pages.at(-1).next).toBeNull();
  });

  it('search walks the same way, and a bare offset skips matches across requests', async () => {
    const pages = await walk(`${base}?search=scan-5&limit=10`);
    expect(pages[0].scan_limited).toBe(true);
    expect(pages.flatMap((p) => p.results.map((r: any) => r.distinct_ids[0]))).toEqual(['scan-5']);
    const skipped = await walk(`${base}?properties=${pro}&limit=2&offset=3`);
    expect(skipped.flatMap((p) => p.results.map((r: any) => r.properties.n))).toEqual([45, 5]);
  });

  it('persons/values counts the newest persons within the limit and says so', async () => {
    const res = await c.get(`${base}values/?key=plan`);
    expect(res.status).toBe(200);
    // The newest 40 are n = 60..99, of which 85 and 99 are pro.
    expect(res.body).toEqual({
      results: [
        { name: 'free', count: 38 },
        { name: 'pro', count: 2 },
      ],
      refreshing: false,
      scan_limited: true,
    });
  });

  // Last: it deletes persons of the fixture.
  it('bulk_delete by uuid finds every uuid, beyond the scan limit too (the personsByUuid index, not a scan)', async () => {
    const uuid = (n: number) => `00000000-0000-7000-8000-${String(5_000_000 + n).padStart(12, '0')}`;
    const res = await c.post(`${base}bulk_delete/`, { ids: [uuid(99), uuid(70), uuid(0)] });
    expect(res.status).toBe(202);
    expect([...res.body.deleted].sort()).toEqual([5_000_000, 5_000_070, 5_000_099]);
    expect(res.body).toMatchObject({ not_found: [], queued: [], persons_found: 3, persons_deleted: 3 });
    expect((await c.get(`${base}5000000/`)).status).toBe(404);
  });
});
