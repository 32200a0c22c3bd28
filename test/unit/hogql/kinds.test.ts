/** The kind of value an expression gives, read from its tree: what a trend's math_hogql is checked against. */
import { describe, expect, it } from 'vitest';
import { CATALOG, kindOf, parseExpr, type ValueKind } from '#shared/hogql/index.ts';
import { evaluateRow } from '#shared/hogql/evaluate.ts';
import { HogDate, HogDateTime, HogTuple, type HogValue } from '#shared/hogql/values.ts';

const kind = (text: string): ValueKind =>
  kindOf(parseExpr(text, 'x', { scope: 'events', aggregates: 'allowed', catalog: CATALOG }));

describe('kindOf', () => {
  it.each<[string, ValueKind]>([
    ['count()', 'number'],
    ['count(DISTINCT event)', 'number'],
    ['sum(toFloat(properties.price)) / count()', 'number'],
    ['quantile(0.9)(properties.x)', 'number'],
    ['toUnixTimestamp(max(timestamp))', 'number'],
    ["dateDiff('second', min(timestamp), max(timestamp))", 'number'],
    ["countIf(event = 'a') > 0", 'boolean'],
    ['max(timestamp)', 'datetime'],
    ['MAX(timestamp)', 'datetime'],
    ['min(person.created_at)', 'datetime'],
    ['max(timestamp) + INTERVAL 1 DAY', 'datetime'],
    ['max(toDate(timestamp))', 'date'],
    ['any(event)', 'text'],
    ['argMax(event, timestamp)', 'text'],
    ['argMin(distinct_id, timestamp)', 'text'],
    ['toString(count())', 'text'],
    ["concat(any(event), '')", 'text'],
    ["max(splitByChar('/', event))", 'array'],
    ['any((event, 1))', 'tuple'],
    ['max(timestamp) - min(timestamp)', 'null'],
    ['any(null)', 'null'],
    ['max(properties.price)', 'unknown'],
    ['argMax(properties.plan, timestamp)', 'unknown'],
    ['if(count() > 1, any(event), null)', 'text'],
    ['if(count() > 1, any(event), 0)', 'unknown'],
    ['coalesce(max(toFloat(properties.x)), 0)', 'number'],
    ["arrayElement(any(splitByChar('/', event)), 1)", 'unknown'],
  ])('%s is %s', (text, expected) => {
    expect(kind(text)).toBe(expected);
  });

  it('agrees with the evaluator on the rows it is sure of', () => {
    const row = (chain: readonly string[]): HogValue =>
      chain[0] === 'timestamp'
        ? new HogDateTime(Date.parse('2024-04-10T10:00:00Z'), 'UTC')
        : chain[0] === 'event'
          ? 'signed up'
          : null;
    const ctx = { timezone: 'UTC', now: new Date('2024-04-20T12:00:00Z') };
    const valueKind = (v: HogValue): ValueKind =>
      v === null
        ? 'null'
        : typeof v === 'number'
          ? 'number'
          : typeof v === 'boolean'
            ? 'boolean'
            : typeof v === 'string'
              ? 'text'
              : v instanceof HogDateTime
                ? 'datetime'
                : v instanceof HogDate
                  ? 'date'
                  : v instanceof HogTuple
                    ? 'tuple'
                    : 'array';
    for (const text of [
      'timestamp',
      'toDate(timestamp)',
      'timestamp - INTERVAL 1 DAY',
      'toStartOfWeek(timestamp)',
      'toStartOfHour(timestamp)',
      "formatDateTime(timestamp, '%Y')",
      'toUnixTimestamp(timestamp)',
      'timestamp - timestamp',
      'timestamp * 2',
      'event',
      "splitByChar(' ', event)",
      "(event, 'x')",
      "event = 'signed up'",
      "dateAdd('day', 1, toDate(timestamp))",
      'toHour(timestamp) + 1',
    ]) {
      const expr = parseExpr(text, 'x', { scope: 'events', aggregates: 'forbidden', catalog: CATALOG });
      expect([text, kindOf(expr)]).toEqual([text, valueKind(evaluateRow(expr, row, ctx, 'x'))]);
    }
  });
});
