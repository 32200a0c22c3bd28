import { describe, expect, it } from 'vitest';
import {
  countedEvents,
  inProcessWindow,
  isLakeCurrent,
  type LakeDayCounter,
  lakeBuckets,
  lakeDays,
  utcDaysBetween,
} from '#shared/lake/route.ts';
import { printTrendSql } from '#shared/lake/sql/trends.ts';
import { parseTrendRequest, resolveDateRange } from '#shared/trends/index.ts';
import { expectTrinoStatement } from '../../support/trino-grammar.ts';

const t = (iso: string) => Date.parse(iso);
const tally = (count: number, xsum = count * 7) => ({ count, xsum });
const counter = (count: number, lake?: number, personsVersion = 0): LakeDayCounter => ({
  tally: tally(count),
  ...(lake === undefined ? {} : { lake: { tally: tally(lake), personsVersion } }),
});
const rule = { today: '2024-04-20', names: null, personsVersion: null };

describe('which days the lake answers', () => {
  it('a closed day whose lake tally equals its counter, per name read', () => {
    const day = new Map([
      ['$pageview', counter(5, 5)],
      ['clicked', counter(3, 2)],
    ]);
    expect(isLakeCurrent('2024-04-18', day, rule)).toBe(false);
    // Only the names the trend reads decide.
    expect(isLakeCurrent('2024-04-18', day, { ...rule, names: ['$pageview'] })).toBe(true);
    expect(isLakeCurrent('2024-04-18', day, { ...rule, names: ['clicked'] })).toBe(false);
  });

  it('never today or later, never a day written before its last change (or not yet written)', () => {
    const fresh = new Map([['e', counter(5, 5)]]);
    expect(isLakeCurrent('2024-04-20', fresh, rule)).toBe(false);
    expect(isLakeCurrent('2024-04-21', fresh, rule)).toBe(false);
    // A deletion after the lake write: the counter moved, the lake tally did not.
    expect(isLakeCurrent('2024-04-18', new Map([['e', counter(4, 5)]]), rule)).toBe(false);
    // A count equal but another event (the fingerprint sum moved).
    expect(
      isLakeCurrent(
        '2024-04-18',
        new Map([['e', { tally: tally(5, 1), lake: { tally: tally(5, 2), personsVersion: 0 } }]]),
        rule,
      ),
    ).toBe(false);
    expect(isLakeCurrent('2024-04-18', new Map([['e', counter(5)]]), rule)).toBe(false);
    // A name whose events are all gone before any lake write holds nothing to read.
    expect(isLakeCurrent('2024-04-18', new Map([['e', counter(0)]]), rule)).toBe(true);
    // A day with no counters holds no events.
    expect(isLakeCurrent('2024-04-18', undefined, rule)).toBe(true);
  });

  it('for person counts, only days written under the current persons version', () => {
    const day = new Map([['e', counter(5, 5, 3)]]);
    expect(isLakeCurrent('2024-04-18', day, { ...rule, personsVersion: 3 })).toBe(true);
    expect(isLakeCurrent('2024-04-18', day, { ...rule, personsVersion: 4 })).toBe(false);
    expect(isLakeCurrent('2024-04-18', day, rule)).toBe(true);
  });

  it('counts the events of the names read', () => {
    const counters = new Map([
      [
        '2024-04-17',
        new Map([
          ['a', counter(10)],
          ['b', counter(5)],
        ]),
      ],
      ['2024-04-18', new Map([['a', counter(1)]])],
    ]);
    expect(countedEvents(counters, null)).toBe(16);
    expect(countedEvents(counters, ['a'])).toBe(11);
    expect(countedEvents(counters, ['c'])).toBe(0);
  });
});

describe('which buckets the lake answers (each wholly from one source)', () => {
  const days = (from: string, to: string) => utcDaysBetween(t(from), t(to));

  it('lists the UTC days of an instant range', () => {
    expect(days('2024-04-17T23:00:00Z', '2024-04-19T00:00:00Z')).toEqual(['2024-04-17', '2024-04-18', '2024-04-19']);
  });

  it('day buckets in UTC: a bucket is the lake’s when its day is current', () => {
    const buckets = ['2024-04-15', '2024-04-16', '2024-04-17', '2024-04-18'].map((d) => t(`${d}T00:00:00Z`));
    const range = { from: buckets[0]!, to: t('2024-04-18T23:59:59.999Z') };
    const current = (day: string) => day !== '2024-04-16';
    expect(lakeBuckets(buckets, range, range, current)).toEqual([true, false, true, true]);
    expect(inProcessWindow(buckets, [true, false, true, true], range, range)).toEqual({
      from: t('2024-04-16T00:00:00Z'),
      to: t('2024-04-16T23:59:59.999Z'),
    });
  });

  it('a local day straddles two UTC days: both must be current', () => {
    // Asia/Kolkata (+05:30): the local 16th is 2024-04-15T18:30Z .. 2024-04-16T18:29:59.999Z.
    const buckets = [t('2024-04-15T18:30:00Z'), t('2024-04-16T18:30:00Z')];
    const range = { from: buckets[0]!, to: t('2024-04-17T18:29:59.999Z') };
    expect(lakeBuckets(buckets, range, range, (d) => d !== '2024-04-15')).toEqual([false, true]);
    expect(lakeBuckets(buckets, range, range, (d) => d !== '2024-04-17')).toEqual([true, false]);
  });

  it('a week bucket straddling a non-current day goes wholly in-process; days outside the read window count as empty', () => {
    const buckets = [t('2024-04-08T00:00:00Z'), t('2024-04-15T00:00:00Z')];
    const range = { from: t('2024-04-10T00:00:00Z'), to: t('2024-04-21T23:59:59.999Z') };
    const read = { from: t('2024-04-12T00:00:00Z'), to: t('2024-04-21T23:59:59.999Z') };
    const current = (day: string) => day < '2024-04-20';
    // Week 1: only the 12th..14th are read (nothing is stored before the first event).
    expect(lakeBuckets(buckets, range, read, current)).toEqual([true, false]);
    expect(inProcessWindow(buckets, [true, false], range, read)).toEqual({
      from: t('2024-04-15T00:00:00Z'),
      to: range.to,
    });
    // Days before the range's start are not the bucket's: a non-current 9th changes nothing.
    expect(lakeBuckets(buckets, range, range, (day) => day !== '2024-04-09' && day < '2024-04-20')).toEqual([
      true,
      false,
    ]);
    expect(inProcessWindow(buckets, [true, true], range, read)).toBeNull();
  });

  it('the lake reads only its buckets’ days that hold events: DuckDB their files, Athena their partitions (pinned)', () => {
    // Asia/Kolkata days over 2024-04-10 .. 2024-04-16 (local); the 13th (UTC) is not current, the 15th empty.
    const settings = { timezone: 'Asia/Kolkata', week_start_day: 1 as const, test_account_filters: [] };
    const model = parseTrendRequest({
      events: [{ id: '$pageview', math: 'sum', math_property: 'amount' }],
      date_from: '2024-04-10',
      date_to: '2024-04-16T23:59:59',
    });
    const range = resolveDateRange(model, settings, new Date('2024-04-20T12:00:00Z'));
    const starts = range.buckets.map((b) => b.getTime());
    const span = { from: range.from.getTime(), to: range.to.getTime() };
    const inLake = lakeBuckets(starts, span, span, (day) => day !== '2024-04-13');
    // Local days 10..16: the 13th and 14th touch the UTC 13th.
    expect(inLake).toEqual([true, true, true, false, false, true, true]);
    const days = lakeDays(starts, inLake, span, (day) => day !== '2024-04-15');
    expect(days).toEqual(['2024-04-09', '2024-04-10', '2024-04-11', '2024-04-12', '2024-04-14', '2024-04-16']);
    const sql = printTrendSql(
      { projectId: 7, model, range, project: settings, days },
      { dialect: 'athena', database: 'analytics_lake', table: 'events' },
    );
    expectTrinoStatement(sql, { table: '"analytics_lake"."events"', projectId: 7 });
    expect(sql.split('\n').slice(2, 6).join('\n')).toMatchInlineSnapshot(`
      "WHERE "project_id" = 7
        AND ("day" BETWEEN '2024-04-09' AND '2024-04-12' OR "day" = '2024-04-14' OR "day" = '2024-04-16')
        AND "timestamp" >= TIMESTAMP '2024-04-09 18:30:00.000'
        AND "timestamp" <= TIMESTAMP '2024-04-16 18:29:59.999'"
    `);
  });
});
