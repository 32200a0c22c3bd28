// Relative dates are resolved against the one clock, frozen for this file; hundreds of /query calls with one key.
process.env.ANALYTICS_FIXED_NOW = '2024-04-20T12:00:00Z';
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { compactDay } from '#shared/domain/event-segments.ts';
import { eventually, expectErrorShape, newProject, useApi } from '../support/api.ts';

/**
 * HogQLQuery fuzzed over HTTP: statements from a small grammar, then mutated the ways an attacker
 * or a sloppy client would (comments, unicode, quotes, nested parentheses, another project's id,
 * table functions, SETTINGS, a second statement, UNION, very long texts), POSTed to /query on a
 * project whose lake holds a few events while a second project's events sit on the same days.
 * Never a 5xx; every 200 holds the first project's rows only (each event carries its project's
 * mark); every 4xx is PostHog's error shape. Fixed seed.
 */
const api = useApi();
const NOW = Date.parse('2024-04-20T12:00:00Z');
const DAYS = ['2024-04-11', '2024-04-12'];
const OUR_MARK = 'mark-ours-51c2';
const THEIR_MARK = 'mark-theirs-9e7d';
const RUNS = 100;

const event = (i: number, mark: string, user: string, extra: Record<string, unknown>, uuidPrefix: string) => ({
  event: i % 3 ? '$pageview' : 'signed up',
  distinct_id: user,
  timestamp: `${DAYS[i % 2]}T${String(3 + i).padStart(2, '0')}:00:00.000Z`,
  uuid: `${uuidPrefix}-0000-7000-8000-${String(i).padStart(12, '0')}`,
  properties: { mark, ...extra },
});
const ours = Array.from({ length: 6 }, (_, i) =>
  event(
    i,
    OUR_MARK,
    `our-user-${i % 3}`,
    { $browser: i % 2 ? 'Chrome' : 'Safari', n: i, flag: i % 2 === 0 },
    '0190f300',
  ),
);
const theirs = Array.from({ length: 8 }, (_, i) =>
  event(i, THEIR_MARK, `their-user-${i}`, { $browser: 'Chrome', n: 1000 + i }, '0190f301'),
);

const total = async (projectId: number) =>
  [...(await readRollups(projectId, null, '2024-04-01T00', '2024-04-30T23')).values()].reduce((a, b) => a + b, 0);

async function seeded(batch: Record<string, unknown>[]) {
  const p = await newProject(api.as);
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
  await eventually(async () => expect(await total(p.projectId)).toBe(batch.length), 90_000);
  for (const day of DAYS) await compactDay(p.projectId, day, new Date(NOW + 70_000));
  return p;
}

/** A statement from the grammar, then mutations; `other` is the second project's id. */
function statements(other: number): fc.Arbitrary<string> {
  const column = fc.constantFrom(
    'event',
    'count()',
    'uniq(distinct_id)',
    'toStartOfDay(timestamp)',
    'properties.$browser',
    '*',
    'events.*',
    'person.id',
    'person_id',
    "concat(event, ' ✓ ', properties.$browser)",
    'toFloat(properties.n)',
    'toFloat(properties.flag)',
    'timestamp + INTERVAL 1 DAY',
    "dateDiff('day', timestamp, now())",
    'toStartOfQuarter(timestamp)',
    'today()',
    'properties',
    'project_id',
    `${other}`,
    "'it''s'",
  );
  const safe = fc.constantFrom(
    "event = '$pageview'",
    "properties.mark != ''",
    '1 = 1 OR 1 = 1',
    '{filters}',
    'timestamp > now() - INTERVAL 30 DAY',
    'timestamp >= today() - INTERVAL 20 DAY',
    "properties.$browser ILIKE '%ch%'",
    'toFloat(properties.n) > 1',
    "distinct_id = 'x'' OR 1=1 --'",
    "distinct_id = 'x\\' OR 1=1'",
    "((((((event = 'signed up'))))))",
    'properties.mark IS NOT NULL',
    "event != 'é∑😀\u202e'",
    `properties.project_id != '${other}'`,
  );
  const hostile = fc.constantFrom(
    `project_id = ${other}`,
    `team_id = ${other}`,
    'event IN (SELECT event FROM events)',
    "file('/etc/passwd') = 1",
    "read_parquet('/tmp/*.parquet') IS NULL",
    "s3('https://bucket.s3.amazonaws.com/x', 'Parquet') = 1",
    "properties.`mark` = 'x'",
  );
  const condition = fc.oneof({ weight: 4, arbitrary: safe }, { weight: 1, arbitrary: hostile });
  const base = fc
    .record({
      columns: fc.array(column, { minLength: 0, maxLength: 3 }),
      where: fc.option(fc.array(condition, { minLength: 1, maxLength: 3 }), { nil: undefined }),
      order: fc.boolean(),
      limit: fc.option(fc.constantFrom(0, 1, 3, 100, 99999999), { nil: undefined }),
      table: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('events', 'events e', 'events AS x') },
        { weight: 1, arbitrary: fc.constantFrom(`events_${other}`, '"events"', 'persons') },
      ),
    })
    .map((s) => {
      const aggregate = s.columns.some((c) => c.includes('count(') || c.includes('uniq('));
      return [
        `SELECT properties.mark AS m${s.columns.map((c) => `, ${c}`).join('')}`,
        `FROM ${s.table}`,
        s.where ? `WHERE ${s.where.join(' AND ')}` : '',
        aggregate ? 'GROUP BY m' : '',
        s.order ? 'ORDER BY m DESC' : '',
        s.limit === undefined ? '' : `LIMIT ${s.limit}`,
      ]
        .filter(Boolean)
        .join(' ');
    });
  const harmless = fc.constantFrom(
    (t: string) => t,
    (t: string) => `${t};`,
    (t: string) => t.replace(' FROM ', ' /* */ FROM /* x */ '),
    (t: string) => `${t} -- ${THEIR_MARK.slice(0, 4)}`,
    (t: string) => t.replaceAll(' ', '\n\t'),
    (t: string) => t.replace('SELECT', 'sElEcT'),
    (t: string) => t.replace('properties.mark', '`properties`.`mark`'),
  );
  const mutation = fc.constantFrom(
    (t: string) => `${t}; SELECT * FROM events`,
    (t: string) => `${t} UNION ALL SELECT properties.mark FROM events`,
    (t: string) => `${t} SETTINGS max_threads = 64`,
    (t: string) => `${t} FORMAT JSON`,
    (t: string) => t.replace('FROM events', `FROM events WHERE ${'('.repeat(200)}1${')'.repeat(200)} AND 1`),
    (t: string) => `${t}${' AND 1 = 1'.repeat(2_500)}`,
    (t: string) => t.replace('properties.mark', `properties.mark, '${'x'.repeat(15_000)}'`),
    (t: string) => t.replace('FROM events', `FROM events AS e${other}`),
    (t: string) => t.replace('FROM events', `FROM file('/etc/passwd')`),
    (t: string) => t.replace('FROM events', "FROM s3('https://x/y.parquet')"),
    (t: string) => t.replace('FROM events', 'FROM events FINAL'),
    (t: string) => t.replace('properties.mark', "properties.mark'"),
    (t: string) => t.replace('properties.mark', 'properties.mark\u0000'),
    (t: string) => t.replace('SELECT', `SELECT {variables.v},`),
  );
  return fc
    .tuple(base, fc.oneof({ weight: 3, arbitrary: harmless }, { weight: 2, arbitrary: mutation }))
    .map(([t, m]) => m(t));
}

describe('HogQLQuery fuzz over HTTP (fixed seed)', () => {
  let a: Awaited<ReturnType<typeof seeded>>;
  let b: Awaited<ReturnType<typeof seeded>>;
  beforeAll(async () => {
    [a, b] = await Promise.all([seeded(ours), seeded(theirs)]);
  }, 300_000);

  it(`${RUNS} hostile statements: no 5xx, 200s hold this project's rows only, 4xx in PostHog's error shape`, async () => {
    const texts = fc.sample(statements(b.projectId), { numRuns: RUNS, seed: 3225 });
    const counts = { ok: 0, rows: 0, refused: 0 };
    const c = api.as(a.key);
    const check = async (query: string) => {
      const res = await c.post(`/api/projects/${a.projectId}/query/`, {
        query: {
          kind: 'HogQLQuery',
          query,
          filters: { dateRange: { date_from: '2024-04-01' } },
          variables: { x: { variableId: 'x', code_name: 'v', value: `${b.projectId}' OR 1=1 --` } },
        },
      });
      expect(res.status, `${query.slice(0, 300)}\n${JSON.stringify(res.body).slice(0, 300)}`).toBeLessThan(500);
      if (res.status !== 200) {
        expectErrorShape(res.body);
        counts.refused++;
        return;
      }
      const results = JSON.stringify(res.body.results);
      // Nothing of the second project: its mark, users, event ids, numbers.
      for (const theirs of [THEIR_MARK, 'their-user', '0190f301', '1000']) expect(results, query).not.toContain(theirs);
      if (res.body.columns[0] === 'm')
        for (const row of res.body.results as unknown[][]) expect(row[0], query).toBe(OUR_MARK);
      expect(res.body.results.length).toBeLessThanOrEqual(res.body.limit);
      counts.ok++;
      if (res.body.results.length) counts.rows++;
    };
    // A few at a time: the local server is one process, DuckDB shares its 2 cores.
    for (let i = 0; i < texts.length; i += 4) await Promise.all(texts.slice(i, i + 4).map(check));
    // Non-vacuity: both outcomes, and answers with rows, are reached often.
    expect(counts.ok).toBeGreaterThan(RUNS / 5);
    expect(counts.rows).toBeGreaterThan(RUNS / 10);
    expect(counts.refused).toBeGreaterThan(RUNS / 5);
  }, 120_000);
});
