// Relative dates are resolved against the one clock, frozen for this file.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';

import { existsSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { config } from '#shared/config.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { lakeDayUris } from '#shared/domain/lake.ts';
import { drainPersonDeletions } from '#shared/domain/person-deletions.ts';
import { pointerKey } from '#shared/lake/layout.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

/**
 * The compactor writes each day it compacts to the lake (a folder under DATA_DIR here, the bucket
 * deployed: same writer, same keys); DuckDB reads the files back as Athena would read them.
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
const DAYS = ['2024-04-17', '2024-04-18', '2024-04-19', '2024-04-20'];
const duck = await (await DuckDBInstance.create(':memory:')).connect();
afterAll(() => duck.closeSync());

const browsers = ['Chrome', 'Safari', 'Firefox'];
const batch = Array.from({ length: 48 }, (_, i) => ({
  event: ['$pageview', 'signed up', '$autocapture'][i % 3]!,
  distinct_id: `user-${i % 5}`,
  timestamp: new Date(Date.parse('2024-04-17T00:30:00Z') + ((i * 7919) % 48) * 97 * 60_000).toISOString(),
  uuid: `0190f000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  properties: {
    $browser: browsers[i % 3],
    $session_id: `s-${i % 4}`,
    $group_0: i % 2 ? 'acme' : undefined,
    $screen_width: 1280,
    amount: i,
    plan: { tier: 'pro' },
  },
}));

interface Row {
  uuid: string;
  event: string;
  timestamp: string;
  distinct_id: string;
  person_id: string | null;
  session_id: string | null;
  group_0: string | null;
  browser: string | null;
  screen_width: string | null;
  properties: string;
}

async function lakeRows(projectId: number, days: string[]): Promise<{ rows: Row[]; files: string[] }> {
  const files = await lakeDayUris(projectId, days);
  if (!files.length) return { rows: [], files };
  const list = files.map((f) => `'${f.replaceAll("'", "''")}'`).join(', ');
  const reader = await duck.runAndReadAll(
    `SELECT uuid, event, strftime(timestamp AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS timestamp, distinct_id, person_id,
            session_id, group_0, browser, screen_width, properties, filename
       FROM read_parquet([${list}], filename = true) ORDER BY filename, file_row_number`.replace(
      'filename = true)',
      'filename = true, file_row_number = true)',
    ),
  );
  return { rows: (await reader.getRowObjectsJS()) as unknown as Row[], files };
}

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23')).values()].reduce((a, b) => a + b, 0);

async function ingested(token: string, projectId: number, events: typeof batch) {
  expect((await api.as().post('/batch', { api_key: token, batch: events })).body.accepted).toBe(events.length);
  await eventually(async () => expect(await total(projectId)).toBe(events.length), 90_000);
}

const compactAll = async (projectId: number, at: number) => {
  for (const day of DAYS) await compactDay(projectId, day, new Date(at));
};

describe('the lake', () => {
  let a: { projectId: number; token: string };
  let b: { projectId: number; token: string };
  beforeAll(async () => {
    a = await newProject(api.as);
    b = await newProject(api.as);
    await ingested(a.token, a.projectId, batch);
    // The other project gets other events under the same uuids: none may reach A's files.
    await ingested(
      b.token,
      b.projectId,
      batch.map((e) => ({ ...e, event: `${e.event} in b`, distinct_id: `b-${e.distinct_id}` })),
    );
    await compactAll(a.projectId, NOW + 70_000);
    await compactAll(b.projectId, NOW + 70_000);
    // Two ingests and eight compactions: generous for a loaded machine.
  }, 300_000);

  it("writes each compacted day as Parquet under events/project_id=<p>/day=<day>/, sorted by (event, timestamp), with only that project's rows", async () => {
    const lake = config().lake;
    expect(lake && 'dir' in lake).toBe(true);
    for (const day of DAYS) {
      const { rows, files } = await lakeRows(a.projectId, [day]);
      const expected = batch.filter((e) => e.timestamp.startsWith(day));
      expect(files.length).toBe(expected.length ? 1 : 0);
      for (const f of files) expect(f).toContain(`/events/project_id=${a.projectId}/day=${day}/`);
      expect(rows.map((r) => r.uuid).sort()).toEqual(expected.map((e) => e.uuid).sort());
      const order = rows.map((r) => [r.event, r.timestamp].join(' '));
      expect(order).toEqual([...order].sort());
      for (const r of rows) {
        const e = expected.find((x) => x.uuid === r.uuid)!;
        expect(r).toMatchObject({
          event: e.event,
          timestamp: e.timestamp,
          distinct_id: e.distinct_id,
          session_id: e.properties.$session_id,
          group_0: e.properties.$group_0 ?? null,
          browser: e.properties.$browser,
          // Frequent properties are text columns (PostHog's materialized columns): a number keeps its JSON text.
          screen_width: '1280',
        });
        // Every other property is JSON text; those with a column of their own are not repeated there.
        expect(JSON.parse(r.properties)).toEqual({ amount: e.properties.amount, plan: { tier: 'pro' } });
        expect(r.person_id).toMatch(/^[0-9a-f-]{36}$/);
      }
    }
    // One person per distinct id: its uuid on every one of its events.
    const { rows } = await lakeRows(a.projectId, DAYS);
    const personOf = new Map<string, Set<string | null>>();
    for (const r of rows) personOf.set(r.distinct_id, (personOf.get(r.distinct_id) ?? new Set()).add(r.person_id));
    expect([...personOf.values()].every((s) => s.size === 1)).toBe(true);
    expect(new Set(rows.map((r) => r.person_id)).size).toBe(5);
    // B's files hold B's rows only.
    const other = await lakeRows(b.projectId, DAYS);
    expect(other.rows.length).toBe(batch.length);
    expect(other.rows.every((r) => r.event.endsWith(' in b') && r.distinct_id.startsWith('b-'))).toBe(true);
    expect(other.files.every((f) => f.includes(`/project_id=${b.projectId}/`))).toBe(true);
  });

  it('a rebuilt day replaces its files through the pointer: new generation, same rows, the old files gone', async () => {
    const day = '2024-04-18';
    const before = await lakeRows(a.projectId, [day]);
    await compactDay(a.projectId, day, new Date(NOW + 5 * 60_000));
    const after = await lakeRows(a.projectId, [day]);
    expect(after.files).not.toEqual(before.files);
    expect(after.rows.map((r) => r.uuid)).toEqual(before.rows.map((r) => r.uuid));
    for (const f of before.files) expect(existsSync(f)).toBe(false);
    for (const f of after.files) expect(existsSync(f)).toBe(true);
  });

  it('a person deletion with its events rewrites the affected days: the lake keeps none of them', {
    timeout: 240_000,
  }, async () => {
    const gone = 'user-3';
    const days = [...new Set(batch.filter((e) => e.distinct_id === gone).map((e) => e.timestamp.slice(0, 10)))];
    expect((await lakeRows(a.projectId, DAYS)).rows.some((r) => r.distinct_id === gone)).toBe(true);
    // The weekly drain's work for one request (its queue left alone: other files drain it).
    let sent = false;
    const summary = await drainPersonDeletions({
      receive: async () => {
        if (sent) return [];
        sent = true;
        const body = {
          project_id: a.projectId,
          person_id: 1,
          distinct_ids: [gone],
          requested_at: new Date(NOW + 6 * 60_000).toISOString(),
        };
        return [{ body: JSON.stringify(body), receiptHandle: 'r', receiveCount: 1 }];
      },
      acknowledge: async () => {},
      release: async () => {},
      timeLeftMs: () => 600_000,
      continueLater: async () => {},
    });
    const deleted = batch.filter((e) => e.distinct_id === gone).length;
    expect(summary.eventsDeleted).toBe(deleted);
    // The ingest worker takes the removals out of the counters and marks their days; the compactor rewrites them.
    await eventually(async () => expect(await total(a.projectId)).toBe(batch.length - deleted), 60_000);
    for (const day of days) await compactDay(a.projectId, day, new Date(NOW + 10 * 60_000));
    const { rows } = await lakeRows(a.projectId, DAYS);
    expect(rows.length).toBe(batch.length - deleted);
    expect(rows.some((r) => r.distinct_id === gone)).toBe(false);
    // The other project's identical events stay.
    expect((await lakeRows(b.projectId, DAYS)).rows.length).toBe(batch.length);
  });

  it('a day whose events are all deleted keeps no pointer and no files', { timeout: 240_000 }, async () => {
    const { projectId, token } = await newProject(api.as);
    const one = [{ ...batch[0]!, distinct_id: 'only-one' }];
    await ingested(token, projectId, one);
    const day = one[0]!.timestamp.slice(0, 10);
    await compactDay(projectId, day, new Date(NOW + 70_000));
    const { files } = await lakeRows(projectId, [day]);
    expect(files.length).toBe(1);
    await drainPersonDeletions({
      receive: (() => {
        let sent = false;
        return async () => {
          if (sent) return [];
          sent = true;
          const body = {
            project_id: projectId,
            person_id: 1,
            distinct_ids: ['only-one'],
            requested_at: new Date(NOW + 6 * 60_000).toISOString(),
          };
          return [{ body: JSON.stringify(body), receiptHandle: 'r', receiveCount: 1 }];
        };
      })(),
      acknowledge: async () => {},
      release: async () => {},
      timeLeftMs: () => 600_000,
      continueLater: async () => {},
    });
    await eventually(async () => expect(await total(projectId)).toBe(0), 60_000);
    await compactDay(projectId, day, new Date(NOW + 10 * 60_000));
    expect(await lakeDayUris(projectId, [day])).toEqual([]);
    expect(existsSync(files[0]!)).toBe(false);
    const lake = config().lake as { dir: string };
    expect(existsSync(`${lake.dir}/${pointerKey(projectId, day)}`)).toBe(false);
  });
});
