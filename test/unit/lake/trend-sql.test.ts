import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { dataKey } from '#shared/lake/layout.ts';
import { type LakeEvent, lakeFiles } from '#shared/lake/rows.ts';
import { ATHENA as ATHENA_DIALECT, DUCKDB, LakeSqlUnsupported, stringLiteral } from '#shared/lake/sql/dialect.ts';
import { DAY_RANGES, dayPredicate, type LakeSource, printTrendSql } from '#shared/lake/sql/trends.ts';
import {
  BREAKDOWN_NULL_VALUE,
  computeTrend,
  parseTrendRequest,
  type ProjectSettings,
  resolveDateRange,
  type TrendEvent,
} from '#shared/trends/index.ts';
import { toNumber } from '#shared/trends/properties.ts';
import { parseNumber } from '#shared/hogql/convert.ts';
import { expectTrinoStatement } from '../../support/trino-grammar.ts';

const ATHENA: LakeSource = { dialect: 'athena', database: 'analytics_lake', table: 'events' };
const ATHENA_TABLE = '"analytics_lake"."events"';
const NOW = new Date('2024-03-16T12:00:00Z');

function project(timezone = 'UTC', week_start_day: 0 | 1 = 1, test_account_filters = [] as never[]): ProjectSettings {
  return { timezone, week_start_day, test_account_filters };
}

/** The trend's SQL; Athena's is held to Trino's grammar and the printer's promises on the way (every pinned text here). */
function sql(request: Record<string, unknown>, settings = project(), source: LakeSource = ATHENA, projectId = 7) {
  const model = parseTrendRequest(request);
  const text = printTrendSql(
    { projectId, model, range: resolveDateRange(model, settings, NOW), project: settings },
    source,
  );
  if (source.dialect === 'athena') expectTrinoStatement(text, { table: ATHENA_TABLE, projectId });
  return text;
}

const WEEK = { date_from: '2024-03-01', date_to: '2024-03-07T23:59:59' };

describe('Athena SQL of a trend (pinned per feature)', () => {
  it('total by day: the project predicate first, then the partitions; whole UTC days need no time bounds, the day partition is the bucket', () => {
    expect(sql({ events: [{ id: '$pageview' }], ...WEEK })).toMatchInlineSnapshot(`
      "SELECT 0 AS series, CAST(NULL AS varchar) AS breakdown, CAST(CAST("day" AS date) AS timestamp) AS bucket, count(*) AS value, count(*) AS events
      FROM "analytics_lake"."events"
      WHERE "project_id" = 7
        AND "day" BETWEEN '2024-03-01' AND '2024-03-07'
        AND "event" = '$pageview'
      GROUP BY 1, 2, 3
      ORDER BY 1, 2, 3"
    `);
  });

  it('a range that starts or ends inside a UTC day keeps that bound on the timestamp; a zone off UTC buckets the timestamp', () => {
    const exact = { events: [{ id: '$pageview' }], explicit_date: true };
    const from = sql({ ...exact, date_from: '2024-03-01T06:00:00', date_to: '2024-03-07T23:59:59.999' });
    expect(from).toContain(`"timestamp" >= TIMESTAMP '2024-03-01 06:00:00.000'`);
    expect(from).not.toContain(`"timestamp" <=`);
    expect(from).toContain(`CAST(CAST("day" AS date) AS timestamp) AS bucket`);
    const to = sql({ ...exact, date_from: '2024-03-01', date_to: '2024-03-07T12:00:00' });
    expect(to).not.toContain(`"timestamp" >=`);
    expect(to).toContain(`"timestamp" <= TIMESTAMP '2024-03-07 12:00:00.000'`);
    // Local midnights in New York are 05:00 UTC: both bounds, and the bucket from the timestamp in the zone.
    const zoned = sql({ events: [{ id: '$pageview' }], ...WEEK }, project('America/New_York'));
    expect(zoned).toContain(`"timestamp" >= TIMESTAMP '2024-03-01 05:00:00.000'`);
    expect(zoned).toContain(`"timestamp" <= TIMESTAMP '2024-03-08 04:59:59.999'`);
    expect(zoned).toContain(`at_timezone(with_timezone("timestamp", 'UTC'), 'America/New_York')`);
    // A zone at UTC's offset all through the range (London in winter) reads the day partition too.
    expect(sql({ events: [{ id: '$pageview' }], ...WEEK }, project('Europe/London'))).toContain(
      `CAST(CAST("day" AS date) AS timestamp) AS bucket`,
    );
    // Hours always come from the timestamp.
    expect(sql({ events: [{ id: '$pageview' }], ...WEEK, interval: 'hour' })).toContain(
      `CAST(date_trunc('hour', at_timezone(with_timezone("timestamp", 'UTC'), 'UTC')) AS timestamp) AS bucket`,
    );
  });

  it('dau counts exact distinct persons (the distinct id where none)', () => {
    expect(sql({ events: [{ id: '$pageview', math: 'dau' }], ...WEEK })).toContain(
      'count(DISTINCT coalesce("person_id", "distinct_id")) AS value',
    );
    expect(sql({ events: [{ id: '$pageview', math: 'dau' }], ...WEEK })).not.toMatch(/approx/i);
  });

  it('time zones: UTC instants read as the project’s wall clock, truncated there', () => {
    expect(
      sql({ events: [{ id: 'e' }], ...WEEK, interval: 'hour', date_to: '2024-03-02' }, project('Asia/Kolkata')),
    ).toContain(
      `CAST(date_trunc('hour', at_timezone(with_timezone("timestamp", 'UTC'), 'Asia/Kolkata')) AS timestamp) AS bucket`,
    );
  });

  it('DuckDB: the zone’s offsets over the range as arithmetic (a CASE at each DST change), UTC as it is', () => {
    const duck: LakeSource = { dialect: 'duckdb', files: ['/lake/x.parquet'] };
    const request = { events: [{ id: 'e' }], date_from: '2024-03-09', date_to: '2024-03-11' };
    expect(sql(request, project('America/New_York'), duck)).toContain(
      `date_trunc('day', (CASE WHEN "timestamp" < TIMESTAMP '2024-03-10 07:00:00.000' THEN ("timestamp" + INTERVAL '-18000 seconds') ELSE ("timestamp" + INTERVAL '-14400 seconds') END)) AS bucket`,
    );
    expect(sql(request, project('UTC'), duck)).toContain(`CAST("day" AS TIMESTAMP) AS bucket`);
    expect(sql({ ...request, interval: 'hour' }, project('UTC'), duck)).toContain(
      `date_trunc('hour', "timestamp") AS bucket`,
    );
  });

  it('weeks start on the project’s day: Monday as Trino’s date_trunc, Sunday shifted by a day', () => {
    expect(sql({ events: [{ id: 'e' }], ...WEEK, interval: 'week' }, project('Asia/Kolkata', 1))).toContain(
      `CAST(date_trunc('week', at_timezone(with_timezone("timestamp", 'UTC'), 'Asia/Kolkata')) AS timestamp) AS bucket`,
    );
    expect(sql({ events: [{ id: 'e' }], ...WEEK, interval: 'week' }, project('Asia/Kolkata', 0))).toContain(
      `CAST(date_add('day', -1, date_trunc('week', date_add('day', 1, at_timezone(with_timezone("timestamp", 'UTC'), 'Asia/Kolkata')))) AS timestamp) AS bucket`,
    );
    // In UTC, from the day partition.
    expect(sql({ events: [{ id: 'e' }], ...WEEK, interval: 'week' }, project('UTC', 1))).toContain(
      `CAST(date_trunc('week', CAST("day" AS date)) AS timestamp) AS bucket`,
    );
    expect(sql({ events: [{ id: 'e' }], ...WEEK, interval: 'week' }, project('UTC', 0))).toContain(
      `CAST(date_add('day', -1, date_trunc('week', date_add('day', 1, CAST("day" AS date)))) AS timestamp) AS bucket`,
    );
    expect(sql({ events: [{ id: 'e' }], ...WEEK, interval: 'month' }, project('UTC', 0))).toContain(
      `CAST(date_trunc('month', CAST("day" AS date)) AS timestamp) AS bucket`,
    );
  });

  it('DuckDB: a text column IN texts as list_contains (evaluated per dictionary entry), Athena’s IN as it is', () => {
    const duck: LakeSource = { dialect: 'duckdb', files: ['/lake/x.parquet'] };
    const request = {
      events: [{ id: 'e' }],
      ...WEEK,
      properties: [
        { key: '$browser', operator: 'exact', value: ['Chrome', "O'Brien"] },
        { key: 'plan', operator: 'is_not', value: 'free' },
      ],
    };
    expect(sql(request, project(), duck)).toContain(
      `list_contains(['Chrome', 'O''Brien'], "browser") AND (("plan_text" IS NULL)`.replace(
        '"plan_text"',
        `json_extract_string("properties", '/plan')`,
      ),
    );
    expect(sql(request, project(), duck)).toContain(
      `(NOT list_contains(['free'], json_extract_string("properties", '/plan')))`,
    );
    expect(sql(request)).toContain(`("browser" IN ('Chrome', 'O''Brien'))`);
    // Not a column, or not only texts: IN as it is.
    const hogql = sql(
      {
        events: [{ id: 'e' }],
        ...WEEK,
        properties: [
          { type: 'hogql', key: "lower(properties.$browser) IN ('chrome') AND properties.$os IN ('Mac', 1)" },
        ],
      },
      project(),
      duck,
    );
    expect(hogql).toContain(`(lower("browser") IN ('chrome'))`);
    expect(hogql).toContain(`("os" IN ('Mac', 1))`);
    expect(hogql).not.toContain('list_contains');
  });

  it('event property filters: own columns for frequent properties, JSON for the rest; each operator', () => {
    const text = sql({
      events: [{ id: '$pageview' }],
      ...WEEK,
      properties: [
        { key: '$browser', operator: 'exact', value: ['Chrome', "O'Brien"] },
        { key: 'plan', operator: 'is_not', value: 'free' },
        { key: '$current_url', operator: 'icontains', value: '/pricing' },
        { key: 'amount', operator: 'gt', value: 10 },
        { key: 'amount', operator: 'between', value: [1, 5] },
        { key: '$os', operator: 'is_set' },
        { key: 'ref', operator: 'regex', value: '^g(oogle)?' },
      ],
    });
    expect(text.split('\n').at(-3)).toMatchInlineSnapshot(
      `"  AND (((("browser" IN ('Chrome', 'O''Brien')) AND ((json_extract_scalar("properties", '$["plan"]') IS NULL) OR (NOT (json_extract_scalar("properties", '$["plan"]') IN ('free')))) AND (("current_url" IS NOT NULL) AND ((strpos(lower("current_url"), lower('/pricing')) > 0))) AND (nullif(nullif((CASE WHEN regexp_extract(json_extract_scalar("properties", '$["amount"]'), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') = json_extract_scalar("properties", '$["amount"]') THEN try_cast(json_extract_scalar("properties", '$["amount"]') AS double) WHEN regexp_extract(trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') = trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))) THEN try_cast(trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))) AS double) END), infinity()), -infinity()) > 10) AND (nullif(nullif((CASE WHEN regexp_extract(json_extract_scalar("properties", '$["amount"]'), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') = json_extract_scalar("properties", '$["amount"]') THEN try_cast(json_extract_scalar("properties", '$["amount"]') AS double) WHEN regexp_extract(trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') = trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))) THEN try_cast(trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))) AS double) END), infinity()), -infinity()) BETWEEN 1 AND 5) AND ("os" IS NOT NULL) AND ((json_extract_scalar("properties", '$["ref"]') IS NOT NULL) AND (regexp_like(json_extract_scalar("properties", '$["ref"]'), '^g(oogle)?'))))))"`,
    );
  });

  it('an event-property breakdown and a HogQL filter', () => {
    const text = sql({
      events: [{ id: '$pageview' }],
      ...WEEK,
      breakdown: 'plan',
      properties: [{ type: 'hogql', key: "properties.$browser = 'Chrome' OR properties.plan = 'pro'" }],
    });
    expect(text).toContain(`SELECT 0 AS series, json_extract_scalar("properties", '$["plan"]') AS breakdown`);
    expect(text).toContain(`(("browser" = 'Chrome') OR (json_extract_scalar("properties", '$["plan"]') = 'pro'))`);
  });

  it('no filter can widen the project predicate: every input is inside parentheses after it', () => {
    const text = sql({
      events: [{ id: 'e' }],
      ...WEEK,
      properties: [{ type: 'hogql', key: 'true OR 1 = 1' }],
    });
    const where = text.slice(text.indexOf('WHERE'));
    expect(where.startsWith('WHERE "project_id" = 7\n  AND ')).toBe(true);
    expect(where).toMatch(/\n {2}AND \(+TRUE OR \(1 = 1\)\)+\nGROUP BY/);
    // Quotes in names and values stay literals.
    const hostile = sql({ events: [{ id: "e' OR project_id <> 7 --" }], ...WEEK });
    expect(hostile).toContain(`"event" = 'e'' OR project_id <> 7 --'`);
  });

  it('only the lake’s days: Athena prunes to their partitions (consecutive days as one range), not the whole range', () => {
    const model = parseTrendRequest({ events: [{ id: '$pageview' }], ...WEEK });
    const settings = project();
    const range = resolveDateRange(model, settings, NOW);
    const days = ['2024-03-05', '2024-03-01', '2024-03-02', '2024-03-03', '2024-03-07'];
    const pruned = printTrendSql({ projectId: 7, model, range, project: settings, days }, ATHENA);
    expectTrinoStatement(pruned, { table: ATHENA_TABLE, projectId: 7 });
    expect(pruned).toMatchInlineSnapshot(`
      "SELECT 0 AS series, CAST(NULL AS varchar) AS breakdown, CAST(CAST("day" AS date) AS timestamp) AS bucket, count(*) AS value, count(*) AS events
      FROM "analytics_lake"."events"
      WHERE "project_id" = 7
        AND ("day" BETWEEN '2024-03-01' AND '2024-03-03' OR "day" = '2024-03-05' OR "day" = '2024-03-07')
        AND "event" = '$pageview'
      GROUP BY 1, 2, 3
      ORDER BY 1, 2, 3"
    `);
    expect(dayPredicate(['2024-03-04'])).toBe(`"day" = '2024-03-04'`);
    // Month and year ends are consecutive days too.
    expect(dayPredicate(['2024-03-01', '2024-02-29', '2023-12-31', '2024-01-01'])).toBe(
      `("day" BETWEEN '2023-12-31' AND '2024-01-01' OR "day" BETWEEN '2024-02-29' AND '2024-03-01')`,
    );
    expect(() => dayPredicate(["2024-03-01' OR TRUE --"])).toThrow(LakeSqlUnsupported);
  });

  it(`caps the partition predicate at ${DAY_RANGES} ranges: the closest ranges are joined (the days between are read, and dropped by bucket)`, () => {
    // Every other day of a year: 183 single days.
    const days = Array.from({ length: 183 }, (_, i) =>
      new Date(Date.UTC(2024, 0, 1 + 2 * i)).toISOString().slice(0, 10),
    );
    const text = dayPredicate(days);
    expect(text.split(' OR ')).toHaveLength(DAY_RANGES);
    expect(text.length).toBeLessThan(60 * DAY_RANGES);
    // Still every day asked for, and nothing before the first or after the last.
    const ranges = [...text.matchAll(/'(\d{4}-\d{2}-\d{2})'(?: AND '(\d{4}-\d{2}-\d{2})')?/g)].map((m) => [
      m[1]!,
      m[2] ?? m[1]!,
    ]);
    for (const day of days) expect(ranges.some(([a, b]) => a! <= day && day <= b!)).toBe(true);
    expect(ranges[0]![0]).toBe(days[0]);
    expect(ranges.at(-1)![1]).toBe(days.at(-1));
  });

  it('sum, min, max and avg of an event property: the text read as the engine reads a number (decimal, JavaScript’s trim, finite)', () => {
    const value = (math: string) =>
      sql({ events: [{ id: '$pageview', math, math_property: 'amount' }], ...WEEK })
        .split('\n')[0]!
        .match(/ AS bucket, (.*) AS value, count\(\*\) AS events$/)![1];
    // The bare decimal first (one regexp, no trim); other texts trimmed as JavaScript trims; whole-text
    // matches without anchors; infinities NULL.
    const sum = value('sum')!;
    expect(sum).toMatchInlineSnapshot(
      `"sum(nullif(nullif((CASE WHEN regexp_extract(json_extract_scalar("properties", '$["amount"]'), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') = json_extract_scalar("properties", '$["amount"]') THEN try_cast(json_extract_scalar("properties", '$["amount"]') AS double) WHEN regexp_extract(trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') = trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))) THEN try_cast(trim(json_extract_scalar("properties", '$["amount"]'), (chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288) || chr(65279))) AS double) END), infinity()), -infinity()))"`,
    );
    const number = sum.slice('sum('.length, -1);
    expect(value('min')).toBe(`min(${number})`);
    expect(value('max')).toBe(`max(${number})`);
    // The engine's division: sum over the count of numbers (no engine-specific avg).
    expect(value('avg')).toBe(`(sum(${number}) / count(${number}))`);
    // A property with its own column reads the column.
    expect(sql({ events: [{ id: 'e', math: 'max', math_property: '$screen_width' }], ...WEEK })).toContain(
      `max(nullif(nullif((CASE WHEN regexp_extract("screen_width", `,
    );
  });

  it('refuses, by name, what the lake cannot answer exactly', () => {
    const refused = (request: Record<string, unknown>) => {
      try {
        sql({ ...WEEK, ...request });
      } catch (e) {
        expect(e).toBeInstanceOf(LakeSqlUnsupported);
        return (e as LakeSqlUnsupported).construct;
      }
      return 'printed';
    };
    expect(refused({ events: [{ id: 'e', math: 'weekly_active' }] })).toBe('the math weekly_active');
    expect(refused({ events: [{ id: 'e', math: 'p90', math_property: 'x' }] })).toBe('the math p90');
    expect(
      refused({ events: [{ id: 'e', math: 'sum', math_property: 'age', math_property_type: 'person_properties' }] }),
    ).toBe('the math sum of a person property');
    expect(refused({ events: [{ id: 'e' }], compare: true })).toBe('compare');
    expect(refused({ events: [{ id: 'e', properties: [{ key: 'email', value: 'a', type: 'person' }] }] })).toBe(
      'a person property filter',
    );
    expect(
      refused({ events: [{ id: 'e' }], properties: [{ type: 'hogql', key: 'person.properties.email = 1' }] }),
    ).toBe('the field person.properties.email');
    expect(refused({ events: [{ id: 'e' }], properties: [{ type: 'hogql', key: 'properties.amount % 2 = 1' }] })).toBe(
      'the operator %',
    );
  });
});

// ---------------------------------------------------------------------------------------------
// DuckDB over lake files, against the columnar engine

const duck = await (await DuckDBInstance.create(':memory:')).connect();
afterAll(() => duck.closeSync());

/** The events as the lake keeps them: slice 1's writer, one folder per (project, UTC day). */
function writeLake(root: string, projectId: number, events: LakeEvent[]): string[] {
  const byDay = new Map<string, LakeEvent[]>();
  for (const e of events) byDay.set(e.timestamp.slice(0, 10), [...(byDay.get(e.timestamp.slice(0, 10)) ?? []), e]);
  return [...byDay].flatMap(([day, list]) =>
    lakeFiles(list).map((body, i) => {
      const path = join(root, dataKey(projectId, day, 'g1', i));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      return path;
    }),
  );
}

const localText = (at: Date, tz: string) => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
};

async function compare(
  request: Record<string, unknown>,
  events: LakeEvent[],
  settings: ProjectSettings,
): Promise<{ lake: Map<string, number>; engine: Map<string, number> }> {
  const root = mkdtempSync(join(tmpdir(), 'lake-sql-'));
  const projectId = 7;
  // Another project's events in the same lake (same uuids): the predicate keeps them out.
  const files = [...writeLake(root, projectId, events), ...writeLake(root, 8, events)];
  const model = parseTrendRequest(request);
  const range = resolveDateRange(model, settings, NOW);
  const text = printTrendSql({ projectId, model, range, project: settings }, { dialect: 'duckdb', files });
  const rows = await (await duck.runAndReadAll(text)).getRowObjectsJson();
  const lake = new Map<string, number>();
  // A zero (a bucket whose values sum to 0, or hold no number) is the engine's absent cell.
  for (const r of rows) if (Number(r.value)) lake.set(`${r.series}|${r.breakdown}|${r.bucket}`, Number(r.value));
  const trendEvents: TrendEvent[] = events.map((e) => ({
    ...e,
    person_id: e.person_id ?? e.distinct_id,
    person_properties: {},
  }));
  const response = computeTrend(model, { events: trendEvents, project: settings, actions: [], now: NOW });
  const engine = new Map<string, number>();
  for (const s of response.result) {
    const b = s.breakdown_value === undefined || s.breakdown_value === BREAKDOWN_NULL_VALUE ? null : s.breakdown_value;
    s.data.forEach((v, i) => {
      if (v) engine.set(`${s.action?.order ?? 0}|${b}|${localText(range.buckets[i]!, range.timezone)}`, v);
    });
  }
  return { lake, engine };
}

const NAMES = ['$pageview', 'signed up', 'clicked'];
const event = fc.record({
  event: fc.constantFrom(...NAMES),
  // 2024-03-01 .. 2024-03-15 (US DST starts on the 10th).
  t: fc.integer({ min: Date.parse('2024-03-01T00:00:00Z'), max: Date.parse('2024-03-15T23:59:59Z') }),
  user: fc.integer({ min: 0, max: 9 }),
  browser: fc.constantFrom('Chrome', 'Safari', 'Firefox', undefined),
  plan: fc.constantFrom('free', 'pro', 'Pro plan', undefined),
  amount: fc.oneof(
    fc.integer({ min: 0, max: 100 }),
    fc.constant(undefined),
    fc.constant('42'),
    // Halves add up exactly in any order (a sum's order differs between the engines).
    fc.integer({ min: -40, max: 40 }).map((n) => n / 2),
  ),
});

const stringFilter = fc.record({
  key: fc.constantFrom('$browser', 'plan'),
  operator: fc.constantFrom('exact', 'is_not', 'icontains', 'not_icontains', 'is_set', 'is_not_set'),
  value: fc.constantFrom('Chrome', 'pro', 'Safari', 'free', 'o'),
});
const numberFilter = fc.record({
  key: fc.constant('amount'),
  operator: fc.constantFrom('gt', 'lt', 'gte', 'lte'),
  value: fc.integer({ min: 0, max: 100 }),
});
const filters = fc.array(fc.oneof(stringFilter, numberFilter), { maxLength: 2 });

const trendRequest = fc
  .record({
    series: fc.array(
      fc
        .record({
          id: fc.constantFrom(...NAMES, null),
          math: fc.constantFrom('total', 'dau', 'sum', 'min', 'max', 'avg'),
          properties: filters,
        })
        .map((s) => (s.math === 'total' || s.math === 'dau' ? s : { ...s, math_property: 'amount' })),
      { minLength: 1, maxLength: 2 },
    ),
    properties: filters,
    breakdown: fc.constantFrom(undefined, '$browser', 'plan', 'amount'),
    interval: fc.constantFrom('hour', 'day', 'week', 'month'),
    start: fc.integer({ min: 0, max: 12 }),
    length: fc.integer({ min: 1, max: 3 }),
  })
  .map((r) => {
    const from = new Date(Date.parse('2024-03-01T00:00:00Z') + r.start * 86_400_000);
    const to = new Date(from.getTime() + r.length * 86_400_000 - 1000);
    return {
      events: r.series,
      properties: r.properties,
      interval: r.interval,
      date_from: from.toISOString().slice(0, 19),
      date_to: to.toISOString().slice(0, 19),
      breakdown_limit: 100,
      ...(r.breakdown ? { breakdown: r.breakdown } : {}),
    };
  });

describe('DuckDB over lake files equals the columnar engine', () => {
  it('a breakdown by day in a zone with DST, by hand', async () => {
    const events: LakeEvent[] = [
      ['2024-03-10T06:30:00Z', 'Chrome'],
      ['2024-03-10T07:30:00Z', 'Chrome'],
      ['2024-03-10T08:30:00Z', undefined],
      ['2024-03-11T03:59:00Z', 'Safari'],
    ].map(([t, b], i) => ({
      uuid: `u${i}`,
      event: '$pageview',
      timestamp: t!,
      distinct_id: `d${i % 2}`,
      person_id: null,
      properties: b ? { $browser: b } : {},
    }));
    const { lake, engine } = await compare(
      { events: [{ id: '$pageview' }], breakdown: '$browser', date_from: '2024-03-09', date_to: '2024-03-11' },
      events,
      project('America/New_York'),
    );
    expect(lake).toEqual(engine);
    expect(lake.get('0|Chrome|2024-03-10 00:00:00')).toBe(2);
    expect(lake.get('0|Safari|2024-03-10 00:00:00')).toBe(1);
  });

  it('buckets from the day partition (UTC, or a zone at UTC’s offset) and bounds inside a day: day, week from Sunday or Monday, month', async () => {
    // Every 5 hours from Feb 26 to Mar 14: across a month's and weeks' starts, 4-5 events a day.
    const events: LakeEvent[] = Array.from({ length: 80 }, (_, i) => ({
      uuid: `u${i}`,
      event: '$pageview',
      timestamp: new Date(Date.parse('2024-02-26T01:00:00Z') + i * 5 * 3_600_000).toISOString(),
      distinct_id: `d${i % 7}`,
      person_id: null,
      properties: { $browser: ['Chrome', 'Safari', 'Firefox'][i % 3] },
    }));
    let cells = 0;
    for (const tz of ['UTC', 'Europe/London'])
      for (const weekStart of [0, 1] as const)
        for (const interval of ['day', 'week', 'month'])
          for (const range of [
            { date_from: '2024-02-27', date_to: '2024-03-12' },
            // Explicit times inside days: the first and last day are cut by the timestamp bounds.
            { date_from: '2024-02-27T07:30:00', date_to: '2024-03-12T13:00:00', explicit_date: true },
          ]) {
            const request = {
              events: [{ id: '$pageview' }, { id: '$pageview', math: 'dau' }],
              properties: [{ key: '$browser', operator: 'exact', value: ['Chrome', 'Safari'] }],
              breakdown: '$browser',
              interval,
              ...range,
            };
            const { lake, engine } = await compare(request, events, project(tz, weekStart));
            expect(lake, `${tz} ${weekStart} ${interval} ${range.date_from}`).toEqual(engine);
            cells += lake.size;
          }
    expect(cells).toBeGreaterThan(100);
  });

  it('numbers as the engine reads them: sum/min/max/avg and numeric filters over texts both casts read differently', async () => {
    // Each text is one event on its own day: any that one side reads as a number and the other not shows.
    const values: unknown[] = [
      ' 5',
      '\t6\u3000',
      '\u00a07.5\u2028',
      '1_000',
      'inf',
      '-Infinity',
      'NaN',
      '1e400',
      '0x10',
      '5d',
      '5.',
      '.5',
      '+3',
      '-2e1',
      '\u0661',
      '',
      true,
      false,
      null,
      2.5,
      1e21,
      [3],
      { n: 3 },
    ];
    const events: LakeEvent[] = values.map((amount, i) => ({
      uuid: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      event: '$pageview',
      timestamp: new Date(Date.UTC(2024, 2, 1, i)).toISOString(),
      distinct_id: `d${i}`,
      person_id: null,
      properties: { amount, $screen_width: amount },
    }));
    const request = (math: string, key = 'amount') => ({
      events: [{ id: '$pageview', math, math_property: key }],
      interval: 'hour',
      date_from: '2024-03-01',
      date_to: '2024-03-01T23:59:59',
    });
    const nonzero = (m: Map<string, number>) => new Map([...m].filter(([, v]) => v !== 0));
    for (const math of ['sum', 'min', 'max', 'avg']) {
      for (const key of ['amount', '$screen_width']) {
        const { lake, engine } = await compare(request(math, key), events, project());
        expect(nonzero(lake)).toEqual(engine);
      }
    }
    // The engine reads 9 of them as numbers (' 5', '\t6 ', ' 7.5 ', '5.', '.5', '+3', '-2e1', 2.5, 1e21).
    const { lake } = await compare(request('sum'), events, project());
    expect([...lake.values()].filter((v) => v !== 0)).toHaveLength(9);
    for (const operator of ['gt', 'lt']) {
      const filtered = {
        events: [{ id: '$pageview' }],
        properties: [{ key: 'amount', operator, value: 0 }],
        date_from: '2024-03-01',
        date_to: '2024-03-01T23:59:59',
      };
      const { lake: l, engine: e } = await compare(filtered, events, project());
      expect(l).toEqual(e);
    }
  });

  it('both dialects’ toNumber read each text as the engine’s toNumber (the Athena form run on DuckDB: its logic, not joni)', async () => {
    const texts = [
      ...[' 5', '\t6\u3000', '\u00a07.5\u2028', '\ufeff8\u0085', '5\n', '\n5', '5\n6', '\u00015', '5\u0001'],
      ...['1_000', 'inf', '-Infinity', 'NaN', '1e400', '-1e400', '1e308', '0x10', '5d', '5.', '.5', '.', '+3', '-2e1'],
      ...['1e', '1.2.3', '\u0661', '', ' ', 'true', '12345678901234567890', '1.5e-7', '00.10', '-0'],
    ];
    const list = texts.map((t) => stringLiteral(t)).join(', ');
    for (const dialect of [DUCKDB, ATHENA_DIALECT]) {
      const expr = dialect.toNumber('x').replaceAll('infinity()', "CAST('Infinity' AS DOUBLE)");
      const rows = await (
        await duck.runAndReadAll(`SELECT x, ${expr} AS n FROM (SELECT unnest([${list}]) AS x)`)
      ).getRowObjectsJson();
      expect(rows.map((r) => (r.n === null ? null : Number(r.n)))).toEqual(texts.map((t) => toNumber(t)));
    }
  });

  it('both dialects’ toFloat read each text as HogQL’s toFloat (parseNumber; the Athena form run on DuckDB)', async () => {
    const texts = [
      ...[
        ' 5',
        '\t6\u3000',
        '\u00a07.5\u2028',
        '5\n6',
        '1_000',
        'inf',
        '+INF',
        '-Infinity',
        '+infinity',
        'NaN',
        ' nan ',
      ],
      ...['1e400', '-1e400', '0x10', '5d', '5.', '.5', '.', '+3', '-2e1', '1e', '', ' ', 'true', '-0'],
      ...[`1${'0'.repeat(63)}`, `1${'0'.repeat(64)}`, ` ${'1'.repeat(64)} `, '\u0661'],
    ];
    const list = texts.map((t) => stringLiteral(t)).join(', ');
    for (const dialect of [DUCKDB, ATHENA_DIALECT]) {
      const expr = dialect
        .toFloat('x')
        .replaceAll('infinity()', "CAST('Infinity' AS DOUBLE)")
        .replaceAll('nan()', "CAST('NaN' AS DOUBLE)");
      const rows = await (
        await duck.runAndReadAll(`SELECT x, ${expr} AS n FROM (SELECT unnest([${list}]) AS x)`)
      ).getRowObjectsJson();
      expect(rows.map((r) => (r.n === null ? null : Number(r.n)))).toEqual(texts.map((t) => parseNumber(t)));
    }
  });

  it('random trends (total, dau, sum/min/max/avg, event-property filters, breakdown, hour/day/week/month) give equal numbers', async () => {
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 60, maxLength: 200 }),
        trendRequest,
        fc.constantFrom('UTC', 'America/New_York', 'Asia/Kolkata'),
        fc.constantFrom(0 as const, 1 as const),
        async (raw, request, tz, weekStart) => {
          const events: LakeEvent[] = raw.map((e, i) => ({
            uuid: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
            event: e.event,
            timestamp: new Date(e.t).toISOString(),
            distinct_id: `user-${e.user}`,
            // Persons merge some distinct ids; the others have none in the lake (null).
            person_id: e.user < 6 ? `person-${e.user % 3}` : null,
            properties: Object.fromEntries(
              Object.entries({ $browser: e.browser, plan: e.plan, amount: e.amount }).filter(
                ([, v]) => v !== undefined,
              ),
            ),
          }));
          const { lake, engine } = await compare(request, events, project(tz, weekStart));
          expect(lake).toEqual(engine);
          if (lake.size) answered += 1;
        },
      ),
      // A fixed seed: the non-vacuity count below depends on the draw.
      { numRuns: 40, seed: 20261127 },
    );
    // Not vacuous: many runs count something (the rest filter every event out, and must agree on that too).
    expect(answered).toBeGreaterThan(10);
  });

  it('hostile names and values (quotes, backslashes, NUL and other controls, JSON pointer and LIKE characters, unicode) stay literals: same numbers, no other project', async () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
      fc.constantFrom('\0', 'a\0b', '\n--', "x'\r\n;", '\u2028\x7f\x85'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record({ name: text, key: text, value: text, operator: fc.constantFrom('exact', 'is_not', 'icontains') }),
        async ({ name, key, value, operator }) => {
          const events: LakeEvent[] = [value, `x${value}x`, 'other'].map((v, i) => ({
            uuid: `00000000-0000-7000-8000-00000000000${i}`,
            event: i === 2 ? 'another' : name,
            timestamp: `2024-03-0${i + 2}T10:00:00.000Z`,
            distinct_id: `d${i}`,
            person_id: null,
            properties: { [key]: v },
          }));
          const request = {
            events: [{ id: name, properties: [{ key, operator, value }] }],
            date_from: '2024-03-01',
            date_to: '2024-03-05',
          };
          const { lake, engine } = await compare(request, events, project());
          expect(lake).toEqual(engine);
          // Every operator here matches at least one of the events (project 8's copies are never counted).
          expect(lake.size).toBeGreaterThan(0);
          expect([...lake.values()].reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2);
        },
      ),
      { numRuns: 30 },
    );
  });
});
