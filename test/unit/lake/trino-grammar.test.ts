import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { printSelectSql } from '#shared/lake/sql/select.ts';
import { printTrendSql } from '#shared/lake/sql/trends.ts';
import { parseSelectStatement } from '#shared/hogql/select.ts';
import { parseTrendRequest, type ProjectSettings, resolveDateRange } from '#shared/trends/index.ts';
import { expectTrinoStatement, trinoStatementFaults, trinoSyntaxErrors } from '../../support/trino-grammar.ts';

/**
 * The Athena text against Trino's own grammar (dt-sql-parser's TrinoSQL, test/support/trino-grammar.ts).
 * The pinned Athena tests (trend-sql, hogql-query, route) run every printed statement through
 * expectTrinoStatement; this file shows the check itself: what it refuses (the issue's injection as
 * the printer of the time wrote it), and the trends printer's statements over a spread of trends.
 */

const TABLE = '"stage_lake"."events"';
const EXPECTED = { table: TABLE, projectId: 7 };

/** A HogQLQuery statement as printSelectSql lays it out, with the given select list. */
const statement = (select: string) =>
  [
    `SELECT ${select}`,
    `FROM ${TABLE}`,
    `WHERE "project_id" = 7`,
    `  AND "day" BETWEEN '2024-03-01' AND '2024-03-15'`,
    'LIMIT 101',
  ].join('\n');

describe("the issue's injection, printed as the printer of the time printed it", () => {
  // `SELECT -7 AS a, -a, '<payload>' FROM events`: the alias was substituted after constant folding, so
  // `-a` became a negation of the constant -7, printed `(-` + `-7` + `)`: a comment to the end of the line,
  // which the newline inside the string literal ends; the rest of the literal is SQL.
  const opened = `(-7) AS "c0", (--7) AS "c1", '`;

  it('the DuckDB attack (files read and written, statements chained) is not Trino: refused by the grammar', () => {
    const payload = `\n0) AS "c1", read_text('/etc/passwd') AS "c2" FROM ${TABLE}; COPY (SELECT 1) TO '/tmp/x'; SELECT 1 --`;
    const sql = statement(`${opened}${payload}' AS "c2"`);
    expect(sql).toContain('(--7)');
    expect(trinoSyntaxErrors(sql)).not.toEqual([]);
    expect(trinoStatementFaults(sql, EXPECTED)).not.toEqual([]);
  });

  it('a well-formed Trino injection (UNION ALL over every project) passes the grammar alone, and fails the promises', () => {
    const payload = `\n0) AS "c1", "person_properties" AS "c2" FROM ${TABLE} UNION ALL SELECT 0, 0, '' --`;
    const sql = statement(`${opened}${payload}' AS "c2"`);
    // Grammar alone: valid Trino. This is why the check reads the tree and the tokens too.
    expect(trinoSyntaxErrors(sql)).toEqual([]);
    expect(trinoStatementFaults(sql, EXPECTED)).toEqual([
      `a comment at 1:23: ${JSON.stringify(`--7) AS "c1", '\n`)}`,
      `a comment at 2:94: ${JSON.stringify(`--' AS "c2"\n`)}`,
      // The injected SELECT: every project's rows.
      'SELECT #1 has no "project_id"=7 in its top-level WHERE conjunction',
    ]);
    // The same HogQL printed as the issue asks (a negation around its operand): one statement, no fault.
    expect(trinoStatementFaults(statement(`(-7) AS "c0", (-(-7)) AS "c1", 'x' AS "c2"`), EXPECTED)).toEqual([]);
  });

  it('negations printed today: every sign its own token, the statement comment-free', () => {
    // The parser no longer folds `-(-7)` or `- -7` into 7 (PostHog reads them as negations), and the alias
    // route of the issue gives the same tree: each must print without two `-` touching.
    const text = 'SELECT -7 AS a, -(-7), - -7, -(7), -(-(toFloat(event))) FROM events WHERE -a < 0 AND -(-(-1)) < 0';
    const sql = printSelectSql(
      {
        projectId: 7,
        statement: parseSelectStatement(text, 'query'),
        timezone: 'UTC',
        weekStart: 1,
        days: { from: '2024-03-01', to: '2024-03-15' },
        limit: 101,
        offset: 0,
      },
      { dialect: 'athena', database: 'stage_lake', table: 'events' },
    ).sql;
    expect(sql).not.toContain('--');
    expectTrinoStatement(sql, EXPECTED);
  });

  it.each([
    ['two statements', `${statement('1 AS "c0"')};\nSELECT 1`, /2 statements/],
    ['a comment', statement('1 /* c */ AS "c0"'), /a comment at 1:10: "\/\* c \*\/"/],
    ['a newline inside a string literal', statement(`'a\nb' AS "c0"`), /a control character in the string literal/],
    ['a tab inside a string literal', statement(`'a\tb' AS "c0"`), /a control character/],
    ['a Unicode-escaped string', statement(`U&'\\0041' AS "c0"`), /UNICODE_STRING/],
    ['a subquery of every project', statement(`(SELECT count(*) FROM ${TABLE}) AS "c0"`), /SELECT #2 has no/],
    [
      'a whole table',
      `SELECT 1 AS "c0" FROM ${TABLE} WHERE "project_id" = 7 UNION ALL TABLE ${TABLE}`,
      /reads TABLE"stage_lake"."events" whole/,
    ],
    [
      'another table',
      statement('1 AS "c0"').replace(`FROM ${TABLE}`, 'FROM "stage_lake"."other"'),
      /SELECT #1 reads FROM "stage_lake"."other", not "stage_lake"."events"\nreads the table "stage_lake"."other"/,
    ],
    [
      'a join',
      statement('1 AS "c0"').replace(`FROM ${TABLE}`, `FROM ${TABLE} CROSS JOIN ${TABLE}`),
      /SELECT #1 reads FROM "stage_lake"."events"CROSSJOIN"stage_lake"."events", not/,
    ],
    ['a WITH', `WITH x AS (SELECT 1) ${statement('1 AS "c0"')}`, /not a plain query/],
    [
      'the project predicate under an OR',
      statement('1 AS "c0"').replace(`"project_id" = 7`, `("project_id" = 7 OR TRUE)`),
      /SELECT #1 has no "project_id"=7/,
    ],
    [
      'another project',
      statement('1 AS "c0"').replace(`"project_id" = 7`, `"project_id" = 8`),
      /SELECT #1 has no "project_id"=7/,
    ],
  ])('refuses %s', (_, sql, fault) => {
    expect(trinoStatementFaults(sql, EXPECTED).join('\n')).toMatch(fault);
  });
});

describe('the trends printer, over a spread of trends', () => {
  const NOW = new Date('2024-03-16T12:00:00Z');
  const filter = fc.oneof(
    fc.record({
      key: fc.constantFrom('$browser', 'plan', '$current_url', "it's"),
      operator: fc.constantFrom('exact', 'is_not', 'icontains', 'not_icontains', 'regex', 'not_regex'),
      value: fc.oneof(fc.constantFrom('Chrome', "O'Brien", '100%_\\.x', '^g(oogle)?$', 'é🙂'), fc.constant(['a', 'b'])),
    }),
    fc.record({
      key: fc.constantFrom('amount', '$screen_width'),
      operator: fc.constantFrom('gt', 'gte', 'lt', 'lte'),
      value: fc.integer({ min: -5, max: 100 }),
    }),
    fc.record({ key: fc.constantFrom('amount', '$os'), operator: fc.constantFrom('is_set', 'is_not_set') }),
    fc.record({ key: fc.constant('amount'), operator: fc.constant('between'), value: fc.constant([1, 5]) }),
    fc
      .constantFrom(
        "properties.$browser = 'Chrome' OR properties.plan = 'pro'",
        'toFloat(properties.amount) > 2.5 AND NOT isNull(properties.ref)',
        "lower(properties.$os) IN ('mac', 'linux') AND event != 'x'",
        'if(properties.a = 1, 2, 3) BETWEEN -1 AND 10',
      )
      .map((key) => ({ type: 'hogql', key })),
  );
  const trend = fc.record({
    series: fc.array(
      fc.record({
        id: fc.constantFrom('$pageview', "e' OR 1 = 1 --", null),
        math: fc.constantFrom('total', 'dau', 'sum', 'min', 'max', 'avg'),
        properties: fc.array(filter, { maxLength: 1 }),
      }),
      { minLength: 1, maxLength: 2 },
    ),
    properties: fc.array(filter, { maxLength: 2 }),
    breakdown: fc.constantFrom(undefined, '$browser', 'plan', 'amount'),
    interval: fc.constantFrom('hour', 'day', 'week', 'month'),
    timezone: fc.constantFrom('UTC', 'America/New_York', 'Asia/Kolkata'),
    weekStart: fc.constantFrom(0 as const, 1 as const),
    explicit: fc.boolean(),
  });

  it('every statement is one Trino SELECT of the project’s table, the project predicate at the top (ms per statement printed)', () => {
    const samples = fc.sample(trend, { numRuns: 16, seed: 35 });
    let parsedMs = 0;
    let chars = 0;
    for (const t of samples) {
      const settings: ProjectSettings = { timezone: t.timezone, week_start_day: t.weekStart, test_account_filters: [] };
      const model = parseTrendRequest({
        events: t.series.map((s) => (s.math === 'total' || s.math === 'dau' ? s : { ...s, math_property: 'amount' })),
        properties: t.properties,
        interval: t.interval,
        date_from: '2024-03-01T06:00:00',
        date_to: '2024-03-12T23:59:59',
        explicit_date: t.explicit,
        ...(t.breakdown ? { breakdown: t.breakdown } : {}),
      });
      const range = resolveDateRange(model, settings, NOW);
      const sql = printTrendSql(
        { projectId: 7, model, range, project: settings },
        { dialect: 'athena', database: 'stage_lake', table: 'events' },
      );
      const start = performance.now();
      expectTrinoStatement(sql, EXPECTED);
      parsedMs += performance.now() - start;
      chars += sql.length;
    }
    console.info(
      `Trino grammar check: ${samples.length} trend statements, ${(parsedMs / samples.length).toFixed(1)} ms each, ${Math.round(chars / samples.length)} characters each`,
    );
  }, 300_000);
});
