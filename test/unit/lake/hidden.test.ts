import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SETTLED_MS } from '#shared/domain/lake-hides.ts';
import { foldNow, placeholders, printStatement, runStatement } from '#shared/domain/query/hogql.ts';
import { parseSelectStatement } from '#shared/hogql/select.ts';
import { RESULT_REUSE } from '#shared/lake/athena.ts';
import { duckdbEngine } from '#shared/lake/engine.ts';
import { type LakeHidden, NOTHING_HIDDEN } from '#shared/lake/hidden.ts';
import { dataKey } from '#shared/lake/layout.ts';
import { type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';
import { decodeCell } from '#shared/lake/sql/select.ts';
import { type LakeSource, printTrendSql } from '#shared/lake/sql/trends.ts';
import { parseTrendRequest, type ProjectSettings, resolveDateRange } from '#shared/trends/index.ts';

/**
 * What the lake's files hold but must not serve (shared/lake/hidden.ts), applied by both printers and
 * run on DuckDB over real Parquet files: deleted rows left out, a deleted person's columns and a
 * removed property NULL. Every expected row is read off the events below by hand.
 */
const P = 7;
const UTC: ProjectSettings = { timezone: 'UTC', week_start_day: 1, test_account_filters: [] };
const NOW = new Date('2024-03-16T12:00:00Z');
const root = mkdtempSync(join(tmpdir(), 'lake-hidden-'));
const engine = duckdbEngine(root);
const P1 = '0190a000-0000-7000-8000-000000000001';
const P2 = '0190a000-0000-7000-8000-000000000002';
const QUOTED = "o'neil --x";

const event = (n: number, at: string, distinctId: string, person: string | null, props: object | null): LakeEvent => ({
  uuid: `0190b000-0000-7000-8000-${String(n).padStart(12, '0')}`,
  event: '$pageview',
  timestamp: at,
  distinct_id: distinctId,
  person_id: person,
  person_properties: props && JSON.stringify(props),
  person_created_at: person ? Date.parse('2024-01-01T00:00:00Z') : null,
  properties: {},
});
// u1 is P1 (deleted), u2 is P2 (its email removed); u3 has no person; QUOTED's events are deleted.
const EVENTS: LakeEvent[] = [
  event(1, '2024-03-02T01:00:00.000Z', 'u1', P1, { email: 'a@x', plan: 'pro' }),
  event(2, '2024-03-02T02:00:00.000Z', 'u2', P2, { email: 'b@y' }),
  event(3, '2024-03-02T03:00:00.000Z', 'u3', null, null),
  event(4, '2024-03-02T05:00:00.000Z', QUOTED, null, null),
  event(5, '2024-03-03T01:00:00.000Z', 'u1', P1, { email: 'a@x', plan: 'pro' }),
  event(6, '2024-03-03T02:00:00.000Z', 'u2', P2, { email: 'b@y' }),
  // After the deletion's `until`: kept.
  event(7, '2024-03-03T04:00:00.000Z', 'u2', P2, { email: 'b@y' }),
];
const HIDDEN: LakeHidden = {
  rows: [{ distinctIds: ['u2', QUOTED], until: new Date('2024-03-03T03:00:00.000Z') }],
  persons: [P1],
  keys: new Map([['email', [P2]]]),
};

let files: string[];
beforeAll(() => {
  files = ['2024-03-02', '2024-03-03'].flatMap((day) =>
    lakeFiles(EVENTS.filter((e) => e.timestamp.startsWith(day))).map((body, i) => {
      const path = join(root, dataKey(P, day, 'g1', i));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      return path;
    }),
  );
});

async function hogql(text: string, hidden: LakeHidden) {
  const statement = foldNow(
    parseSelectStatement(text, 'query', placeholders({ kind: 'HogQLQuery', query: text }, UTC, NOW)),
    NOW.getTime(),
    'UTC',
  );
  const printed = printStatement(
    {
      projectId: P,
      statement,
      timezone: 'UTC',
      weekStart: 1,
      days: { from: '2024-03-01', to: '2024-03-15' },
      limit: 100,
      offset: 0,
      hidden,
    },
    { dialect: 'duckdb', files },
  );
  const rows = await runStatement(engine, P, printed.sql, () => {}, Date.now() + 60_000);
  return rows.map((r) => printed.columns.map((_, i) => decodeCell(printed.types[i]!, r[`c${i}`] ?? null, 'UTC')));
}

const PERSONS =
  'SELECT distinct_id, person.id, person.properties.email, person.properties.plan, person.created_at IS NULL FROM events ORDER BY timestamp';

describe('HogQLQuery with hides', () => {
  it('without any, every row and person column as the files hold them', async () => {
    expect(await hogql(PERSONS, NOTHING_HIDDEN)).toEqual([
      ['u1', P1, 'a@x', 'pro', false],
      ['u2', P2, 'b@y', null, false],
      ['u3', null, null, null, true],
      [QUOTED, null, null, null, true],
      ['u1', P1, 'a@x', 'pro', false],
      ['u2', P2, 'b@y', null, false],
      ['u2', P2, 'b@y', null, false],
    ]);
  });

  it('leaves out the deleted rows (up to their time), NULLs a deleted person and a removed key', async () => {
    expect(await hogql(PERSONS, HIDDEN)).toEqual([
      ['u1', null, null, null, true],
      ['u3', null, null, null, true],
      ['u1', null, null, null, true],
      ['u2', P2, null, null, false],
    ]);
    // In WHERE, GROUP BY and aggregates alike.
    expect(await hogql("SELECT count() FROM events WHERE person.properties.email = 'a@x'", HIDDEN)).toEqual([[0]]);
    expect(await hogql("SELECT count() FROM events WHERE person.properties.email = 'a@x'", NOTHING_HIDDEN)).toEqual([
      [2],
    ]);
    expect(
      await hogql('SELECT distinct_id, count() FROM events GROUP BY distinct_id ORDER BY distinct_id', HIDDEN),
    ).toEqual([
      ['u1', 2],
      ['u2', 1],
      ['u3', 1],
    ]);
    expect(await hogql('SELECT count(DISTINCT person_id) FROM events', HIDDEN)).toEqual([[1]]);
  });
});

describe('a routed trend with hides', () => {
  const request = { events: [{ id: '$pageview' }], date_from: '2024-03-02', date_to: '2024-03-03', interval: 'day' };
  async function perDay(hidden: LakeHidden, source: LakeSource = { dialect: 'duckdb', files }) {
    const model = parseTrendRequest(request);
    const range = resolveDateRange(model, UTC, NOW);
    const sql = printTrendSql({ projectId: P, model, range, project: UTC, hidden }, source);
    if (source.dialect === 'athena') return sql;
    const rows = await engine.run(P, sql, () => {}, Date.now() + 60_000);
    return rows.map((r) => [String(r.bucket).slice(0, 10), Number(r.value)]);
  }

  it('counts without the deleted rows: 4 and 3 events, 2 and 2 left', async () => {
    expect(await perDay(NOTHING_HIDDEN)).toEqual([
      ['2024-03-02', 4],
      ['2024-03-03', 3],
    ]);
    expect(await perDay(HIDDEN)).toEqual([
      ['2024-03-02', 2],
      ['2024-03-03', 2],
    ]);
  });

  it('prints the same conjunct for Athena, every value a literal', async () => {
    const sql = await perDay(HIDDEN, { dialect: 'athena', database: 'stage_lake', table: 'events' });
    expect(sql).toContain(
      `AND (NOT (("distinct_id" IN ('u2', 'o''neil --x') AND "timestamp" <= TIMESTAMP '2024-03-03 03:00:00.000')))`,
    );
  });
});

it("a settled hide outlives Athena's result reuse: no answer from before a deletion is reused once the SQL text is as it was", () => {
  expect(SETTLED_MS).toBeGreaterThan(RESULT_REUSE.ResultReuseByAgeConfiguration.MaxAgeInMinutes * 60_000);
});
