import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import {
  daysToRead,
  foldNow,
  limitOf,
  rowsToFetch,
  MAX_HOGQL_DAYS,
  placeholders,
  printStatement,
  runStatement,
  timeBounds,
} from '#shared/domain/query/hogql.ts';
import { ValidationError } from '#shared/errors.ts';
import { evaluateRow } from '#shared/hogql/evaluate.ts';
import { parseSelectStatement } from '#shared/hogql/select.ts';
import { HogDate, HogDateTime, type HogValue } from '#shared/hogql/values.ts';
import {
  AthenaClient,
  GetQueryExecutionCommand,
  StartQueryExecutionCommand,
  StopQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { athenaEngine, duckdbEngine, LakeAccessDenied, LakeQueryFailed } from '#shared/lake/engine.ts';
import { dataKey } from '#shared/lake/layout.ts';
import { type LakeEvent, lakeFiles, PROPERTY_COLUMNS } from '#shared/lake/rows.ts';
import { decodeCell } from '#shared/lake/sql/select.ts';
import { ATHENA as ATHENA_DIALECT } from '#shared/lake/sql/dialect.ts';
import type { LakeSource } from '#shared/lake/sql/trends.ts';
import { type HogQLQuery, hogqlQuery } from '#shared/schemas/query/hogql.ts';
import type { ProjectSettings } from '#shared/trends/types.ts';
import { expectTrinoStatement } from '../../support/trino-grammar.ts';

/**
 * HogQLQuery on the lake: the SELECT parser (what it accepts, what it refuses by name), the SQL it
 * prints (Athena pinned, DuckDB run for real over Parquet files of two projects), and a fuzz of
 * hostile texts: each gives rows or a 400, and no text reads another project's rows or another file.
 */
const P = 7;
const OTHER = 8;
const UTC: ProjectSettings = { timezone: 'UTC', week_start_day: 1, test_account_filters: [] };
const NOW = new Date('2024-03-16T12:00:00Z');
/** Every lake file of this test under one folder: the DuckDB sandbox reads only `<ROOT>/events/project_id=7/`. */
const ROOT = mkdtempSync(join(tmpdir(), 'hogql-lake-'));
const engine = duckdbEngine(ROOT);

const parse = (text: string, query: Partial<HogQLQuery> = {}, settings = UTC) =>
  parseSelectStatement(text, 'query', placeholders({ kind: 'HogQLQuery', query: text, ...query }, settings, NOW));

const refusal = (text: string): string => {
  try {
    parse(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).attr).toBe('query');
    return (error as Error).message;
  }
  throw new Error(`accepted: ${text}`);
};

const ATHENA: LakeSource = { dialect: 'athena', database: 'stage_lake', table: 'events' };
const DAYS = { from: '2024-03-01', to: '2024-03-15' };
const ATHENA_TABLE = '"stage_lake"."events"';
/** The statement printed; Athena's held to Trino's grammar and the printer's promises on the way (every pinned text here). */
const print = (
  text: string,
  source: LakeSource,
  settings = UTC,
  limit = 101,
  offset = 0,
  query: Partial<HogQLQuery> = {},
) => {
  const printed = printStatement(
    {
      projectId: P,
      statement: foldNow(parse(text, query, settings), NOW.getTime(), settings.timezone),
      timezone: settings.timezone,
      weekStart: settings.week_start_day,
      days: DAYS,
      limit,
      offset,
    },
    source,
  );
  if (source.dialect === 'athena') expectTrinoStatement(printed.sql, { table: ATHENA_TABLE, projectId: P });
  return printed;
};

describe('the SELECT parser', () => {
  it('reads the grammar: DISTINCT, aliases, table alias, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT, OFFSET', () => {
    const s = parse(
      "SELECT DISTINCT e.event AS name, count() AS c FROM events AS e WHERE e.properties.$browser = 'Chrome' GROUP BY name HAVING c > 1 ORDER BY c DESC, 1 LIMIT 5 OFFSET 2;",
    );
    expect(s.distinct).toBe(true);
    expect(s.columns.map((c) => c.name)).toEqual(['name', 'c']);
    // Aliases are read as their expressions; the table's alias is dropped.
    expect(s.groupBy).toMatchObject([{ kind: 'field', chain: ['event'] }]);
    expect(s.having).toMatchObject({ kind: 'compare', left: { kind: 'call', name: 'count' } });
    expect(s.orderBy).toMatchObject([
      { expr: { kind: 'call', name: 'count' }, direction: 'DESC' },
      { expr: { kind: 'field', chain: ['event'] }, direction: 'ASC' },
    ]);
    expect(s.where).toMatchObject({ kind: 'compare', left: { kind: 'field', chain: ['properties', '$browser'] } });
    expect([s.limit, s.offset]).toEqual([5, 2]);
  });

  it("names unaliased columns as PostHog does (the expression's HogQL)", () => {
    expect(
      parse('select event, count(), uniq(distinct_id) from events group by event').columns.map((c) => c.name),
    ).toEqual(['event', 'count()', 'uniq(distinct_id)']);
  });

  it("applies PostHog's LIMIT default (100) and ceiling (50,000)", () => {
    expect(limitOf(parse('SELECT event FROM events'))).toBe(100);
    expect(limitOf(parse('SELECT event FROM events LIMIT 7'))).toBe(7);
    expect(limitOf(parse('SELECT event FROM events LIMIT 1000000'))).toBe(50_000);
  });

  it('refuses integers past 2^53 in the text and in values (rounded once read), not carrying a neighbour', () => {
    expect(refusal('SELECT event FROM events LIMIT 9007199254740993')).toMatch(/2\^53/);
    expect(refusal('SELECT event FROM events WHERE properties.id = 9007199254740993')).toMatch(/9007199254740993/);
    expect(() => parse('SELECT {big} FROM events', { values: { big: 2 ** 53 + 2 } })).toThrow(
      /the value of \{big\} is beyond/,
    );
    expect(parse('SELECT {big} FROM events', { values: { big: '9007199254740993' } }).columns[0]?.expr).toEqual({
      kind: 'constant',
      value: '9007199254740993',
    });
  });

  it('asks the engine for one row past the page (hasMore), and for none under LIMIT 0', () => {
    expect(limitOf(parse('SELECT event FROM events LIMIT 0'))).toBe(0);
    expect(rowsToFetch(0)).toBe(0);
    expect(rowsToFetch(7)).toBe(8);
    expect(rowsToFetch(limitOf(parse('SELECT event FROM events')))).toBe(101);
  });

  it.each([
    ['SELECT event FROM events JOIN persons ON 1 = 1', /JOINs are not supported/],
    ['SELECT event FROM events e LEFT JOIN persons p ON e.person_id = p.id', /JOINs/],
    ['SELECT event FROM events, persons', /JOINs/],
    ['SELECT (SELECT 1) FROM events', /subqueries/],
    ['SELECT event FROM (SELECT event FROM events)', /subqueries/],
    ['SELECT event FROM events WHERE event IN (SELECT event FROM events)', /subqueries/],
    ['SELECT event FROM events UNION ALL SELECT event FROM events', /UNION is not supported/],
    ['SELECT event FROM events UNION', /UNION is not supported/],
    ['SELECT event FROM events INTERSECT DISTINCT SELECT event FROM events', /INTERSECT is not supported/],
    ['SELECT constructor FROM events UNION constructor SELECT 1', /subqueries are not supported/],
    ['SELECT count() OVER (PARTITION BY event) FROM events', /window functions/],
    ['SELECT id FROM persons', /the table persons/],
    ['SELECT event FROM events_1', /the table events_1/],
    ['SELECT event FROM other.events', /tables other than events/],
    ["SELECT * FROM read_parquet('/etc/passwd')", /"\*"|table functions/],
    ["SELECT event FROM read_parquet('/etc/passwd')", /table functions \(read_parquet\)/],
    ['SELECT number FROM numbers(10)', /table functions/],
    ['SELECT event FROM events SETTINGS max_threads = 1', /SETTINGS/],
    ['SELECT event FROM events FORMAT JSON', /FORMAT/],
    ["SELECT event INTO OUTFILE 'x' FROM events", /INTO/],
    ['SELECT event FROM events; SELECT 1', /multiple statements are not supported/],
    ['SELECT event FROM events; DROP TABLE events', /multiple statements/],
    ['WITH x AS (SELECT 1) SELECT event FROM events', /WITH|subqueries/],
    ['SELECT event FROM events WHERE count() > 1', /aggregate functions are not allowed in WHERE/],
    ['SELECT event, count() FROM events', /event is neither in GROUP BY nor inside an aggregate/],
    ['SELECT sum(count()) FROM events', /inside another aggregate/],
    ['SELECT event FROM events ORDER BY 3', /ORDER BY 3 names no select column/],
    ['SELECT event FROM events LIMIT -1', /LIMIT must be a non-negative integer/],
    ['SELECT event FROM events LIMIT 1, 2', /LIMIT m, n/],
    ['SELECT event FROM events WHERE {nope}', /placeholder \{nope\} has no value/],
    ['SELECT event FROM events WHERE event = {variables.missing}', /variable missing has no value/],
  ])('%s: a 400 naming the construct', (text, message) => {
    expect(refusal(text)).toMatch(message);
  });

  it('reads {filters}, {variables.x} and {values} as PostHog expands them', () => {
    const query: Partial<HogQLQuery> = {
      filters: {
        dateRange: { date_from: '2024-03-02', date_to: '2024-03-05T00:00:00Z' },
        properties: [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }],
        filterTestAccounts: true,
      },
      variables: { v1: { variableId: 'v1', code_name: 'name', value: 'signed up' } },
    };
    const settings: ProjectSettings = {
      ...UTC,
      test_account_filters: [{ key: 'email', value: '@test.com', operator: 'not_icontains', type: 'event' }],
    };
    const text = 'SELECT count() FROM events WHERE {filters} AND event = {variables.name}';
    const s = parse(text, query, settings);
    const sql = printStatement(
      { projectId: P, statement: s, timezone: 'UTC', weekStart: 1, days: DAYS, limit: 101, offset: 0 },
      ATHENA,
    ).sql;
    expectTrinoStatement(sql, { table: ATHENA_TABLE, projectId: P });
    expect(sql).toContain(`("browser" IN ('Chrome'))`);
    expect(sql).toContain(`("timestamp" < TIMESTAMP '2024-03-05 00:00:00.000')`);
    expect(sql).toContain(`("timestamp" >= TIMESTAMP '2024-03-02 00:00:00.000')`);
    expect(sql).toContain(`json_extract_scalar("properties", '$["email"]')`);
    expect(sql).toContain(`("event" = 'signed up')`);
    // The days read follow the bounds: nothing outside [2024-03-02, 2024-03-05] can match.
    expect(timeBounds(s.where, settings)).toEqual({
      from: Date.parse('2024-03-02T00:00:00Z'),
      to: Date.parse('2024-03-05T00:00:00Z'),
    });
    // Without filters, {filters} is TRUE (PostHog's rule).
    expect(parse('SELECT count() FROM events WHERE {filters}').where).toEqual({ kind: 'constant', value: true });
  });

  it('caps what aliases and placeholders expand to (a big alias read many times is a 400, not a huge SQL text)', () => {
    const big = Array.from({ length: 300 }, (_, i) => `event = 'e${i}'`).join(' OR ');
    const reads = Array.from({ length: 40 }, () => 'a').join(' AND ');
    expect(refusal(`SELECT (${big}) AS a FROM events WHERE ${reads}`)).toMatch(/too large once its aliases/);
    const filters = {
      properties: Array.from({ length: 200 }, (_, i) => ({
        key: `k${i}`,
        value: 'v',
        operator: 'exact',
        type: 'event',
      })),
    };
    const many = Array.from({ length: 40 }, () => '{filters}').join(' AND ');
    expect(() => parse(`SELECT count() FROM events WHERE ${many}`, { filters })).toThrow(/too large once its aliases/);
    // Read once, each is fine.
    expect(parse(`SELECT (${big}) AS a FROM events WHERE a`).where).not.toBeNull();
    expect(parse('SELECT count() FROM events WHERE {filters}', { filters }).where).not.toBeNull();
  });

  it('caps the text (20,000 characters), the variables and values (50 each) and the days read (3,700)', () => {
    expect(refusal(`SELECT event FROM events WHERE ${'1 = 1 AND '.repeat(2_000)}1 = 1`)).toMatch(/too long/);
    const variables = Object.fromEntries(
      Array.from({ length: 51 }, (_, i) => [`v${i}`, { code_name: `v${i}`, value: i }]),
    );
    expect(v.safeParse(hogqlQuery, { kind: 'HogQLQuery', query: 'SELECT 1 FROM events', variables }).success).toBe(
      false,
    );
    expect(v.safeParse(hogqlQuery, { kind: 'HogQLQuery', query: 'x'.repeat(20_001) }).success).toBe(false);
    const now = NOW.getTime();
    const years = (n: number) => now - n * 365 * 86_400_000;
    expect(daysToRead(years(1), { from: -Infinity, to: Infinity }, now)).toHaveLength(367);
    expect(() => daysToRead(years(11), { from: -Infinity, to: Infinity }, now)).toThrow(
      new RegExp(`at most ${MAX_HOGQL_DAYS} days`),
    );
    // A WHERE bound keeps an old project's statement within the cap.
    expect(
      daysToRead(
        years(11),
        timeBounds(parse("SELECT event FROM events WHERE timestamp > '2024-03-10'").where, UTC),
        now,
      ),
    ).toHaveLength(8);
    expect(daysToRead(undefined, { from: -Infinity, to: Infinity }, now)).toEqual(['2024-03-16', '2024-03-17']);
  });

  it("reads a person filter in {filters} from the person's properties on the lake (PostHog's persons on events)", () => {
    const printed = print('SELECT count() FROM events WHERE {filters}', ATHENA, UTC, 100, 0, {
      filters: { properties: [{ key: 'email', value: 'a@x.io', operator: 'exact', type: 'person' }] },
    });
    expect(printed.sql).toContain(`json_extract_scalar("person_properties", '$["email"]') IN ('a@x.io')`);
    // A cohort filter is not a person property: still refused.
    expect(() =>
      parse('SELECT count() FROM events WHERE {filters}', {
        filters: { properties: [{ key: 'id', value: 3, type: 'cohort' }] },
      }),
    ).toThrow(ValidationError);
  });
});

describe('the printed SQL', () => {
  it('Athena: pinned, with the project and day predicates first and outside the statement', () => {
    const printed = print(
      "SELECT event, toStartOfDay(timestamp) AS day, count() AS c, uniq(person_id), sum(toFloat(properties.amount)) FROM events WHERE timestamp >= '2024-03-02' AND properties.$browser != 'Safari' GROUP BY event, day HAVING c > 1 ORDER BY c DESC LIMIT 10",
      ATHENA,
      { ...UTC, timezone: 'America/New_York' },
      11,
      5,
    );
    expect(printed.sql).toBe(
      [
        `SELECT "event" AS "c0", CAST(date_trunc('day', at_timezone(with_timezone("timestamp", 'UTC'), 'America/New_York')) AS timestamp) AS "c1", count(*) AS "c2", count(DISTINCT "person_id") AS "c3", sum((CASE WHEN json_extract_scalar("properties", '$["amount"]') IN ('true', 'false') THEN (CASE json_format(json_extract("properties", '$["amount"]')) WHEN 'true' THEN CAST(1 AS double) WHEN 'false' THEN CAST(0 AS double) END) ELSE ${ATHENA_DIALECT.toFloat(`json_extract_scalar("properties", '$["amount"]')`)} END)) AS "c4"`,
        'FROM "stage_lake"."events"',
        `WHERE "project_id" = 7`,
        `  AND "day" BETWEEN '2024-03-01' AND '2024-03-15'`,
        `  AND ((("timestamp" >= TIMESTAMP '2024-03-02 05:00:00.000') AND ("browser" <> 'Safari')))`,
        `GROUP BY "event", CAST(date_trunc('day', at_timezone(with_timezone("timestamp", 'UTC'), 'America/New_York')) AS timestamp)`,
        'HAVING (count(*) > 1)',
        'ORDER BY count(*) DESC',
        'OFFSET 5',
        'LIMIT 11',
      ].join('\n'),
    );
    expect(printed.columns).toEqual(['event', 'day', 'c', 'uniq(person_id)', 'sum(toFloat(properties.amount))']);
    expect(printed.types).toEqual(['String', "DateTime('America/New_York')", 'UInt64', 'UInt64', 'Float64']);
  });

  it.each([
    ['SELECT quantile(0.9)(toFloat(properties.x)) FROM events', /the function quantile/],
    ['SELECT project_id FROM events', /the field project_id/],
    ['SELECT day FROM events', /the field day/],
    ["SELECT event FROM events WHERE timestamp > 'yesterday'", /the date text 'yesterday'/],
  ])('%s: a 400 naming what the lake cannot print', (text, message) => {
    expect(() => print(text, ATHENA)).toThrow(ValidationError);
    expect(() => print(text, ATHENA)).toThrow(message);
  });

  it("prints person.created_at as the person's creation instant: texts compared with it read as instants, buckets in the zone", () => {
    const ny = { ...UTC, timezone: 'America/New_York' };
    const printed = print(
      "SELECT person.created_at, toStartOfDay(person.created_at) FROM events WHERE person.created_at >= '2024-01-01'",
      ATHENA,
      ny,
    );
    expect(printed.sql).toBe(
      [
        `SELECT "person_created_at" AS "c0", CAST(date_trunc('day', at_timezone(with_timezone("person_created_at", 'UTC'), 'America/New_York')) AS timestamp) AS "c1"`,
        'FROM "stage_lake"."events"',
        `WHERE "project_id" = 7`,
        `  AND "day" BETWEEN '2024-03-01' AND '2024-03-15'`,
        `  AND (("person_created_at" >= TIMESTAMP '2024-01-01 05:00:00.000'))`,
        'LIMIT 101',
      ].join('\n'),
    );
    expect(printed.types).toEqual(["DateTime64(6, 'UTC')", "DateTime('America/New_York')"]);
    // The event's ingestion time, the same way.
    expect(print("SELECT created_at FROM events WHERE created_at < '2024-03-05'", ATHENA, ny).sql).toBe(
      [
        `SELECT "created_at" AS "c0"`,
        'FROM "stage_lake"."events"',
        `WHERE "project_id" = 7`,
        `  AND "day" BETWEEN '2024-03-01' AND '2024-03-15'`,
        `  AND (("created_at" < TIMESTAMP '2024-03-05 05:00:00.000'))`,
        'LIMIT 101',
      ].join('\n'),
    );
    // DuckDB: ICU's conversion for any instant; the range's offsets only for the event's own timestamp.
    const duck = print(
      'SELECT toStartOfDay(person.created_at), toStartOfDay(timestamp) FROM events',
      { dialect: 'duckdb', files: ['/x.parquet'] },
      ny,
    );
    expect(duck.sql).toContain(`date_trunc('day', timezone('America/New_York', timezone('UTC', "person_created_at")))`);
    expect(duck.sql).toMatch(/date_trunc\('day', \(CASE WHEN "timestamp" < TIMESTAMP '2024-03-10 07:00:00\.000' THEN/);
  });

  it('decodes cells by type: counts as numbers, timestamps as ISO in the zone, buckets with their offset', () => {
    expect(decodeCell('UInt64', '12', 'UTC')).toBe(12);
    expect(decodeCell('Float64', '1.5', 'UTC')).toBe(1.5);
    expect(decodeCell('Bool', 'true', 'UTC')).toBe(true);
    expect(decodeCell("DateTime64(6, 'UTC')", '2024-03-02 10:00:00.5', 'UTC')).toBe('2024-03-02T10:00:00.500Z');
    expect(decodeCell("DateTime64(6, 'UTC')", '2024-03-02 10:00:00', 'Europe/Paris')).toBe(
      '2024-03-02T11:00:00.000+01:00',
    );
    expect(decodeCell("DateTime('Europe/Paris')", '2024-03-02 00:00:00', 'Europe/Paris')).toBe(
      '2024-03-02T00:00:00.000+01:00',
    );
    expect(decodeCell('String', null, 'UTC')).toBeNull();
  });
});

// -------------------------------------------------------------------------------------------------
// DuckDB for real: project 7's files and project 8's, in one lake folder.

function lakeEvent(
  i: number,
  day: string,
  event: string,
  user: string,
  properties: Record<string, unknown>,
): LakeEvent {
  return {
    uuid: `0190f100-0000-7000-8000-${String(i).padStart(12, '0')}`,
    event,
    timestamp: `${day}T${String(i % 24).padStart(2, '0')}:30:00.000Z`,
    distinct_id: user,
    person_id: null,
    properties,
  };
}

function writeDays(root: string, project: number, events: LakeEvent[], generation = 'g1'): string[] {
  const byDay = new Map<string, LakeEvent[]>();
  for (const e of events) byDay.set(e.timestamp.slice(0, 10), [...(byDay.get(e.timestamp.slice(0, 10)) ?? []), e]);
  return [...byDay].flatMap(([day, list]) =>
    lakeFiles(list).map((body, i) => {
      const path = join(root, dataKey(project, day, generation, i));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      return path;
    }),
  );
}

// Project 7: 3 days. $pageview: Chrome x3 (u1, u2, u1), Safari x1 (u3); signed up: x2 (u1, u2, amount 10 and 5).
// u1's person was created on 2023-07-01 at 04:30 UTC: 00:30 in New York (EDT), months outside the range read.
const U1_CREATED = Date.parse('2023-07-01T04:30:00.000Z');
const OURS: LakeEvent[] = [
  { ...lakeEvent(1, '2024-03-02', '$pageview', 'u1', { $browser: 'Chrome' }), person_created_at: U1_CREATED },
  lakeEvent(2, '2024-03-02', '$pageview', 'u2', { $browser: 'Chrome' }),
  { ...lakeEvent(3, '2024-03-03', '$pageview', 'u1', { $browser: 'Chrome' }), person_created_at: U1_CREATED },
  lakeEvent(4, '2024-03-03', '$pageview', 'u3', { $browser: 'Safari' }),
  // Ingested a day late.
  { ...lakeEvent(5, '2024-03-04', 'signed up', 'u1', { amount: 10 }), created_at: '2024-03-05T05:30:00.250Z' },
  lakeEvent(6, '2024-03-04', 'signed up', 'u2', { amount: 5 }),
];
// Project 8: the same names and days, other numbers: any leak changes every count below.
const THEIRS: LakeEvent[] = Array.from({ length: 9 }, (_, i) =>
  lakeEvent(100 + i, `2024-03-0${2 + (i % 3)}`, i % 2 ? '$pageview' : 'signed up', `x${i}`, {
    $browser: 'Chrome',
    amount: 1000,
  }),
);

let ourFiles: string[];
let allFiles: string[];
beforeAll(() => {
  ourFiles = writeDays(ROOT, P, OURS);
  allFiles = [...ourFiles, ...writeDays(ROOT, OTHER, THEIRS)];
});

async function run(text: string, files = ourFiles, settings = UTC, query: Partial<HogQLQuery> = {}) {
  const statement = foldNow(parse(text, query, settings), NOW.getTime(), settings.timezone);
  const printed = printStatement(
    {
      projectId: P,
      statement,
      timezone: settings.timezone,
      weekStart: settings.week_start_day,
      days: DAYS,
      limit: limitOf(statement),
      offset: statement.offset ?? 0,
    },
    { dialect: 'duckdb', files },
  );
  const rows = await runStatement(engine, P, printed.sql, () => {}, Date.now() + 60_000);
  const names = printed.columns.map((_, i) => `c${i}`);
  return rows.map((r) => names.map((n, i) => decodeCell(printed.types[i]!, r[n] ?? null, settings.timezone)));
}

describe('DuckDB over the lake files: the hand-computed numbers, this project only', () => {
  it('counts by event', async () => {
    const rows = await run('SELECT event, count() AS c, uniq(distinct_id) FROM events GROUP BY event ORDER BY event');
    expect(rows).toEqual([
      ['$pageview', 4, 3],
      ['signed up', 2, 2],
    ]);
  });

  it('a breakdown by property and day, filtered, with HAVING and ORDER BY an alias', async () => {
    const rows = await run(
      "SELECT properties.$browser AS browser, toStartOfDay(timestamp) AS d, count() AS c FROM events WHERE event = '$pageview' AND timestamp >= '2024-03-02' GROUP BY browser, d HAVING c >= 1 ORDER BY d, browser",
    );
    expect(rows).toEqual([
      ['Chrome', '2024-03-02T00:00:00.000Z', 2],
      ['Chrome', '2024-03-03T00:00:00.000Z', 1],
      ['Safari', '2024-03-03T00:00:00.000Z', 1],
    ]);
  });

  it('sum, avg, min, max of a property; rows with timestamps', async () => {
    expect(
      await run(
        "SELECT sum(toFloat(properties.amount)), avg(toFloat(properties.amount)), min(timestamp), max(distinct_id) FROM events WHERE event = 'signed up'",
      ),
    ).toEqual([[15, 7.5, '2024-03-04T05:30:00.000Z', 'u2']]);
    expect(await run("SELECT distinct_id, timestamp FROM events WHERE event = 'signed up' ORDER BY timestamp")).toEqual(
      [
        ['u1', '2024-03-04T05:30:00.000Z'],
        ['u2', '2024-03-04T06:30:00.000Z'],
      ],
    );
  });

  it("time buckets in the project's zone (America/New_York: UTC-5 before March 10)", async () => {
    const ny: ProjectSettings = { ...UTC, timezone: 'America/New_York' };
    expect(
      await run('SELECT toStartOfDay(timestamp) AS d, count() FROM events GROUP BY d ORDER BY d', ourFiles, ny),
    ).toEqual([
      ['2024-03-01T00:00:00.000-05:00', 2],
      ['2024-03-02T00:00:00.000-05:00', 2],
      ['2024-03-04T00:00:00.000-05:00', 2],
    ]);
    // A zone-less date text is the project's midnight: 2024-03-02 05:00 UTC.
    expect(await run("SELECT count() FROM events WHERE timestamp >= '2024-03-02'", ourFiles, ny)).toEqual([[4]]);
  });

  it("person.created_at: the person's instant (null without one), its day in the zone even far outside the range read", async () => {
    const ny: ProjectSettings = { ...UTC, timezone: 'America/New_York' };
    expect(
      await run(
        "SELECT distinct_id, person.created_at, toStartOfDay(person.created_at), count() FROM events WHERE event = '$pageview' GROUP BY distinct_id, person.created_at ORDER BY distinct_id",
        ourFiles,
        ny,
      ),
    ).toEqual([
      // The range's offsets (EST until March 10, 2024) would put this at 23:30 on June 30.
      ['u1', '2023-07-01T00:30:00.000-04:00', '2023-07-01T00:00:00.000-04:00', 2],
      ['u2', null, null, 1],
      ['u3', null, null, 1],
    ]);
    // created_at: the ingestion time; null where the writer was given none.
    expect(
      await run("SELECT uuid, created_at FROM events WHERE event = 'signed up' ORDER BY timestamp", ourFiles, ny),
    ).toEqual([
      [OURS[4]!.uuid, '2024-03-05T00:30:00.250-05:00'],
      [OURS[5]!.uuid, null],
    ]);
    expect(await run("SELECT count() FROM events WHERE created_at >= '2024-03-05'", ourFiles, ny)).toEqual([[1]]);
    expect(await run("SELECT count() FROM events WHERE person.created_at < '2023-07-01 00:31'", ourFiles, ny)).toEqual([
      [2],
    ]);
    expect(await run("SELECT count() FROM events WHERE person.created_at < '2023-07-01 00:30'", ourFiles, ny)).toEqual([
      [0],
    ]);
  });

  it("now() and now() - INTERVAL n unit are the request's instant (the clock), folded before printing", async () => {
    expect(await run('SELECT count() FROM events WHERE timestamp > now() - INTERVAL 14 DAY')).toEqual([[4]]);
    expect(await run('SELECT count() FROM events WHERE timestamp > now() - INTERVAL 1 MONTH')).toEqual([[6]]);
    expect(await run('SELECT now() FROM events LIMIT 1')).toEqual([['2024-03-16T12:00:00.000Z']]);
    const s = foldNow(parse('SELECT event FROM events WHERE timestamp >= now() - INTERVAL 2 WEEK'), NOW.getTime());
    expect(timeBounds(s.where, UTC).from).toBe(Date.parse('2024-03-02T12:00:00Z'));
  });

  it('an interval past its cap is a 400 naming it, folded with now() or printed for the engine, never a NULL', () => {
    const fold = (text: string) => foldNow(parse(text), NOW.getTime());
    const refusedFold = (text: string): string => {
      try {
        fold(text);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).attr).toBe('query');
        return (error as ValidationError).detail;
      }
      throw new Error(`not refused: ${text}`);
    };
    expect(refusedFold('SELECT count() FROM events WHERE timestamp > now() - INTERVAL 999999999999 YEAR')).toMatch(
      /999999999999 years is out of range: at most 400 years either way \(400 years, the span of the dates HogQL represents/,
    );
    expect(refusedFold('SELECT now() - toIntervalDay(1e30) FROM events')).toMatch(/at most 146,097 days/);
    expect(refusedFold("SELECT dateAdd('day', 1e30, timestamp) FROM events")).toMatch(/at most 146,097 days/);
    expect(refusedFold('SELECT event FROM events ORDER BY timestamp + INTERVAL 5000 MONTH')).toMatch(/4,800 months/);
    // Within each cap, but together past year 9999: the folded instant is a 400 too, not a NULL.
    const far = `SELECT now()${' + INTERVAL 400 YEAR'.repeat(20)} FROM events`;
    expect(refusedFold(far)).toMatch(/out of range: dates must fall between 0001-01-01 and 9999-12-31/);
    const s = fold('SELECT event FROM events WHERE timestamp > now() - INTERVAL 400 YEAR');
    expect(timeBounds(s.where, UTC).from).toBe(Date.parse('1624-03-16T12:00:00Z'));
  });

  it("another project's files, were they listed, are refused by DuckDB itself (the sandbox), whatever the predicate", async () => {
    const text = 'SELECT event, count() FROM events GROUP BY event ORDER BY event';
    const refused = await run(text, allFiles).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LakeAccessDenied);
    expect((refused as Error).message).toMatch(/DuckDB: Permission Error: Cannot access file "<path>"/);
    expect(await run(text)).toEqual(await run(text, ourFiles));
  });

  it("DuckDB stops a statement at the caller's deadline (the statement timeout)", async () => {
    const started = Date.now();
    const slow = 'SELECT sum(i * i) FROM range(1000000000000) t(i)';
    await expect(engine.run(P, slow, () => {}, Date.now() + 300)).rejects.toThrow(/did not finish in time/);
    // Generous: an unstopped scan of 10^12 rows takes hours.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('an engine error about the statement is a 400 (a text compared with a number)', async () => {
    await expect(run("SELECT event FROM events WHERE toStartOfDay(event) = 'x'")).rejects.toThrow(ValidationError);
  });
});

describe('the printer wall (issue 35): no text of the query escapes its literal', () => {
  // The attack as a tenant sent it: an alias of -7 negated (once printed `(--7)`, opening a comment),
  // then a string whose line break ends the comment, so the rest of the string ran as SQL: here a
  // UNION over the other project's file, named in a dollar-quoted string (no quote to double).
  const attack = (file: string) =>
    `SELECT -7 AS a, event FROM events WHERE -a = 7 OR event = 'x\\n1)))) UNION ALL SELECT 0, event FROM read_parquet($$${file}$$) --'`;

  it('DuckDB: the attack reads no row of the other project (the string stays one value; -a is 7)', async () => {
    const theirs = allFiles.filter((f) => !ourFiles.includes(f));
    const rows = await run(attack(theirs[0]!));
    // -a = 7 holds for every one of our 6 events; the text matches none of them.
    expect(rows).toHaveLength(OURS.length);
    expect(rows.every(([a]) => a === -7)).toBe(true);
    expect(new Set(rows.map(([, event]) => event))).toEqual(new Set(['$pageview', 'signed up']));
  });

  it('both dialects print the negation and the text so that neither can end early', () => {
    const text = attack('/tmp/x.parquet');
    for (const source of [ATHENA, { dialect: 'duckdb', files: ['/tmp/ours.parquet'] } as LakeSource]) {
      const where = print(text, source).sql.split('\n')[4];
      expect(where).toBe(
        `  AND ((((-((-7))) = 7) OR ("event" = ('x' || chr(10) || '1)))) UNION ALL SELECT 0, event FROM read_parquet($$/tmp/x.parquet$$) --'))))`,
      );
    }
  });
});

describe("Athena (mocked SDK calls): the statement's faults are 400s, the engine's stay 503s", () => {
  const sts = mockClient(STSClient);
  const athena = mockClient(AthenaClient);
  const failing = (reason: string) => {
    sts.reset();
    athena.reset();
    sts.on(AssumeRoleCommand).resolves({
      Credentials: {
        AccessKeyId: 'a',
        SecretAccessKey: 's',
        SessionToken: 't',
        Expiration: new Date(Date.now() + 3.6e6),
      },
    });
    athena.on(StartQueryExecutionCommand).resolves({ QueryExecutionId: 'q-1' });
    athena
      .on(GetQueryExecutionCommand)
      .resolves({ QueryExecution: { Status: { State: 'FAILED', StateChangeReason: reason } } });
    athena.on(StopQueryExecutionCommand).resolves({});
    const settings = { workgroup: 'w', database: 'd', bucket: 'b', region: 'eu-west-1' };
    return athenaEngine({ ...settings, queryRole: 'arn:aws:iam::123456789012:role/q' }, { baseMs: 0, capMs: 0 });
  };
  const sql = () => print('SELECT event FROM events', ATHENA).sql;

  it.each([
    'SYNTAX_ERROR: line 1:8: Cannot apply operator: varchar = integer',
    'INVALID_CAST_ARGUMENT: Cannot cast varchar to double',
    'TYPE_MISMATCH: line 2:3: ...',
  ])('%s: a 400', async (reason) => {
    const error = await runStatement(failing(reason), P, sql(), () => {}, Infinity).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain(reason.slice(0, 20));
  });

  it("the bytes-scanned cutoff is not the statement's fault: 503", async () => {
    const error = await runStatement(
      failing('Query exhausted resources: the bytes scanned limit was exceeded'),
      P,
      sql(),
      () => {},
      Infinity,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LakeQueryFailed);
  });
});

// -------------------------------------------------------------------------------------------------
// Fuzz: hostile texts never give anything but rows or a 400, and never read outside the project's files.

const FRAGMENTS = [
  'SELECT',
  'event',
  'count()',
  'uniq(distinct_id)',
  'FROM',
  'events',
  'events_1',
  'persons',
  'WHERE',
  'GROUP BY',
  'ORDER BY',
  'LIMIT 3',
  'OFFSET 1',
  ',',
  '(',
  ')',
  "'",
  "''",
  '"',
  '`',
  ';',
  '--',
  '/*',
  '*/',
  "read_parquet('/etc/passwd')",
  'project_id = 8',
  'OR 1 = 1',
  "properties.$browser = 'Chrome'",
  "properties['x''y']",
  'person.properties.email',
  '*',
  'events.*',
  'person.*',
  'properties',
  'timestamp + INTERVAL 1 DAY',
  "dateDiff('week', timestamp, now())",
  'today()',
  'toStartOfQuarter(timestamp)',
  'toFloat(properties.amount)',
  '1e308',
  '99999999999999999999999',
  '-0.0',
  'toStartOfDay(timestamp)',
  'now() - INTERVAL 3 DAY',
  'timestamp > now() - INTERVAL 99999999999 YEAR',
  "timestamp > '2024-03-03'",
  '{filters}',
  '{variables.v}',
  'é🙂',
  '\u0000',
  'UNION',
  'JOIN',
  'SETTINGS',
  'AS x',
  'DISTINCT',
  'HAVING count() > 0',
  '((((((((',
  '))))))))',
];

const BASES = [
  'SELECT event, count() FROM events GROUP BY event',
  "SELECT distinct_id FROM events WHERE properties.$browser = 'Chrome'",
  'SELECT count() FROM events WHERE {filters}',
  'SELECT * FROM events',
  "SELECT timestamp - INTERVAL 1 MONTH, dateAdd('day', 2, toDate(timestamp)) FROM events WHERE timestamp >= today() - INTERVAL 30 DAY",
];

const hostile = fc.oneof(
  fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 14 }).map((parts) => parts.join(' ')),
  fc
    .tuple(fc.constantFrom(...BASES), fc.constantFrom(...FRAGMENTS), fc.nat(80))
    .map(
      ([base, frag, at]) => `${base.slice(0, at % (base.length + 1))} ${frag} ${base.slice(at % (base.length + 1))}`,
    ),
  fc.string({ maxLength: 60 }).map((s) => `SELECT ${s} FROM events`),
  fc.nat(200).map((n) => `SELECT ${'('.repeat(n)}1${')'.repeat(n)} FROM events`),
  fc
    .nat(3000)
    .map((n) => `SELECT event FROM events WHERE ${Array.from({ length: n }, () => "event = 'a'").join(' OR ')}`),
);

/** The SQL without its string literals: what is left is the printer's own text. */
const outsideLiterals = (sql: string) => sql.replace(/'(?:[^']|'')*'/g, "''");

describe('fuzz (fixed seed)', () => {
  it("hostile texts: rows or a ValidationError, the source and project predicate always the printer's", async () => {
    const source: LakeSource = { dialect: 'duckdb', files: ourFiles };
    const outcomes = { rows: 0, refused: 0 };
    const texts = fc.sample(hostile, { numRuns: 400, seed: 25 });
    for (const text of texts) {
      let sql: string;
      try {
        const s = parseSelectStatement(
          text,
          'query',
          placeholders(
            { kind: 'HogQLQuery', query: text, variables: { a: { code_name: 'v', value: "x' OR 1=1 --" } } },
            UTC,
            NOW,
          ),
        );
        sql = printStatement(
          {
            projectId: P,
            statement: foldNow(s, NOW.getTime()),
            timezone: 'UTC',
            weekStart: 1,
            days: DAYS,
            limit: 101,
            offset: 0,
          },
          source,
        ).sql;
      } catch (error) {
        expect(error, text).toBeInstanceOf(ValidationError);
        outcomes.refused++;
        continue;
      }
      const own = outsideLiterals(sql);
      expect(own.match(/read_parquet/g), text).toHaveLength(1);
      expect(own, text).not.toMatch(/;|--|\/\*/);
      expect(sql.split('\n')[2], text).toBe(`WHERE "project_id" = ${P}`);
      try {
        await runStatement(engine, P, sql, () => {}, Date.now() + 60_000);
        // The same SQL over both projects' files is refused by DuckDB itself: the sandbox, not only the predicate, keeps project 8 out.
        const both = sql.replace(
          /read_parquet\(\[[^\]]*\]/,
          `read_parquet([${allFiles.map((f) => `'${f}'`).join(', ')}]`,
        );
        await expect(
          runStatement(engine, P, both, () => {}, Date.now() + 60_000),
          text,
        ).rejects.toThrow(LakeAccessDenied);
        outcomes.rows++;
      } catch (error) {
        expect(error, `${text}\n${sql}`).toBeInstanceOf(ValidationError);
        outcomes.refused++;
      }
    }
    // Non-vacuity: both outcomes are reached often.
    expect(outcomes.rows).toBeGreaterThan(40);
    expect(outcomes.refused).toBeGreaterThan(100);
  }, 120_000);
});

describe('SELECT * and person fields', () => {
  it("* and events.* (or the table's alias) expand to PostHog's events fields in its order", () => {
    const names = [
      'uuid',
      'event',
      'properties',
      'timestamp',
      'distinct_id',
      'elements_chain',
      'created_at',
      '$session_id',
      '$window_id',
      '$group_0',
      '$group_1',
      '$group_2',
      '$group_3',
      '$group_4',
    ];
    expect(parse('SELECT * FROM events').columns.map((c) => c.name)).toEqual(names);
    expect(parse('SELECT events.* FROM events').columns.map((c) => c.name)).toEqual(names);
    expect(parse('SELECT e.*, event FROM events e').columns).toHaveLength(15);
    const printed = print('SELECT *, event FROM events', ATHENA);
    expect(printed.columns).toEqual([...names, 'event']);
    expect(printed.types).toEqual([
      'UUID',
      'String',
      'String',
      "DateTime64(6, 'UTC')",
      'String',
      'String',
      "DateTime64(6, 'UTC')",
      ...Array(7).fill('Nullable(String)'),
      'String',
    ]);
  });

  it.each([
    [
      'SELECT person.* FROM events',
      /person\.\* is not supported: select person\.id \(or person_id\) and person\.properties/,
    ],
    ['SELECT p.* FROM events e', /p\.\* is not supported \(only \* and events\.\* are\)/],
    ['SELECT * FROM events e WHERE *', /"\*"/],
  ])('%s: a 400', (text, message) => {
    expect(refusal(text)).toMatch(message);
  });

  it('Athena: properties is the JSON of all properties (the columned ones put back), elements_chain and $window_id from it', () => {
    const { sql, types } = print('SELECT properties, elements_chain, $window_id, person.id FROM events', ATHENA);
    const columned = Object.entries(PROPERTY_COLUMNS);
    expect(sql.split('\n')[0]).toBe(
      `SELECT json_format(CAST(map_concat(CAST(json_parse("properties") AS map(varchar, json)), map_filter(MAP(ARRAY[${columned.map(([k]) => `'${k}'`).join(', ')}], ARRAY[${columned.map(([, c]) => `CAST("${c}" AS json)`).join(', ')}]), (k, v) -> v IS NOT NULL)) AS json)) AS "c0", coalesce(json_extract_scalar("properties", '$["$elements_chain"]'), '') AS "c1", json_extract_scalar("properties", '$["$window_id"]') AS "c2", "person_id" AS "c3"`,
    );
    expect(types).toEqual(['String', 'String', 'Nullable(String)', 'UUID']);
  });

  it('DuckDB: SELECT * gives each event with all its properties as JSON text', async () => {
    const rows = await run("SELECT * FROM events WHERE event = 'signed up' OR distinct_id = 'u3' ORDER BY timestamp");
    const none = [null, null, null, null, null];
    expect(rows).toEqual([
      [
        OURS[3]!.uuid,
        '$pageview',
        '{"$browser":"Safari"}',
        '2024-03-03T04:30:00.000Z',
        'u3',
        '',
        null,
        null,
        null,
        ...none,
      ],
      [
        OURS[4]!.uuid,
        'signed up',
        '{"amount":10}',
        '2024-03-04T05:30:00.000Z',
        'u1',
        '',
        '2024-03-05T05:30:00.250Z',
        null,
        null,
        ...none,
      ],
      [OURS[5]!.uuid, 'signed up', '{"amount":5}', '2024-03-04T06:30:00.000Z', 'u2', '', null, null, null, ...none],
    ]);
  });

  it("DuckDB: person.id and person_id read the lake's person; elements_chain, $window_id and $session_id the properties", async () => {
    const person = '0190f100-0000-7000-8000-00000000abcd';
    const files = writeDays(
      ROOT,
      P,
      [
        {
          ...lakeEvent(1, '2024-03-02', '$autocapture', 'u1', {
            $elements_chain: 'button:text="Buy"',
            $window_id: 'w1',
            $session_id: 's1',
            $browser: 'Firefox',
            n: [1, { a: null }],
          }),
          person_id: person,
        },
      ],
      'person',
    );
    expect(
      await run('SELECT person.id, person_id, elements_chain, $window_id, $session_id, properties FROM events', files),
    ).toEqual([
      [
        person,
        person,
        'button:text="Buy"',
        'w1',
        's1',
        '{"$elements_chain":"button:text=\\"Buy\\"","$window_id":"w1","n":[1,{"a":null}],"$session_id":"s1","$browser":"Firefox"}',
      ],
    ]);
  });
});

describe('person properties on the lake (as the person had them when the day was written)', () => {
  it('DuckDB: person.properties.x reads them; a person filter in {filters} too; an event without a person reads NULL', async () => {
    const files = writeDays(
      ROOT,
      P,
      [
        {
          ...lakeEvent(1, '2024-03-02', 'paid', 'u1', {}),
          person_id: 'p1',
          person_properties: '{"email":"a@x.io","plan":"pro","n":3}',
        },
        { ...lakeEvent(2, '2024-03-02', 'paid', 'u2', {}), person_id: 'p2', person_properties: '{"email":"b@y.io"}' },
        lakeEvent(3, '2024-03-02', 'paid', 'anonymous', {}),
      ],
      'person-props',
    );
    expect(
      await run(
        'SELECT distinct_id, person.properties.email, person.properties.plan, person.properties.n FROM events ORDER BY distinct_id',
        files,
      ),
    ).toEqual([
      ['anonymous', null, null, null],
      ['u1', 'a@x.io', 'pro', '3'],
      ['u2', 'b@y.io', null, null],
    ]);
    expect(
      await run('SELECT distinct_id FROM events WHERE {filters}', files, UTC, {
        filters: { properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }] },
      }),
    ).toEqual([['u1']]);
  });
});

describe('date functions and intervals on the lake, in the project zone (DuckDB against the HogQL evaluator)', () => {
  const ZONES = ['UTC', 'America/New_York', 'Pacific/Auckland'];
  // Each is evaluated per event by shared/hogql's evaluator (ClickHouse's semantics) and run on DuckDB.
  const EXPRESSIONS = [
    'today()',
    'toStartOfYear(timestamp)',
    'toStartOfQuarter(timestamp)',
    'toStartOfMonth(timestamp)',
    'toStartOfWeek(timestamp)',
    'toStartOfWeek(timestamp, 1)',
    'toStartOfWeek(timestamp, 6)',
    // Across New York's DST change (March 10) and Auckland's (April 7): days keep the local time.
    'timestamp + INTERVAL 7 DAY',
    'timestamp - INTERVAL 1 MONTH',
    'timestamp + INTERVAL 36 HOUR',
    'INTERVAL 2 WEEK + timestamp',
    'timestamp + INTERVAL 1 QUARTER',
    'timestamp - INTERVAL 1 YEAR',
    "dateAdd('day', 7, timestamp)",
    "dateSub('hour', 30, timestamp)",
    "dateAdd('month', 1, toDate(timestamp))",
    'toStartOfDay(timestamp) + INTERVAL 1 DAY',
    'today() - INTERVAL 2 WEEK',
    "dateDiff('day', timestamp, now())",
    "dateDiff('week', timestamp, now())",
    "dateDiff('hour', timestamp, now())",
    "dateDiff('second', timestamp, now())",
    "dateDiff('month', toStartOfYear(timestamp), now())",
    "dateDiff('minute', toStartOfDay(timestamp), timestamp)",
    "timestamp >= toDate('2024-03-03')",
    "timestamp < dateAdd('day', 1, toDate('2024-03-02'))",
    'timestamp >= today() - INTERVAL 13 DAY',
    'toStartOfMonth(timestamp) <= timestamp',
  ];
  const normal = (v: HogValue | unknown): unknown =>
    v instanceof HogDateTime
      ? v.ms
      : v instanceof HogDate
        ? new Date(v.days * 86_400_000).toISOString().slice(0, 10)
        : v;

  it.each(ZONES)("%s: every expression gives the evaluator's value for every event", async (timezone) => {
    const settings: ProjectSettings = { ...UTC, timezone };
    const text = `SELECT uuid, ${EXPRESSIONS.join(', ')} FROM events ORDER BY uuid`;
    const statement = foldNow(parse(text, {}, settings), NOW.getTime(), timezone);
    const printed = printStatement(
      { projectId: P, statement, timezone, weekStart: 1, days: DAYS, limit: 100, offset: 0 },
      { dialect: 'duckdb', files: ourFiles },
    );
    const rows = await runStatement(engine, P, printed.sql, () => {}, Date.now() + 60_000);
    const raw = parse(text, {}, settings).columns.slice(1);
    expect(rows).toHaveLength(OURS.length);
    for (const row of rows) {
      const event = OURS.find((e) => e.uuid === row.c0)!;
      raw.forEach((column, i) => {
        const type = printed.types[i + 1]!;
        const cell = decodeCell(type, row[`c${i + 1}`] ?? null, timezone);
        const lake = typeof cell === 'string' && /^DateTime/.test(type) ? Date.parse(cell) : cell;
        const expected = evaluateRow(
          column.expr,
          (chain) => (chain.join('.') === 'timestamp' ? new HogDateTime(Date.parse(event.timestamp), timezone) : null),
          { timezone, now: NOW },
          'query',
        );
        expect(lake, `${EXPRESSIONS[i]} at ${event.timestamp} in ${timezone}`).toEqual(normal(expected));
      });
    }
  });

  it("Athena: pinned (the zone's calendar through at_timezone, boundaries counted on truncated values)", () => {
    const { sql, types } = print(
      "SELECT timestamp + INTERVAL 7 DAY, timestamp - INTERVAL 2 HOUR, dateDiff('week', timestamp, now()), toStartOfQuarter(timestamp), today() FROM events WHERE timestamp >= toStartOfYear(timestamp)",
      ATHENA,
      { ...UTC, timezone: 'America/New_York' },
    );
    const local = `at_timezone(with_timezone("timestamp", 'UTC'), 'America/New_York')`;
    expect(sql.split('\n')[0]).toBe(
      `SELECT CAST(at_timezone(date_add('day', 7, ${local}), 'UTC') AS timestamp) AS "c0", date_add('hour', (-2), "timestamp") AS "c1", date_diff('week', date_trunc('week', CAST(${local} AS timestamp)), date_trunc('week', CAST(${local} AS timestamp))) AS "c2", CAST(CAST(date_trunc('quarter', ${local}) AS timestamp) AS date) AS "c3", DATE '2024-03-16' AS "c4"`.replace(
        `date_trunc('week', CAST(${local} AS timestamp)))`,
        `date_trunc('week', CAST(at_timezone(with_timezone(TIMESTAMP '2024-03-16 12:00:00.000', 'UTC'), 'America/New_York') AS timestamp)))`,
      ),
    );
    expect(sql).toContain(
      `AND (("timestamp" >= CAST(at_timezone(with_timezone(CAST(CAST(CAST(date_trunc('year', ${local}) AS timestamp) AS date) AS timestamp), 'America/New_York'), 'UTC') AS timestamp)))`,
    );
    expect(types).toEqual(["DateTime64(6, 'UTC')", "DateTime64(6, 'UTC')", 'Int64', 'Date', 'Date']);
  });

  it("today() is the request's date in the project's zone, and bounds the days read as a date text does", () => {
    const auckland: ProjectSettings = { ...UTC, timezone: 'Pacific/Auckland' };
    const s = foldNow(
      parse('SELECT event FROM events WHERE timestamp >= today()', {}, auckland),
      NOW.getTime(),
      'Pacific/Auckland',
    );
    // 12:00 UTC on March 16 is 01:00 on March 17 in Auckland (UTC+13): its midnight is 11:00 UTC on March 16.
    expect(timeBounds(s.where, auckland).from).toBe(Date.parse('2024-03-16T11:00:00Z'));
  });

  it.each([
    ["SELECT dateAdd('fortnight', 1, timestamp) FROM events", /dateAdd with the unit 'fortnight'/],
    [
      'SELECT timestamp + INTERVAL toInt(properties.n) DAY FROM events',
      /an interval whose amount is not an integer constant/,
    ],
    ['SELECT today() + INTERVAL 1 HOUR FROM events', /adding hours to a Date/],
    ['SELECT toStartOfWeek(timestamp, 10) FROM events', /toStartOfWeek with a mode other than an integer from 0 to 9/],
    ['SELECT event + INTERVAL 1 DAY FROM events', /date arithmetic on event/],
  ])('%s: a 400 naming what the lake cannot print', (text, message) => {
    expect(() => print(text, ATHENA)).toThrow(message);
  });
});

describe('toFloat of a JSON boolean property (the HogQL evaluator: 1 and 0)', () => {
  const VALUES: unknown[] = [true, false, 'true', ' 1.5 ', 2, null, 'x', [1]];

  it('DuckDB: true 1, false 0, the text "true" NULL, numbers and numeric text as before; as the evaluator gives', async () => {
    const events = VALUES.map((flag, i) => lakeEvent(i + 1, '2024-03-02', 'e', `u${i}`, flag === null ? {} : { flag }));
    const files = writeDays(ROOT, P, events, 'bool');
    const rows = await run(
      'SELECT distinct_id, toFloat(properties.flag), toFloat64OrNull(properties.flag) FROM events ORDER BY timestamp',
      files,
    );
    expect(rows.map((r) => r[1])).toEqual([1, 0, null, 1.5, 2, null, null, null]);
    expect(rows.map((r) => r[2])).toEqual(rows.map((r) => r[1]));
    const expr = parse('SELECT toFloat(properties.flag) FROM events').columns[0]!.expr;
    expect(rows.map((r) => r[1])).toEqual(
      VALUES.map((flag) =>
        evaluateRow(
          expr,
          (chain) => (chain.join('.') === 'properties.flag' ? (flag as HogValue) : null),
          { timezone: 'UTC', now: NOW },
          'query',
        ),
      ).map((v) => (Array.isArray(v) ? null : v)),
    );
    // A sum over them: 1 + 0 + 1.5 + 2.
    expect(await run('SELECT sum(toFloat(properties.flag)) FROM events', files)).toEqual([[4.5]]);
  });

  it('Athena: pinned; a property with its own column is read as text only (the column keeps no JSON type)', () => {
    const { sql } = print('SELECT toFloat(properties.flag), toFloat(properties.$screen_width) FROM events', ATHENA);
    expect(sql.split('\n')[0]).toBe(
      `SELECT (CASE WHEN json_extract_scalar("properties", '$["flag"]') IN ('true', 'false') THEN (CASE json_format(json_extract("properties", '$["flag"]')) WHEN 'true' THEN CAST(1 AS double) WHEN 'false' THEN CAST(0 AS double) END) ELSE ${ATHENA_DIALECT.toFloat(`json_extract_scalar("properties", '$["flag"]')`)} END) AS "c0", ${ATHENA_DIALECT.toFloat('"screen_width"')} AS "c1"`,
    );
  });
});
