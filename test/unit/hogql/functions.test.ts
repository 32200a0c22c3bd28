/**
 * The HogQL function table, function by function, with values from ClickHouse's documentation
 * where it gives them (cited as "CH doc" in the test names).
 */
import { describe, expect, it } from 'vitest';
import { CATALOG } from '#shared/hogql/functions/index.ts';
import { HogDate, HogDateTime, type HogValue } from '#shared/hogql/values.ts';
import { ATTR, call, ctx, ev, failure, fn, prop } from './evaluate-helpers.ts';

const text = (v: HogValue) => {
  if (v instanceof HogDateTime) return `dt:${new Date(v.ms).toISOString()}@${v.timezone}`;
  if (v instanceof HogDate) return `d:${new Date(v.days * 86_400_000).toISOString().slice(0, 10)}`;
  return v;
};
const toDT = (s: string) => call('toDateTime', s);
const toD = (s: string) => call('toDate', s);

describe('conversion', () => {
  it('toString of numbers, booleans, dates, arrays', () => {
    expect(fn('toString', 123)).toBe('123');
    expect(fn('toString', 1.5)).toBe('1.5');
    expect(fn('toString', true)).toBe('true');
    expect(fn('toString', toD('2024-01-02'))).toBe('2024-01-02');
    expect(fn('toString', toDT('2024-01-02 03:04:05'))).toBe('2024-01-02 03:04:05');
    expect(fn('toString', ['a', 1])).toBe("['a',1]");
    expect(fn('toString', null)).toBeNull();
  });
  it('toInt is toInt64OrNull: integers parse, fractions and words are NULL, floats truncate', () => {
    expect(fn('toInt', '123')).toBe(123);
    expect(fn('toInt', '-5')).toBe(-5);
    expect(fn('toInt', '1.5')).toBeNull();
    expect(fn('toInt', 'abc')).toBeNull();
    expect(fn('toInt', 1.7)).toBe(1);
    expect(fn('toInt', -1.7)).toBe(-1);
    expect(fn('toInt', null)).toBeNull();
  });
  it('toFloat is toFloat64OrNull', () => {
    expect(fn('toFloat', '1.5')).toBe(1.5);
    expect(fn('toFloat', ' 2e3 ')).toBe(2000);
    expect(fn('toFloat', 'inf')).toBe(Number.POSITIVE_INFINITY);
    expect(fn('toFloat', 'abc')).toBeNull();
    expect(fn('toFloat', '')).toBeNull();
  });
  it('toDate: text, DateTime in its zone, invalid is NULL', () => {
    expect(text(fn('toDate', '2022-12-30'))).toBe('d:2022-12-30');
    expect(text(fn('toDate', '2022-02-30'))).toBeNull();
    expect(text(fn('toDate', 'nope'))).toBeNull();
    expect(text(fn('toDate', call('toTimeZone', toDT('2024-01-01 02:00:00'), 'America/New_York')))).toBe(
      'd:2023-12-31',
    );
  });
  it('toDateTime: ISO text in the project zone, an explicit offset, unix seconds', () => {
    expect(text(fn('toDateTime', '2024-01-02 03:04:05'))).toBe('dt:2024-01-02T03:04:05.000Z@UTC');
    expect(text(fn('toDateTime', '2024-01-02T03:04:05+02:00'))).toBe('dt:2024-01-02T01:04:05.000Z@UTC');
    expect(text(fn('toDateTime', 1_700_000_000))).toBe('dt:2023-11-14T22:13:20.000Z@UTC');
    const berlin = ev(call('toDateTime', '2024-01-02 03:04:05'), {}, { ...ctx, timezone: 'Europe/Berlin' });
    expect(text(berlin)).toBe('dt:2024-01-02T02:04:05.000Z@Europe/Berlin');
    expect(fn('toDateTime', 'garbage')).toBeNull();
  });
  it('toUUID (CH doc: 61f0c404-5cb3-11e7-907b-a6006ad3dba0) and invalid text is NULL', () => {
    expect(fn('toUUID', '61f0c404-5cb3-11e7-907b-a6006ad3dba0')).toBe('61f0c404-5cb3-11e7-907b-a6006ad3dba0');
    expect(fn('toUUID', '61F0C4045CB311E7907BA6006AD3DBA0')).toBe('61f0c404-5cb3-11e7-907b-a6006ad3dba0');
    expect(fn('toUUID', 'not-a-uuid')).toBeNull();
  });
  it('toBool: numbers, true/false text; other text is NULL', () => {
    expect(fn('toBool', 'true')).toBe(true);
    expect(fn('toBool', 'FALSE')).toBe(false);
    expect(fn('toBool', 0)).toBe(false);
    expect(fn('toBool', 2)).toBe(true);
    expect(fn('toBool', 'maybe')).toBeNull();
  });
});

describe('conditional', () => {
  it('if: NULL condition takes the else branch; the branch not taken is not evaluated', () => {
    expect(fn('if', 1, 'a', 'b')).toBe('a');
    expect(fn('if', null, 'a', 'b')).toBe('b');
    expect(ev(call('if', prop('x'), call('intDiv', 1, prop('x')), 'safe'), { 'properties.x': 0 })).toBe('safe');
  });
  it('multiIf (CH doc: left < right, left > right, left = right, Null value)', () => {
    const expr = (l: HogValue, r: HogValue) =>
      ev(
        call(
          'multiIf',
          { kind: 'compare', op: 'lt', left: prop('l'), right: prop('r') },
          'left is smaller',
          { kind: 'compare', op: 'gt', left: prop('l'), right: prop('r') },
          'left is greater',
          { kind: 'compare', op: 'eq', left: prop('l'), right: prop('r') },
          'Both equal',
          'Null value',
        ),
        { 'properties.l': l, 'properties.r': r },
      );
    expect(expr(1, 3)).toBe('left is smaller');
    expect(expr(2, 2)).toBe('Both equal');
    expect(expr(3, 2)).toBe('left is greater');
    expect(expr(null, 2)).toBe('Null value');
    failure(() => fn('multiIf', 1, 'a', 0, 'b'));
  });
  it('coalesce (CH doc: coalesce(mail, phone, CAST(telegram, Nullable(String))))', () => {
    expect(fn('coalesce', null, 'client@x', '123')).toBe('client@x');
    expect(fn('coalesce', null, null)).toBeNull();
    expect(fn('COALESCE', null, 2)).toBe(2);
  });
  it('ifNull and nullIf (CH doc: nullIf(1, 1) is NULL, nullIf(1, 2) is 1)', () => {
    expect(fn('ifNull', 'x', 'y')).toBe('x');
    expect(fn('ifNull', null, 'y')).toBe('y');
    expect(fn('nullIf', 1, 1)).toBeNull();
    expect(fn('nullIf', 1, 2)).toBe(1);
  });
  it('isNull / isNotNull', () => {
    expect(fn('isNull', null)).toBe(true);
    expect(fn('isNull', 0)).toBe(false);
    expect(fn('isNotNull', '')).toBe(true);
    expect(fn('isNotNull', null)).toBe(false);
  });
});

describe('strings', () => {
  it('lower / upper change ASCII letters only', () => {
    expect(fn('lower', 'ClickHouse')).toBe('clickhouse');
    expect(fn('upper', 'abc-É')).toBe('ABC-É');
    expect(fn('lower', null)).toBeNull();
  });
  it('length counts UTF-8 bytes, and array items', () => {
    expect(fn('length', 'Hello')).toBe(5);
    expect(fn('length', 'é')).toBe(2);
    expect(fn('length', [1, 2, 3])).toBe(3);
    expect(fn('length', null)).toBeNull();
  });
  it("concat (CH doc: concat('Hello, ', 'World!')); a NULL part is '' as PostHog prints it (ifNull(toString(x), '')); numbers as text", () => {
    expect(fn('concat', 'Hello, ', 'World!')).toBe('Hello, World!');
    expect(fn('concat', 'a', null)).toBe('a');
    expect(ev(call('concat', prop('os'), ' ', prop('browser')), { 'properties.os': 'Mac' })).toBe('Mac ');
    expect(fn('concat', 'v', 2)).toBe('v2');
  });
  it("substring (CH doc: substring('database', 5) = 'base', substring('database', 5, 1) = 'b')", () => {
    expect(fn('substring', 'database', 5)).toBe('base');
    expect(fn('substring', 'database', 5, 1)).toBe('b');
    expect(fn('substring', 'Hello', -3)).toBe('llo');
    expect(fn('substring', 'Hello', 0, 2)).toBe('');
    expect(fn('substring', 'Hello', 1, -1)).toBe('Hell');
    expect(fn('substring', 'héllo', 2, 2)).toBe('él');
  });
  it("trim / trimLeft / trimRight (CH doc: trimLeft('     Hello, world!     '))", () => {
    expect(fn('trimLeft', '     Hello, world!     ')).toBe('Hello, world!     ');
    expect(fn('trimRight', '     Hello, world!     ')).toBe('     Hello, world!');
    expect(fn('trim', '     Hello, world!     ')).toBe('Hello, world!');
    expect(fn('trim', '\tx\t')).toBe('\tx\t');
  });
  it('replaceAll / replaceOne', () => {
    expect(fn('replaceAll', 'Hello, Hello world', 'Hello', 'Hi')).toBe('Hi, Hi world');
    expect(fn('replaceOne', 'Hello, Hello world', 'Hello', 'Hi')).toBe('Hi, Hello world');
    expect(fn('replaceAll', 'abc', '', 'x')).toBe('abc');
  });
  it("replaceRegexpOne (CH doc: '2014-03-17' to '03/17/2014') and replaceRegexpAll (CH doc: '\\0\\0', '^')", () => {
    expect(fn('replaceRegexpOne', '2014-03-17', '(\\d{4})-(\\d{2})-(\\d{2})', '\\2/\\3/\\1')).toBe('03/17/2014');
    expect(fn('replaceRegexpAll', 'Hello, World!', '.', '\\0\\0')).toBe('HHeelllloo,,  WWoorrlldd!!');
    expect(fn('replaceRegexpAll', 'Hello, World!', '^', 'here: ')).toBe('here: Hello, World!');
  });
  it("splitByChar (CH doc: ',' of '1,2,3,abcde') and splitByString (CH doc: ', ' and '')", () => {
    expect(fn('splitByChar', ',', '1,2,3,abcde')).toEqual(['1', '2', '3', 'abcde']);
    expect(fn('splitByChar', ',', '1,2,3,abcde', 2)).toEqual(['1', '2']);
    expect(fn('splitByString', ', ', '1, 2 3, 4,5, abcde')).toEqual(['1', '2 3', '4,5', 'abcde']);
    expect(fn('splitByString', '', 'abcde')).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(failure(() => fn('splitByChar', ',,', 'a')).detail).toContain('splitByChar');
  });
  it("startsWith / endsWith (CH doc: startsWith('Spider-Man', 'Spi'))", () => {
    expect(fn('startsWith', 'Spider-Man', 'Spi')).toBe(true);
    expect(fn('startsWith', 'Spider-Man', 'Man')).toBe(false);
    expect(fn('endsWith', 'Spider-Man', 'Man')).toBe(true);
    expect(fn('endsWith', null, 'x')).toBeNull();
  });
  it("position (CH doc: position('Hello, world!', '!') = 13), 0 when absent, a start", () => {
    expect(fn('position', 'Hello, world!', '!')).toBe(13);
    expect(fn('position', 'Hello, world!', 'o', 6)).toBe(9);
    expect(fn('position', 'abc', 'z')).toBe(0);
    expect(fn('position', 'héllo', 'l')).toBe(3);
  });
  it('like / ilike / notLike / notILike as functions', () => {
    expect(fn('like', 'ClickHouse', '%House')).toBe(true);
    expect(fn('like', 'ClickHouse', '%house')).toBe(false);
    expect(fn('ilike', 'ClickHouse', '%house')).toBe(true);
    expect(fn('notLike', 'ClickHouse', 'Click%')).toBe(false);
    expect(fn('notILike', 'ClickHouse', 'click%')).toBe(false);
  });
  it('match: RE2, unanchored; a bad pattern is a 400', () => {
    expect(fn('match', 'Hello', 'l+')).toBe(true);
    expect(fn('match', 'Hello', '^l')).toBe(false);
    expect(failure(() => fn('match', 'x', '(a')).detail).toContain('Invalid regular expression');
    failure(() => fn('match', 'x', '(?=a)'));
  });
  it("extract (CH doc: extract('number: 1, 2, 3', '\\d+') = '1'); first group; '' when none", () => {
    expect(fn('extract', 'number: 1, 2, 3', '\\d+')).toBe('1');
    expect(fn('extract', 'key=value', 'key=(\\w+)')).toBe('value');
    expect(fn('extract', 'abc', '\\d')).toBe('');
  });
  it("leftPad / rightPad (CH doc: leftPad('abc', 7, '*') = '****abc', leftPad('abc', 7) = '    abc')", () => {
    expect(fn('leftPad', 'abc', 7, '*')).toBe('****abc');
    expect(fn('leftPad', 'abc', 7)).toBe('    abc');
    expect(fn('rightPad', 'abc', 7, '*')).toBe('abc****');
    expect(fn('leftPad', 'abcdef', 3)).toBe('abc');
    expect(fn('rightPad', 'abc', 6, 'xy')).toBe('abcxyx');
  });
  it('reverse of strings and arrays', () => {
    expect(fn('reverse', 'abc')).toBe('cba');
    expect(fn('reverse', [1, 2, 3])).toEqual([3, 2, 1]);
  });
  it('empty / notEmpty of strings and arrays', () => {
    expect(fn('empty', '')).toBe(true);
    expect(fn('empty', 'a')).toBe(false);
    expect(fn('notEmpty', [])).toBe(false);
    expect(fn('notEmpty', [1])).toBe(true);
    expect(fn('empty', null)).toBeNull();
  });
});

describe('URL functions', () => {
  it("domain (CH doc: 'svn+ssh://some.svn-hosting.com:80/repo/trunk', without a scheme too)", () => {
    expect(fn('domain', 'svn+ssh://some.svn-hosting.com:80/repo/trunk')).toBe('some.svn-hosting.com');
    expect(fn('domain', 'some.svn-hosting.com:80/repo/trunk')).toBe('some.svn-hosting.com');
    expect(fn('domain', 'https://clickhouse.com/time/')).toBe('clickhouse.com');
    expect(fn('domain', 'https://user:pw@example.com/x')).toBe('example.com');
    expect(fn('domain', 'not a url')).toBe('');
  });
  it("protocol (CH doc: protocol('https://clickhouse.com/') = 'https')", () => {
    expect(fn('protocol', 'https://clickhouse.com/')).toBe('https');
    expect(fn('protocol', 'svn+ssh://host/x')).toBe('svn+ssh');
    expect(fn('protocol', 'example.com')).toBe('');
  });
  it("path (CH doc: path('https://example.com/top/news.html?page=2#comments') = '/top/news.html')", () => {
    expect(fn('path', 'https://example.com/top/news.html?page=2#comments')).toBe('/top/news.html');
    expect(fn('path', 'https://example.com')).toBe('');
    expect(fn('path', 'https://example.com/')).toBe('/');
  });
  it('cutQueryString drops the query and keeps the fragment', () => {
    expect(fn('cutQueryString', 'http://example.com/?page=1&lr=213')).toBe('http://example.com/');
    expect(fn('cutQueryString', 'http://example.com/a?page=1#frag')).toBe('http://example.com/a#frag');
    expect(fn('cutQueryString', 'http://example.com/a')).toBe('http://example.com/a');
  });
  it("extractURLParameter: the first value, undecoded; '' when absent", () => {
    expect(fn('extractURLParameter', 'http://example.com/?page=1&lr=213', 'page')).toBe('1');
    expect(fn('extractURLParameter', 'http://example.com/?page=1&lr=213', 'lr')).toBe('213');
    expect(fn('extractURLParameter', 'http://example.com/?q=a%20b', 'q')).toBe('a%20b');
    expect(fn('extractURLParameter', 'http://example.com/?page=1', 'p')).toBe('');
  });
  it("topLevelDomain (CH doc: 'svn+ssh://www.some-domain.com:80/repo/trunk' = 'com')", () => {
    expect(fn('topLevelDomain', 'svn+ssh://www.some-domain.com:80/repo/trunk')).toBe('com');
    expect(fn('topLevelDomain', 'https://posthog.co.uk/x')).toBe('uk');
    expect(fn('topLevelDomain', 'http://127.0.0.1/')).toBe('');
  });
});

describe('JSON functions (CH doc document {"a": "hello", "b": [-100, 200.0, 300]})', () => {
  const doc = '{"a": "hello", "b": [-100, 200.0, 300]}';
  it('JSONHas (CH doc: b is 1, b[4] is 0)', () => {
    expect(fn('JSONHas', doc, 'b')).toBe(true);
    expect(fn('JSONHas', doc, 'b', 4)).toBe(false);
  });
  it("JSONExtractString (CH doc: 'a' is 'hello', index 1 is 'hello'); wrong type is ''", () => {
    expect(fn('JSONExtractString', doc, 'a')).toBe('hello');
    expect(fn('JSONExtractString', doc, 1)).toBe('hello');
    expect(fn('JSONExtractString', doc, 'b')).toBe('');
    expect(fn('JSONExtractString', 'not json', 'a')).toBe('');
  });
  it('JSONExtractInt (CH doc: b[1] = -100, b[-1] = 300); missing is 0', () => {
    expect(fn('JSONExtractInt', doc, 'b', 1)).toBe(-100);
    expect(fn('JSONExtractInt', doc, 'b', -1)).toBe(300);
    expect(fn('JSONExtractInt', doc, 'zz')).toBe(0);
  });
  it('JSONExtractFloat (CH doc: b[2] = 200.0); a string is 0', () => {
    expect(fn('JSONExtractFloat', doc, 'b', 2)).toBe(200);
    expect(fn('JSONExtractFloat', doc, 'a')).toBe(0);
  });
  it('JSONExtractBool', () => {
    expect(fn('JSONExtractBool', '{"passed": true}', 'passed')).toBe(true);
    expect(fn('JSONExtractBool', '{"passed": "yes"}', 'passed')).toBe(false);
  });
  it('JSONExtractRaw: compact JSON of the value (CH doc gives the source text [-100, 200.0, 300])', () => {
    expect(fn('JSONExtractRaw', doc, 'b')).toBe('[-100,200,300]');
    expect(fn('JSONExtractRaw', doc, 'a')).toBe('"hello"');
    expect(fn('JSONExtractRaw', doc, 'missing')).toBe('');
  });
  it('works on a nested property read as JSON text', () => {
    expect(ev(call('JSONExtractString', prop('obj'), 'k'), { 'properties.obj': '{"k":"v"}' })).toBe('v');
  });
});

describe('math', () => {
  it('abs, sqrt, pow, log (natural), exp', () => {
    expect(fn('abs', -1.5)).toBe(1.5);
    expect(fn('sqrt', 16)).toBe(4);
    expect(fn('sqrt', -1)).toBeNaN();
    expect(fn('pow', 2, 10)).toBe(1024);
    expect(fn('log', call('exp', 1))).toBeCloseTo(1);
    expect(fn('exp', 0)).toBe(1);
    expect(fn('abs', null)).toBeNull();
  });
  it('pow, log, exp: more values; non-numeric text is NULL', () => {
    expect(fn('pow', 2, -1)).toBe(0.5);
    expect(fn('log', 1)).toBe(0);
    expect(fn('exp', 1)).toBeCloseTo(Math.E);
    expect(fn('pow', 'x', 2)).toBeNull();
    expect(fn('abs', '-3')).toBe(3);
  });
  it("round: banker's rounding on floats (CH doc: round(0.5) = 0, round(1.5) = 2), digits (CH doc: round(4.1267, 2) = 4.13, round(467, -2) = 500)", () => {
    expect(fn('round', 0.5)).toBe(0);
    expect(fn('round', 1.5)).toBe(2);
    expect(fn('round', 2.5)).toBe(2);
    expect(fn('round', 3.2, 0)).toBe(3);
    expect(fn('round', 4.1267, 2)).toBe(4.13);
    expect(fn('round', 22, -1)).toBe(20);
    expect(fn('round', 467, -2)).toBe(500);
    expect(fn('round', -467, -2)).toBe(-500);
  });
  it('floor / ceil with digits', () => {
    expect(fn('floor', -1.5)).toBe(-2);
    expect(fn('ceil', 1.01)).toBe(2);
    expect(fn('floor', 1.2345, 2)).toBe(1.23);
    expect(fn('ceil', 1.2345, 2)).toBe(1.24);
  });
  it('greatest / least', () => {
    expect(fn('greatest', 1, 2)).toBe(2);
    expect(fn('least', 1, 2)).toBe(1);
    expect(fn('greatest', 'a', 'b')).toBe('b');
    expect(fn('least', 1, null)).toBeNull();
  });
  it('intDiv truncates; by zero is a 400 naming intDiv', () => {
    expect(fn('intDiv', 7, 2)).toBe(3);
    expect(fn('intDiv', -7, 2)).toBe(-3);
    expect(failure(() => fn('intDiv', 1, 0)).detail).toContain('intDiv');
  });
  it("modulo takes the dividend's sign (CH doc positiveModulo: modulo(-1, 10) = -1)", () => {
    expect(fn('modulo', -1, 10)).toBe(-1);
    expect(fn('modulo', 7, 3)).toBe(1);
    expect(fn('modulo', 7.5, 2)).toBe(1.5);
    failure(() => fn('modulo', 1, 0));
  });
});

describe('dates', () => {
  const t = toDT('2023-04-21 10:20:30');
  it('now() is shown in the project zone', () => {
    const v = ev(call('now'), {}, { ...ctx, timezone: 'Asia/Tokyo' });
    expect(text(v)).toBe('dt:2024-01-15T12:34:56.000Z@Asia/Tokyo');
    expect(ev(call('toHour', call('now')), {}, { ...ctx, timezone: 'Asia/Tokyo' })).toBe(21);
  });
  it('now and today come from the context clock', () => {
    expect(text(fn('now'))).toBe('dt:2024-01-15T12:34:56.000Z@UTC');
    expect(text(fn('today'))).toBe('d:2024-01-15');
    expect(text(ev(call('today'), {}, { ...ctx, timezone: 'Pacific/Kiritimati' }))).toBe('d:2024-01-16');
  });
  it('toStartOfHour / toStartOfDay give DateTimes', () => {
    expect(text(fn('toStartOfHour', t))).toBe('dt:2023-04-21T10:00:00.000Z@UTC');
    expect(text(fn('toStartOfDay', t))).toBe('dt:2023-04-21T00:00:00.000Z@UTC');
  });
  it('toStartOfWeek (CH doc 2023-04-21: mode 0 gives 2023-04-16, mode 1 gives 2023-04-17)', () => {
    expect(text(fn('toStartOfWeek', t))).toBe('d:2023-04-16');
    expect(text(fn('toStartOfWeek', t, 1))).toBe('d:2023-04-17');
  });
  it('toStartOfMonth / toStartOfQuarter / toStartOfYear (CH doc 2023-04-21)', () => {
    expect(text(fn('toStartOfMonth', t))).toBe('d:2023-04-01');
    expect(text(fn('toStartOfQuarter', t))).toBe('d:2023-04-01');
    expect(text(fn('toStartOfQuarter', toDT('2023-03-31 23:00:00')))).toBe('d:2023-01-01');
    expect(text(fn('toStartOfYear', t))).toBe('d:2023-01-01');
  });
  it("truncation happens in the DateTime's zone", () => {
    const ny = call('toTimeZone', toDT('2024-01-01 02:00:00'), 'America/New_York');
    expect(text(fn('toStartOfDay', ny))).toBe('dt:2023-12-31T05:00:00.000Z@America/New_York');
    expect(fn('toHour', ny)).toBe(21);
  });
  it('toYear / toMonth / toDayOfMonth / toHour / toMinute (CH doc 2023-04-21 10:20:30)', () => {
    expect(fn('toYear', t)).toBe(2023);
    expect(fn('toMonth', t)).toBe(4);
    expect(fn('toDayOfMonth', t)).toBe(21);
    expect(fn('toHour', t)).toBe(10);
    expect(fn('toMinute', t)).toBe(20);
    expect(fn('toYear', null)).toBeNull();
  });
  it('toDayOfWeek (CH doc: 2023-04-21 is 5 in mode 0); modes 1-3', () => {
    expect(fn('toDayOfWeek', t)).toBe(5);
    expect(fn('toDayOfWeek', toD('2023-04-23'))).toBe(7);
    expect(fn('toDayOfWeek', toD('2023-04-23'), 1)).toBe(6);
    expect(fn('toDayOfWeek', toD('2023-04-23'), 2)).toBe(0);
    expect(fn('toDayOfWeek', toD('2023-04-23'), 3)).toBe(1);
  });
  it('dateDiff (CH doc: hour between 2018-01-01 22:00 and 2018-01-02 23:00 is 25; 2021-12-29 to 2022-01-01 is 3 days, 1 month, 1 year)', () => {
    expect(fn('dateDiff', 'hour', toDT('2018-01-01 22:00:00'), toDT('2018-01-02 23:00:00'))).toBe(25);
    expect(fn('dateDiff', 'day', toD('2021-12-29'), toD('2022-01-01'))).toBe(3);
    expect(fn('dateDiff', 'month', toD('2021-12-29'), toD('2022-01-01'))).toBe(1);
    expect(fn('dateDiff', 'year', toD('2021-12-29'), toD('2022-01-01'))).toBe(1);
    expect(fn('dateDiff', 'week', toD('2024-01-07'), toD('2024-01-08'))).toBe(1);
    expect(failure(() => fn('dateDiff', 'fortnight', t, t)).detail).toContain('unknown unit');
  });
  it("dateAdd / dateSub (CH doc: dateAdd(year, 3, toDate('2018-01-01')) = 2021-01-01); month ends clamp", () => {
    expect(text(fn('dateAdd', 'year', 3, toD('2018-01-01')))).toBe('d:2021-01-01');
    expect(text(fn('dateSub', 'year', 3, toD('2018-01-01')))).toBe('d:2015-01-01');
    expect(text(fn('dateAdd', 'month', 1, toDT('2024-01-31 10:00:00')))).toBe('dt:2024-02-29T10:00:00.000Z@UTC');
    expect(text(fn('dateAdd', 'hour', 2, t))).toBe('dt:2023-04-21T12:20:30.000Z@UTC');
  });
  it('dateTrunc', () => {
    expect(text(fn('dateTrunc', 'hour', t))).toBe('dt:2023-04-21T10:00:00.000Z@UTC');
    expect(text(fn('dateTrunc', 'month', t))).toBe('dt:2023-04-01T00:00:00.000Z@UTC');
    expect(text(fn('dateTrunc', 'week', t))).toBe('dt:2023-04-17T00:00:00.000Z@UTC');
    expect(text(fn('dateTrunc', 'quarter', t))).toBe('dt:2023-04-01T00:00:00.000Z@UTC');
  });
  it("formatDateTime (CH doc: formatDateTime(toDate('2010-01-04'), '%j') = '004'); unknown codes are a 400", () => {
    expect(fn('formatDateTime', toD('2010-01-04'), '%j')).toBe('004');
    expect(fn('formatDateTime', t, '%Y-%m-%d %H:%i:%S')).toBe('2023-04-21 10:20:30');
    expect(fn('formatDateTime', t, '%a %b %e, %I %p %%')).toBe('Fri Apr 21, 10 AM %');
    expect(failure(() => fn('formatDateTime', t, '%Ö')).detail).toContain('formatDateTime');
  });
  it('toTimeZone (CH doc: 2019-01-01 00:00 UTC is 05:00 in Asia/Yekaterinburg); unknown zone is a 400', () => {
    const y = call('toTimeZone', call('toDateTime', '2019-01-01 00:00:00', 'UTC'), 'Asia/Yekaterinburg');
    expect(fn('toHour', y)).toBe(5);
    expect(failure(() => fn('toTimeZone', t, 'Mars/Olympus')).detail).toContain('time zone');
  });
  it("toUnixTimestamp (CH doc: '2017-11-05 08:07:47' in Asia/Tokyo = 1509836867)", () => {
    expect(fn('toUnixTimestamp', '2017-11-05 08:07:47', 'Asia/Tokyo')).toBe(1509836867);
    expect(fn('toUnixTimestamp', t)).toBe(1682072430);
  });
  it('fromUnixTimestamp gives a DateTime in the project zone', () => {
    expect(text(fn('fromUnixTimestamp', 423543535))).toBe('dt:1983-06-04T02:58:55.000Z@UTC');
    expect(fn('toHour', call('fromUnixTimestamp', 1_700_000_000))).toBe(22);
    expect(fn('fromUnixTimestamp', null)).toBeNull();
  });
});

describe('arrays', () => {
  it('has (CH doc: has([1, 2, NULL], NULL) = 1)', () => {
    expect(fn('has', [1, 2, null], null)).toBe(true);
    expect(fn('has', [1, 2], 3)).toBe(false);
    expect(ev(call('has', prop('tags'), 'b'), { 'properties.tags': '["a","b"]' })).toBe(true);
  });
  it('indexOf (CH doc: indexOf([1, 3, NULL, NULL], NULL) = 3), 0 when absent', () => {
    expect(fn('indexOf', [1, 3, null, null], null)).toBe(3);
    expect(fn('indexOf', [1, 3], 5)).toBe(0);
  });
  it('arrayElement: 1-based, negative from the end, out of range gives the default', () => {
    expect(fn('arrayElement', [10, 20, 30], 1)).toBe(10);
    expect(fn('arrayElement', [10, 20, 30], -1)).toBe(30);
    expect(fn('arrayElement', [10, 20, 30], 4)).toBe(0);
    expect(fn('arrayElement', ['a'], 0)).toBe('');
    expect(fn('arrayElement', [1, 'a'], 5)).toBeNull();
  });
});

describe('output caps', () => {
  const big = 'x'.repeat(40_000);
  it('leftPad / rightPad refuse lengths past 65,536', () => {
    expect(failure(() => fn('leftPad', 'a', 100_000)).detail).toMatch(/leftPad.*65536/);
    expect(failure(() => fn('rightPad', 'a', 100_000, 'b')).detail).toMatch(/rightPad.*65536/);
  });
  it('concat refuses results past 65,536 characters', () => {
    expect(failure(() => ev(call('concat', prop('a'), prop('a')), { 'properties.a': big })).detail).toMatch(
      /concat.*65536/,
    );
  });
  it('replaceAll / replaceRegexpAll refuse results past 65,536 characters', () => {
    expect(failure(() => fn('replaceAll', big, 'x', 'yy')).detail).toMatch(/replaceAll.*65536/);
    expect(failure(() => fn('replaceRegexpAll', big, 'x', 'yy')).detail).toMatch(/replaceRegexpAll.*65536/);
  });
  it('splitByChar / splitByString refuse more than 10,000 items', () => {
    const many = ','.repeat(20_000);
    expect(failure(() => fn('splitByChar', ',', many)).detail).toMatch(/splitByChar.*10000/);
    expect(failure(() => fn('splitByString', '', 'x'.repeat(20_000))).detail).toMatch(/splitByString.*10000/);
  });
});

describe('the catalog', () => {
  it('lists every function the issue names, with arities', () => {
    const required =
      `toString toInt toFloat toDate toDateTime toUUID toBool if multiIf coalesce ifNull nullIf isNull isNotNull
      lower upper length concat substring trim trimLeft trimRight replaceAll replaceOne replaceRegexpAll replaceRegexpOne
      splitByChar splitByString startsWith endsWith position like ilike match extract leftPad rightPad reverse empty notEmpty
      domain path protocol cutQueryString extractURLParameter topLevelDomain JSONExtractString JSONExtractInt JSONExtractFloat
      JSONExtractBool JSONExtractRaw JSONHas abs round floor ceil sqrt pow log exp greatest least intDiv modulo now today
      toStartOfHour toStartOfDay toStartOfWeek toStartOfMonth toStartOfQuarter toStartOfYear toYear toMonth toDayOfMonth
      toDayOfWeek toHour toMinute dateDiff dateAdd dateSub dateTrunc formatDateTime toTimeZone toUnixTimestamp
      fromUnixTimestamp has indexOf arrayElement`.split(/\s+/);
    for (const name of required) expect(CATALOG.scalar(name), name).toBeDefined();
    for (const name of 'count countIf sum sumIf avg avgIf min max uniq uniqExact any median quantile argMax argMin'.split(
      ' ',
    ))
      expect(CATALOG.aggregate(name), name).toBeDefined();
    expect(CATALOG.aggregate('quantile')).toMatchObject({ minArgs: 1, maxArgs: 1, minParams: 1, maxParams: 1 });
    expect(CATALOG.scalar('substring')).toMatchObject({ minArgs: 2, maxArgs: 3 });
    expect(CATALOG.names()).toContain('JSONExtractString');
  });
  it('SQL-style names are case-insensitive, ClickHouse ones are not (PostHog: CoAlesce found, TOString not)', () => {
    expect(CATALOG.scalar('CoAlesce')?.name).toBe('coalesce');
    expect(CATALOG.aggregate('COUNT')?.name).toBe('count');
    expect(CATALOG.aggregate('Sum')?.name).toBe('sum');
    expect(CATALOG.scalar('TOString')).toBeUndefined();
    expect(CATALOG.scalar('jsonextractstring')).toBeUndefined();
  });
  it("an unknown function or a wrong arity is a 400 with the caller's attr", () => {
    expect(failure(() => fn('noSuchFunction', 1)).detail).toContain('noSuchFunction');
    expect(failure(() => fn('lower', 'a', 'b')).detail).toContain('"lower" takes 1 argument');
    expect(failure(() => fn('TOString', 1)).attr).toBe(ATTR);
  });
});

describe('hostile inputs', () => {
  it('JSON nested past the depth cap reads as invalid instead of exhausting the stack', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(ev(call('JSONExtractRaw', prop('j')), { 'properties.j': deep })).toBe('');
    expect(ev(call('has', prop('j'), 1), { 'properties.j': deep })).toBeNull();
  });
  it("dates outside 1900-2299 are NULL, as outside ClickHouse DateTime64's range", () => {
    expect(fn('fromUnixTimestamp', 1e300)).toBeNull();
    expect(fn('toDate', '0050-01-01')).toBeNull();
    expect(fn('toHour', call('dateAdd', 'year', 300, call('toDateTime', '2024-01-01 00:00:00')))).toBeNull();
    expect(fn('dateSub', 'year', 200, call('toDate', '2024-01-01'))).toBeNull();
  });
  it('an interval past 400 years (the span of 1900-2299) is a 400 naming the cap, not a NULL', () => {
    const day = call('toDate', '2024-01-01');
    expect(failure(() => fn('dateAdd', 'day', 1e12, day)).detail).toBe(
      'HogQL: an interval of 1000000000000 days is out of range: at most 146,097 days either way (400 years, the span of the dates HogQL represents, 1900-01-01 to 2299-12-31).',
    );
    expect(failure(() => fn('dateSub', 'yy', 999_999_999_999, day)).detail).toMatch(/at most 400 years either way/);
    expect(failure(() => fn('dateAdd', 'month', Number.NaN, day)).detail).toMatch(/at most 4,800 months/);
    expect(failure(() => fn('dateAdd', 'second', Number.POSITIVE_INFINITY, day)).detail).toMatch(/12,622,780,800/);
    // At the cap: no 400 (a result outside 1900-2299 is NULL, as any out-of-range date).
    expect(fn('dateSub', 'year', 400, call('toDate', '2299-12-31'))).toBeNull();
    expect(fn('toString', call('dateSub', 'day', 146_000, call('toDate', '2299-12-31')))).toBe('1900-04-07');
    // A row's amount too, not only a constant's.
    const add = call('dateAdd', 'week', prop('n'), call('toDate', '2024-01-01'));
    expect(ev(call('toString', add), { 'properties.n': 2 })).toBe('2024-01-15');
    expect(failure(() => ev(add, { 'properties.n': 20_872 })).detail).toMatch(/at most 20,871 weeks/);
  });
  it('round of a number printed with an exponent', () => {
    expect(fn('round', 1e300, 2)).toBe(1e300);
    expect(fn('round', 1.5e-7, 7)).toBe(2e-7);
  });
});

describe('linear time', () => {
  it('trim of a long run of spaces before a character is linear', () => {
    const text = `${' '.repeat(200_000)}x${' '.repeat(200_000)}`;
    const started = Date.now();
    expect(fn('trimRight', text)).toBe(`${' '.repeat(200_000)}x`);
    expect(fn('trim', text)).toBe('x');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
