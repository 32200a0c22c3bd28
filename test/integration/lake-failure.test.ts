// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';

import { describe, expect, it, vi } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { getCompactionMarker, readEventDay } from '#shared/db/segments.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { lakeDayUris } from '#shared/domain/lake.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

/** The lake's store, failing while `s3.down` (as S3 answering 503 to every attempt). */
const s3 = vi.hoisted(() => ({ down: true }));
vi.mock('#shared/lake/store.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('#shared/lake/store.ts')>();
  return {
    ...real,
    lakeStore: () => {
      const store = real.lakeStore()!;
      return {
        ...store,
        put: async (...args: Parameters<typeof store.put>) => {
          if (s3.down) throw new Error('S3 PutObject failed: 503 SlowDown');
          return store.put(...args);
        },
      };
    },
  };
});

const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');

describe('the lake failing', () => {
  it('never holds the segments back, and leaves the day due until a compaction writes its files', {
    timeout: 240_000,
  }, async () => {
    const { projectId, token } = await newProject(api.as);
    const day = '2024-04-19';
    const batch = [1, 2, 3].map((i) => ({
      event: '$pageview',
      distinct_id: `u${i}`,
      timestamp: `${day}T0${i}:00:00Z`,
      properties: { $browser: 'Chrome' },
    }));
    expect((await api.as().post('/batch', { api_key: token, batch })).body.accepted).toBe(3);
    await eventually(async () => {
      const rollups = await readRollups(projectId, null, '2024-04-19T00', '2024-04-19T23');
      expect([...rollups.values()].reduce((a, b) => a + b, 0)).toBe(3);
    }, 60_000);

    const failed = await compactDay(projectId, day, new Date(NOW + 70_000));
    expect(failed).toMatchObject({ complete: true, lake: false, events: 3 });
    expect((await readEventDay(projectId, day, '$pageview', null)).segments.size).toBe(1);
    expect(await lakeDayUris(projectId, [day])).toEqual([]);
    expect(await getCompactionMarker(projectId, day)).toBeDefined();

    s3.down = false;
    const written = await compactDay(projectId, day, new Date(NOW + 20 * 60_000));
    expect(written).toMatchObject({ complete: true, lake: true, events: 3 });
    expect(await lakeDayUris(projectId, [day])).toHaveLength(1);
    expect(await getCompactionMarker(projectId, day)).toBeUndefined();
  });
});
